"""Parses an open sweep's junit.xml and report.html with Python's own parsers and prints what
the tests judge, as JSON (open_sweep_test.cpp, OpenSweep.TheReportsOfAnOpenSweep...).

junit.xml: xml.etree.ElementTree (a real XML parser: a malformed file raises). Printed: the
<testsuites> counts and every testcase as {name: {"status": pass|failure|skipped, "message"}}.
report.html: html.parser with a strict tag balance (every non-void element closed in order),
the header cells of the cases table and each case row's cells.
"""
import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"}


def junit(path):
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        raise SystemExit("junit root is " + root.tag)
    cases = {}
    for suite in root.findall("testsuite"):
        for case in suite.findall("testcase"):
            status, message = "pass", ""
            for kind in ("failure", "skipped"):
                el = case.find(kind)
                if el is not None:
                    status, message = kind, el.get("message", "")
            if case.get("name") in cases:
                raise SystemExit("testcase twice: " + case.get("name"))
            cases[case.get("name")] = {"status": status, "message": message}
    counts = {k: int(root.get(k, "0")) for k in ("tests", "failures", "skipped")}
    return {"counts": counts, "cases": cases}


class Html(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []
        self.header, self.rows = [], {}
        self.row, self.cell, self.in_th = None, None, False

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)
        a = dict(attrs)
        if tag == "tr":
            self.row = {"id": a.get("id"), "cells": []}
        elif tag in ("td", "th"):
            self.cell, self.in_th = "", tag == "th"

    def handle_startendtag(self, tag, attrs):
        pass  # <rect .../> in the SVG: self-closed, nothing to balance

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> closes <%s>" % (tag, self.stack[-1] if self.stack else ""))
        else:
            self.stack.pop()
        if tag in ("td", "th") and self.row is not None:
            self.row["cells"].append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.in_th and not self.header:
                self.header = self.row["cells"]
            elif self.row["id"]:
                self.rows[self.row["cells"][0]] = self.row["cells"]
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def html(path):
    p = Html()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    if p.stack:
        p.errors.append("unclosed: " + " ".join(p.stack))
    return {"errors": p.errors, "header": p.header, "rows": p.rows}


if __name__ == "__main__":
    print(json.dumps({"junit": junit(sys.argv[1]), "html": html(sys.argv[2])}))
