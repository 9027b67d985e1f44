#!/usr/bin/python3
"""Answer GNOME's remote-desktop consent dialog as a person would, through pyatspi: wait for
xdg-desktop-portal-gnome's "Remote desktop" window, choose the first monitor in its list, tick
"Allow remote interaction", and press Share. How the GNOME portal live test grants ufo's session
(docs/desktop.md, "GNOME"). Prints one JSON object: whether a dialog came, how long it took to
come, and the monitors it offered; exits 0 when it answered one, 2 when none came in time.

Usage: /usr/bin/python3 portal_consent.py SECONDS
"""
import json
import sys
import time

import pyatspi

DIALOG_APP = "xdg-desktop-portal-gnome"
DIALOG = "Remote desktop"
INTERACTION = "Allow remote interaction"


def find(node, pred, depth=0):
    if node is None or depth > 30:
        return None
    try:
        if pred(node):
            return node
        for i in range(node.childCount):
            hit = find(node.getChildAtIndex(i), pred, depth + 1)
            if hit is not None:
                return hit
    except Exception:  # a node that went away while read
        return None
    return None


def dialog():
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is not None and app.name == DIALOG_APP:
            frame = find(app, lambda n: n.getRoleName() == "frame" and n.name == DIALOG)
            if frame is not None:
                return frame
    return None


def has(node, state):
    return node.getState().contains(state)


def main():
    within = float(sys.argv[1])
    start = time.monotonic()
    frame = None
    while time.monotonic() - start < within:
        frame = dialog()
        if frame is not None:
            break
        time.sleep(0.05)
    if frame is None:
        print(json.dumps({"dialog": False}))
        sys.exit(2)
    came = time.monotonic() - start
    # the monitors' list (the other list holds the interaction switch)
    monitors = find(
        frame,
        lambda n: n.getRoleName() == "list"
        and n.childCount > 0
        and n.getChildAtIndex(0).getRoleName() == "list item"
        and n.getChildAtIndex(0).name != INTERACTION,
    )
    names = [monitors.getChildAtIndex(i).name for i in range(monitors.childCount)] if monitors else []
    if monitors is not None:
        monitors.querySelection().selectChild(0)
    switch = find(frame, lambda n: n.getRoleName() == "check box" and n.name == INTERACTION)
    ticked_by_us = False
    if switch is not None and not has(switch, pyatspi.STATE_CHECKED):
        switch.queryAction().doAction(0)
        ticked_by_us = True
    share = find(frame, lambda n: n.getRoleName() == "push button" and "Share" in n.name)
    if share is None:
        print(json.dumps({"dialog": True, "error": "no Share button"}))
        sys.exit(1)
    deadline = time.monotonic() + 5
    while not has(share, pyatspi.STATE_SENSITIVE) and time.monotonic() < deadline:
        time.sleep(0.05)
    share.queryAction().doAction(0)
    print(
        json.dumps(
            {
                "dialog": True,
                "came_ms": int(came * 1000),
                "answered_ms": int((time.monotonic() - start) * 1000),
                "monitors": names,
                "interaction_ticked": ticked_by_us,
            }
        )
    )


main()
