#!/usr/bin/python3
"""Print, as JSON, the top-level nodes of one application (role name, name), read through
pyatspi: how the Wayland live tests see a dialog come and go apart from ufo.

Usage: /usr/bin/python3 pyatspi_frames.py APP_NAME
"""
import json
import sys

import pyatspi


def main():
    want = sys.argv[1]
    desktop = pyatspi.Registry.getDesktop(0)
    out = []
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is None or app.name != want:
            continue
        for j in range(app.childCount):
            top = app.getChildAtIndex(j)
            if top is not None:
                out.append([top.getRoleName(), top.name])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
