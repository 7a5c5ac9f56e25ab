#!/usr/bin/env python3
"""Checks a kevo report file for tests/store/report_test.cpp: the HTML nests its tags (no tag
left open, none closed out of order), has no bare '&', and every <svg>...</svg> in it is
well-formed XML. A file that starts with <svg is checked as one SVG document.

Prints "ok: N svg" and exits 0, or prints one line per problem and exits 1."""
import html.parser
import re
import sys
import xml.etree.ElementTree as ET

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
BARE_AMP = re.compile(r"&(?!#[0-9]+;|#x[0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)")


class Nesting(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open = []
        self.problems = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append((tag, self.getpos()))

    def handle_endtag(self, tag):
        if tag in VOID:
            self.problems.append("end tag </%s> of a void element at %s" % (tag, self.getpos()))
        elif not self.open or self.open[-1][0] != tag:
            expected = self.open[-1][0] if self.open else "nothing"
            self.problems.append("</%s> at %s closes %s" % (tag, self.getpos(), expected))
        else:
            self.open.pop()


def check(text):
    problems = []
    svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
    if text.lstrip().startswith("<svg"):
        if len(svgs) != 1:
            problems.append("expected one <svg> document, found %d" % len(svgs))
    else:
        if not text.startswith("<!DOCTYPE html>"):
            problems.append("no <!DOCTYPE html>")
        parser = Nesting()
        parser.feed(text)
        parser.close()
        problems += parser.problems
        problems += ["<%s> opened at %s is never closed" % t for t in parser.open]
        for m in BARE_AMP.finditer(text):
            problems.append("bare '&' at offset %d" % m.start())
    for i, svg in enumerate(svgs):
        try:
            ET.fromstring(svg)
        except ET.ParseError as e:
            problems.append("svg %d is not well-formed XML: %s" % (i + 1, e))
    return problems, len(svgs)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:  # strict: invalid UTF-8 fails here
        text = f.read()
    problems, n = check(text)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("ok: %d svg" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
