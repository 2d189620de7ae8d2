"""Checks of a report page with the standard library's HTML parser."""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "source", "wbr", "area", "col", "embed"}
# SVG elements the report writes self-closed.
SELF_CLOSED = {"line", "polyline", "circle", "path", "rect"}


class PageParser(HTMLParser):
    """Collects elements (tag, attrs) and text, and checks that tags balance."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID and tag not in SELF_CLOSED:
            self.errors.append(f"<{tag}/> is not a void element")

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_page(html: str) -> PageParser:
    parser = PageParser()
    parser.feed(html)
    parser.close()
    return parser


def external_references(html: str, parser: PageParser) -> list[str]:
    """Anything that would make the browser fetch outside the page."""
    found = []
    for tag, attrs in parser.elements:
        for name in ("src", "href", "xlink:href", "data", "poster", "srcset", "action"):
            value = attrs.get(name)
            if value is not None and not value.startswith("#"):
                found.append(f"<{tag} {name}={value!r}>")
        if tag == "link":
            found.append("<link>")
    for pattern in (r"@import", r"url\(", r"https?://", r"//[a-z0-9.-]+\.[a-z]{2,}/"):
        found += [f"{pattern}: {m.group(0)}" for m in re.finditer(pattern, html)]
    return found
