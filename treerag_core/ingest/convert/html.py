"""HTML to Markdown-ish text with the standard library's parser: h1-h6 become the tree.

Page chrome (the site's navigation, banner header, footer, sidebars and forms) is left out,
and a page with a <main> (or a single <article>) is read from that element only; the
document's notes say how many lines were left out, as the PDF reader names its dropped lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

from treerag_core.base.config import HTML_MAX_UNFINISHED
from treerag_core.ingest.convert.base import (
    ConvertedDocument,
    InferredHeading,
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
# Page chrome by tag and by ARIA role, named as the notes name it. A <header> is the site's
# banner only outside <article>, <section> and <main>: inside them it is their heading group.
_CHROME_TAGS = {"nav": "navigation", "header": "header", "footer": "footer",
                "aside": "sidebar", "form": "forms"}  # fmt: skip
_CHROME_ROLES = {"navigation": "navigation", "banner": "header", "contentinfo": "footer"}
_SECTIONING = frozenset({"article", "section", "main"})
# Elements with no end tag: a role on one of them cannot open chrome that never closes.
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip

# One write: ("heading" | "paragraph", args, inside <main>, inside an <article>).
_Event = tuple[str, tuple, bool, bool]


@dataclass
class _Chrome:
    """One open chrome element: its writes wait here until it closes (then they are dropped)
    or turns out to hold the page itself (a <form> around the whole page: then they are kept)."""

    tag: str
    kind: str
    keep_headings: bool  # a banner <header>'s own headings stay (the page title may be there)
    nest: int = 1  # open elements of `tag` inside it, itself included
    events: list[_Event] = field(default_factory=list)


def _lines(event: _Event) -> int:
    what, args, _, _ = event
    if what == "heading":
        return 1 if clean_inline(args[1].replace("\n", " ")) else 0
    return sum(1 for line in args[0].split("\n") if line.strip())


def _count(lines: int) -> str:
    return f"{lines} line" if lines == 1 else f"{lines} lines"


def _text_lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


class _Converter(HTMLParser):
    def __init__(self, name: str = "") -> None:
        super().__init__(convert_charrefs=True)
        self.writer = MarkdownWriter(name)  # everything but chrome
        self.main = MarkdownWriter(name)  # only what lies in a <main>
        self.article = MarkdownWriter(name)  # only what lies in an <article>
        self.buffer: list[str] = []
        self.skip = 0
        self.heading: int | None = None
        self.pre = 0
        self.title = ""
        self.in_title = False
        self.tables: list[list[list[str]]] = []  # rows of cells, one list per open table
        self.cell: list[str] | None = None
        self.chrome: list[_Chrome] = []
        self.dropped: dict[str, int] = {}  # chrome kind -> lines left out, in page order
        self.sectioning = 0  # open <article>/<section>/<main>
        self.in_main = 0
        self.in_article = 0
        self.mains = 0
        self.articles = 0  # top-level <article>s (one inside another is its comment, say)

    # -- writes -------------------------------------------------------------------------
    def _emit(self, what: str, *args) -> None:
        event = (what, args, self.in_main > 0, self.in_article > 0)
        for frame in reversed(self.chrome):
            if not (what == "heading" and frame.keep_headings):
                frame.events.append(event)
                return
        self._write(event)

    def _write(self, event: _Event) -> None:
        what, args, in_main, in_article = event
        for writer, inside in ((self.writer, True), (self.main, in_main),
                               (self.article, in_article)):  # fmt: skip
            if inside:
                getattr(writer, what)(*args)

    def _open_chrome(self, tag: str, attrs) -> None:
        roles = next((v or "" for k, v in attrs if k == "role"), "").split()
        kind = next((_CHROME_ROLES[r] for r in roles if r in _CHROME_ROLES), None)
        if kind is None and tag in _CHROME_TAGS and (tag != "header" or not self.sectioning):
            kind = _CHROME_TAGS[tag]
        if kind is None or tag in _VOID:
            return
        self._flush()  # the text before it is content
        self.chrome.append(_Chrome(tag, kind, keep_headings=kind == "header"))

    def _close_chrome(self) -> None:
        frame = self.chrome.pop()
        lines = sum(_lines(e) for e in frame.events)
        if lines:
            self.dropped[frame.kind] = self.dropped.get(frame.kind, 0) + lines

    def _keep_chrome(self) -> None:
        """Every open chrome element holds the page itself (or never closes): keep its text."""
        while self.chrome:
            events = self.chrome.pop().events
            if self.chrome:
                self.chrome[-1].events.extend(events)
            else:
                for event in events:
                    self._write(event)

    # -- text buffers -------------------------------------------------------------------
    def _flush(self) -> None:
        raw = "".join(self.buffer)
        self.buffer = []
        if self.pre:
            self._emit("paragraph", raw.strip("\n"))
            return
        lines = [clean_inline(line) for line in raw.split("\n")]
        text = "\n".join(line for line in lines if line)
        if self.heading is not None:
            self._emit("heading", self.heading, text, (f"h{self.heading}",))
        elif text:
            self._emit("paragraph", text)

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _SKIP:
            self.skip += 1
            if tag == "head":
                self.skip -= 1  # <title> lives in <head>; other head tags carry no text
            return
        if self.chrome:
            if tag == self.chrome[-1].tag:
                self.chrome[-1].nest += 1
            if tag in ("main", "article") or (
                tag == "h1" and any(f.kind == "forms" for f in self.chrome)
            ):
                self._flush()
                self._keep_chrome()  # e.g. a <form> around the whole page
        if not self.chrome or tag != self.chrome[-1].tag:
            self._open_chrome(tag, attrs)
        if tag in _SECTIONING:
            self._flush()  # the text before it lies outside it
            self.sectioning += 1
            if tag == "main":
                self.in_main += 1
                self.mains += 1
            elif tag == "article":
                self.articles += self.in_article == 0
                self.in_article += 1
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
                self._emit("paragraph", "\n".join(lines))
        elif tag == "pre" and self.pre:
            self._flush()
            self.pre -= 1
        elif tag in _BLOCK and self.cell is None:
            self._flush()
        if tag in _SECTIONING and self.sectioning:
            self._flush()
            self.sectioning -= 1
            if tag == "main" and self.in_main:
                self.in_main -= 1
            elif tag == "article" and self.in_article:
                self.in_article -= 1
        if self.chrome and tag == self.chrome[-1].tag:
            self.chrome[-1].nest -= 1
            if not self.chrome[-1].nest:
                self._flush()  # an inline element's text (a <span role=...>) ends with it
                self._close_chrome()

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
        self._keep_chrome()  # chrome that never closes: the page is malformed, keep the text

    def result(self, name: str) -> tuple[MarkdownWriter, list[str]]:
        """The writer to use (the <main>, the single <article>, or all the page) and notes."""
        writer, where = self.writer, ""
        if self.mains and self.main.parts:
            writer, where = self.main, "the page's <main>"
        elif self.articles == 1 and self.article.parts:
            writer, where = self.article, "the page's <article>"
        notes = []
        if self.dropped:
            kinds = list(self.dropped)
            what = ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0]
            notes.append(f"left out the page's {what}: {_count(sum(self.dropped.values()))}")
        if writer is not self.writer:
            outside = _text_lines(self.writer.text()) - _text_lines(writer.text())
            if outside > 0:
                notes.append(f"read {where} only: left out {_count(outside)} outside it")
        return writer, notes


def convert_html(name: str, text: str) -> ConvertedDocument:
    """Headings h1-h6 keep their level; paragraphs, list items and table rows are blocks.

    A document whose only title is `<title>` (no h1) gets it as its level-1 heading.
    Page chrome (<nav>, the site's <header>, <footer>, <aside>, <form>, and the ARIA roles
    navigation, banner and contentinfo) is left out; a page with a <main>, or else a single
    <article>, is read from it. The notes say what was left out.

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
    writer, notes = parser.result(name)
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
            notes=tuple(notes),
        )
    return writer.result(name, "html", notes=notes)


def _shifted(heading: InferredHeading, shift: int) -> InferredHeading:
    return replace(heading, start=heading.start + shift, end=heading.end + shift)
