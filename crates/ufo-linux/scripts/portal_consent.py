#!/usr/bin/python3
"""Answer GNOME's remote-desktop consent dialog as a person would, through pyatspi: wait for
xdg-desktop-portal-gnome's "Remote desktop" window, choose the first monitor in its list, tick
"Allow remote interaction", and press Share. Given a WINDOW text, choose instead the row of
GNOME's window chooser whose text holds it (the dialog offers windows when ufo asks for a window
source). How the GNOME portal live test grants ufo's session (docs/desktop.md, "GNOME").
Prints one JSON object: whether a dialog came, how long it took to come, and the monitors or
windows it offered; exits 0 when it answered one, 2 when none came in time, 1 when the asked
window was not offered.

Usage: /usr/bin/python3 portal_consent.py SECONDS [WINDOW]
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


def text_of(node, depth=0):
    """The node's name and its descendants' (a window row holds the title in a label)."""
    if node is None or depth > 6:
        return ""
    try:
        parts = [node.name or ""]
        for i in range(node.childCount):
            parts.append(text_of(node.getChildAtIndex(i), depth + 1))
    except Exception:  # a node that went away while read
        return ""
    return " ".join(p for p in parts if p)


def has(node, state):
    return node.getState().contains(state)


def main():
    within = float(sys.argv[1])
    window = sys.argv[2] if len(sys.argv) > 2 else None
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
    rows = [monitors.getChildAtIndex(i) for i in range(monitors.childCount)] if monitors else []
    names = [text_of(r) for r in rows]
    pick = 0
    if window is not None:
        hits = [i for i, n in enumerate(names) if window in n]
        if not hits:
            print(json.dumps({"dialog": True, "error": f"no window row holds {window!r}", "rows": names}))
            sys.exit(1)
        pick = hits[0]
    if monitors is not None:
        monitors.querySelection().selectChild(pick)
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
                "offered": names,
                "picked": names[pick] if names else None,
                "interaction_ticked": ticked_by_us,
            }
        )
    )


main()
