"""HTML to Markdown-ish text with the standard library's parser: h1-h6 become the tree."""

from __future__ import annotations

from html.parser import HTMLParser

from treerag_core.base.config import HTML_MAX_UNFINISHED
from treerag_core.ingest.convert.base import (
    ConvertedDocument,
    MarkdownWriter,
    clean_inline,
    over_bound,
)

_SKIP = frozenset({"script", "style", "noscript", "template", "head", "svg", "math"})
_BLOCK = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "ul", "ol",
     "li", "dl", "dt", "dd", "blockquote", "figure", "figcaption", "form", "hr", "address",
     "body", "details", "summary", "caption"}
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _Converter(HTMLParser):
    def __init__(self, name: str = "") -> None:
        super().__init__(convert_charrefs=True)
        self.writer = MarkdownWriter(name)
        self.buffer: list[str] = []
        self.skip = 0
        self.heading: int | None = None
        self.pre = 0
        self.title = ""
        self.in_title = False
        self.tables: list[list[list[str]]] = []  # rows of cells, one list per open table
        self.cell: list[str] | None = None

    # -- text buffers -------------------------------------------------------------------
    def _flush(self) -> None:
        raw = "".join(self.buffer)
        self.buffer = []
        if self.pre:
            self.writer.paragraph(raw.strip("\n"))
            return
        lines = [clean_inline(line) for line in raw.split("\n")]
        text = "\n".join(line for line in lines if line)
        if self.heading is not None:
            self.writer.heading(self.heading, text, (f"h{self.heading}",))
        elif text:
            self.writer.paragraph(text)

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _SKIP:
            self.skip += 1
            if tag == "head":
                self.skip -= 1  # <title> lives in <head>; other head tags carry no text
            return
        if tag == "title":
            self.in_title = True
        elif tag in _HEADINGS:
            self._flush()
            self.heading = _HEADINGS[tag]
        elif tag == "table":
            self._flush()
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables and len(self.tables) == 1:
            self.cell = []
        elif tag == "br":
            (self.cell if self.cell is not None else self.buffer).append("\n")
        elif tag == "pre":
            self._flush()
            self.pre += 1
        elif tag in _BLOCK and self.cell is None:
            self._flush()
            if tag == "li":
                self.buffer.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and tag != "head":
            self.skip = max(0, self.skip - 1)
            return
        if tag == "title":
            self.in_title = False
        elif tag in _HEADINGS and self.heading is not None:
            self._flush()
            self.heading = None
        elif tag in ("td", "th") and self.cell is not None and len(self.tables) == 1:
            rows = self.tables[-1]
            if not rows:  # a cell outside any <tr>
                rows.append([])
            rows[-1].append(clean_inline(" ".join("".join(self.cell).split("\n"))))
            self.cell = None
        elif tag == "table" and self.tables:
            rows = self.tables.pop()
            if not self.tables:
                lines = [" | ".join(c for c in row) for row in rows if any(row)]
                self.writer.paragraph("\n".join(lines))
        elif tag == "pre" and self.pre:
            self._flush()
            self.pre -= 1
        elif tag in _BLOCK and self.cell is None:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        elif self.skip:
            return
        elif self.cell is not None:
            self.cell.append(data)
        elif self.tables:
            return  # text between cells (whitespace) or inside a nested table's markup
        else:
            self.buffer.append(data if self.pre else data.replace("\r", ""))

    def close(self) -> None:
        super().close()
        self._flush()


def convert_html(name: str, text: str) -> ConvertedDocument:
    """Headings h1-h6 keep their level; paragraphs, list items and table rows are blocks.

    A document whose only title is `<title>` (no h1) gets it as its level-1 heading.

    Raises:
        DocumentTooLargeError: the text ends in more than HTML_MAX_UNFINISHED characters of
            unfinished markup, or passes a bound of the writer (text, blocks, headings).
    """
    parser = _Converter(name)
    parser.feed(text)
    # One feed of the whole text is linear: the parser stops at the first construct that
    # does not end (a tag with no `>`) and keeps the rest. close() then rescans that rest
    # from every `<` in it to its end: quadratic (`<p ` x 40,000: 284 s; CVE-2025-6069).
    # Only a short unfinished rest is let through to it. Inside <script>/<style> the rest is
    # kept as text in one step, so an unclosed script is not affected.
    if parser.cdata_elem is None and len(parser.rawdata) > HTML_MAX_UNFINISHED:
        raise over_bound(
            name,
            "characters of unfinished markup (a tag or comment that never ends) at the end "
            "of the HTML",
            HTML_MAX_UNFINISHED,
        )
    parser.close()
    writer = parser.writer
    title = clean_inline(parser.title)
    if title and not any(h.level == 1 for h in writer.headings):
        head = MarkdownWriter()
        head.heading(1, title, ("<title>",))
        shift = head.length + 2
        body = writer.result(name, "html")
        return ConvertedDocument(
            name,
            head.text() + "\n" + body.text if body.text else head.text(),
            "html",
            (),
            (head.headings[0], *(_shifted(h, shift) for h in body.headings)),
        )
    return writer.result(name, "html")


def _shifted(heading, shift: int):
    from dataclasses import replace

    return replace(heading, start=heading.start + shift, end=heading.end + shift)
