#!/usr/bin/python3
"""Walk one window's accessibility tree with pyatspi, ITERS times, and print the times (ms) as
JSON. Used by `cargo bench -p ufo-linux --bench observe` as the baseline.

Usage: /usr/bin/python3 pyatspi_walk.py APP_NAME WINDOW_TITLE ITERS

Each walk reads, for every node, what the Rust observation reads for its controls: role, name,
description, states, child count, and screen extents where the node is a Component. The
client-side cache of libatspi is cleared before every walk, so each walk asks the application
like a fresh observation does.
"""
import json
import sys
import time

import pyatspi


def walk(node, out):
    role = node.getRole()
    name = node.name
    desc = node.description
    states = node.getState().getStates()
    try:
        comp = node.queryComponent()
        ext = comp.getExtents(pyatspi.DESKTOP_COORDS)
        ext = (ext.x, ext.y, ext.width, ext.height)
    except NotImplementedError:
        ext = None
    out.append((role, name, desc, len(states), ext))
    count = node.childCount
    if count < 0 or count > 2000:
        # a spreadsheet reports every cell of the sheet: never enumerated (as in ufo)
        return
    for i in range(count):
        child = node.getChildAtIndex(i)
        if child is not None:
            walk(child, out)


def main():
    app_name, title, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
    desktop = pyatspi.Registry.getDesktop(0)
    app = next((a for a in desktop if a is not None and a.name == app_name), None)
    if app is None:
        print(json.dumps({"error": "no application %r on the bus" % app_name}))
        return 1
    frames = [w for w in app if w is not None]
    frame = next((w for w in frames if w.name == title), None)
    if frame is None:
        # a window whose accessible name is part of its title (or the reverse); never another
        # window of the application, which would compare two different trees
        near = [w for w in frames if w.name and (w.name in title or title in w.name)]
        if len(near) != 1:
            names = [w.name for w in frames]
            print(json.dumps({"error": "no single window of %r named %r: %r" % (app_name, title, names)}))
            return 1
        frame = near[0]
    times = []
    nodes = 0
    for _ in range(iters):
        app.clear_cache()
        t = time.perf_counter()
        out = []
        walk(frame, out)
        times.append((time.perf_counter() - t) * 1000.0)
        nodes = len(out)
    print(json.dumps({"times_ms": times, "nodes": nodes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
