#!/usr/bin/python3
"""Print, as JSON, the text of every text node, label and frame name of one application, read through
pyatspi: how the live tests check an application's state apart from ufo.

Usage: /usr/bin/python3 pyatspi_texts.py APP_NAME
"""
import json
import sys

import pyatspi


def texts(node, out, depth=0):
    if node is None or depth > 60:
        return
    role = node.getRoleName()
    if role == "frame":
        # KCalc shows its result as the name of a frame
        out.append(node.name)
    elif role in ("text", "label", "entry", "editbar"):
        try:
            t = node.queryText()
            out.append(t.getText(0, -1))
        except NotImplementedError:
            out.append(node.name)
    for i in range(node.childCount):
        texts(node.getChildAtIndex(i), out, depth + 1)


def main():
    want = sys.argv[1]
    desktop = pyatspi.Registry.getDesktop(0)
    out = []
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is not None and app.name == want:
            texts(app, out)
    print(json.dumps(out))


main()
