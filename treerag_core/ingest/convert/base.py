"""What a converter returns (Markdown-ish text, page map, inferred headings) and its writer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from treerag_core.base.config import CONVERT_MAX_BLOCKS, CONVERT_MAX_CHARS, CONVERT_MAX_HEADINGS
from treerag_core.base.errors import DocumentTooLargeError
from treerag_core.base.pagemap import page_of

# Body lines that the Markdown tree builder would read as structure get a backslash in front,
# so only the headings the converter chose become headings.
_MARKUP_LINE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-{2,}[ \t]*$|`{3,}|~{3,})")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u3000]+")
# The signal of a heading the converter made up (a PDF's "Cover page" over the cover's lines).
COVER_SIGNAL = "cover page"
# The signal of a section cut where the topic shifts in a text with no headings, named by its
# first line: the one mark of an inferred heading, carried to the index's nodes (`inferred`).
INFERRED = "inferred: no headings; cut where the topic shifts"


@dataclass(frozen=True)
class InferredHeading:
    """A heading the converter found: its level, text, line span in the text, and why.

    `signals` name what made the line a heading ("style Heading 2", "size 14.0 > body 10.0",
    "bold", "numbering item", "h2", "markdown"), so the tree editor can show the evidence.
    """

    level: int
    text: str
    start: int
    end: int
    page: int | None = None
    signals: tuple[str, ...] = ()

    @property
    def synthetic(self) -> bool:
        """Whether the converter made this heading up: it is no line the document printed."""
        return COVER_SIGNAL in self.signals

    @property
    def inferred(self) -> bool:
        """Whether the converter cut this section itself (no heading there): its title is
        the section's first line, and the tree, citations and notes say it was inferred."""
        return INFERRED in self.signals


@dataclass(frozen=True)
class ContentsEntry:
    """One entry of a PDF's table of contents, as read and as placed in the body.

    `page` is the 1-based PDF page the printed number points to (None: no number, or no
    offset found). `heading` is the text of the heading it was anchored to and
    `heading_page` its page; "" and None when it was not found (or the contents were not
    trusted), so a later pass (the LLM check) can look for it again.
    """

    title: str
    level: int
    printed: int | None
    page: int | None
    heading: str = ""
    heading_page: int | None = None


@dataclass(frozen=True)
class ConvertedDocument:
    """A file as the text the index holds: headings are `#` lines, offsets exact into `text`.

    `page_starts[i]` is the offset where PDF page i + 1 begins (empty for unpaged formats).
    `contents`: a PDF's table of contents entries and where each was anchored (empty when
    the PDF has no contents, or an outline gave the tree).
    """

    name: str
    text: str
    fmt: str  # pdf | docx | html | markdown | text
    page_starts: tuple[int, ...] = ()
    headings: tuple[InferredHeading, ...] = ()
    n_pages: int = 0
    notes: tuple[str, ...] = ()
    contents: tuple[ContentsEntry, ...] = ()

    def page_of(self, offset: int) -> int | None:
        return page_of(self.page_starts, offset)

    @property
    def inferred_starts(self) -> tuple[int, ...]:
        """Where each inferred heading's line starts in `text` (what the index marks)."""
        return tuple(h.start for h in self.headings if h.inferred)


def clean_inline(text: str) -> str:
    """Collapse runs of spaces (incl. no-break and ideographic ones) and trim."""
    return _SPACES.sub(" ", text).strip()


def escape_line(line: str) -> str:
    """A body line, made unable to read as a Markdown heading, setext underline or fence."""
    return "\\" + line if _MARKUP_LINE.match(line) else line


def over_bound(name: str, what: str, limit: int, unit: str = "") -> DocumentTooLargeError:
    """The one message for a conversion bound: which file, what, and the limit."""
    unit = f" {unit}" if unit else ""
    return DocumentTooLargeError(
        f"{name}: more than {limit:,}{unit} {what}; refused (a conversion limit, docs/security.md)"
    )


def check_headings(name: str, count: int) -> None:
    """Refuse a document with more headings than a tree may hold (CONVERT_MAX_HEADINGS)."""
    if count > CONVERT_MAX_HEADINGS:
        raise over_bound(name, "headings", CONVERT_MAX_HEADINGS)


@dataclass
class MarkdownWriter:
    """Appends headings and paragraphs as Markdown, recording offsets and page starts.

    It holds the bounds every converter shares: past CONVERT_MAX_CHARS of text,
    CONVERT_MAX_BLOCKS blocks or CONVERT_MAX_HEADINGS headings it raises
    DocumentTooLargeError, while the converter is still reading.
    """

    name: str = ""
    parts: list[str] = field(default_factory=list)
    length: int = 0
    page_starts: list[int] = field(default_factory=list)
    headings: list[InferredHeading] = field(default_factory=list)
    page: int | None = None

    def _block(self, block: str) -> int:
        if self.length:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(block)
        self.length += len(block)
        if self.length > CONVERT_MAX_CHARS:
            raise over_bound(self.name, "characters of text", CONVERT_MAX_CHARS)
        if len(self.parts) > 2 * CONVERT_MAX_BLOCKS:  # each block but the first adds a "\n\n"
            raise over_bound(self.name, "paragraphs, rows and headings", CONVERT_MAX_BLOCKS)
        return start

    def start_page(self) -> None:
        """The next block starts a new page (page numbers count from 1)."""
        self.page_starts.append(self.length + 2 if self.length else 0)
        self.page = len(self.page_starts)

    def heading(self, level: int, text: str, signals: tuple[str, ...] = ()) -> None:
        title = clean_inline(text.replace("\n", " "))
        if not title:
            return
        level = min(max(level, 1), 6)
        line = f"{'#' * level} {title}"
        start = self._block(line)
        self.headings.append(
            InferredHeading(level, title, start, start + len(line), self.page, signals)
        )
        check_headings(self.name, len(self.headings))

    def paragraph(self, text: str) -> None:
        lines = [escape_line(line.rstrip()) for line in text.split("\n")]
        block = "\n".join(line for line in lines if line.strip())
        if block.strip():
            self._block(block)

    def text(self) -> str:
        return "".join(self.parts) + "\n" if self.parts else ""

    def result(
        self, name: str, fmt: str, n_pages: int = 0, notes=(), contents=()
    ) -> ConvertedDocument:
        text = self.text()
        # A page that ended up empty at the very end starts past the text: clamp it.
        starts = tuple(min(s, max(len(text) - 1, 0)) for s in self.page_starts)
        return ConvertedDocument(
            name, text, fmt, starts, tuple(self.headings), n_pages, tuple(notes), tuple(contents)
        )
