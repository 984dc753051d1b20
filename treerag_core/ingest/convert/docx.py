"""DOCX with python-docx: heading styles (or outline levels) first, else bold/size/numbering."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from dataclasses import dataclass

from treerag_core.base.config import (
    DOCX_MAX_PARAGRAPHS,
    DOCX_MAX_PART_BYTES,
    DOCX_MAX_PARTS,
    DOCX_MAX_TOTAL_BYTES,
)
from treerag_core.base.errors import CorruptDocumentError
from treerag_core.ingest.convert.base import (
    ConvertedDocument,
    MarkdownWriter,
    clean_inline,
    over_bound,
)
from treerag_core.ingest.convert.levels import (
    Candidate,
    assign_levels,
    list_like,
    structural_numbering,
)

_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.I)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


@dataclass(frozen=True)
class _Block:
    text: str
    kind: str  # para | table
    style_level: int | None = None
    style_name: str = ""
    bold: bool = False
    size: float | None = None
    list_item: bool = False


@dataclass(frozen=True)
class _StyleFacts:
    """What a paragraph takes from its style; looked up once per style id, not per paragraph
    (python-docx finds a style by scanning every style, ~5 times a paragraph)."""

    name: str
    outline: int | None  # the style's outline level 0-8
    bold: bool
    size: float | None


def _outline_of(ppr) -> int | None:
    """The outline level 0-8 in a pPr element, as Word's navigation pane uses."""
    if ppr is None:
        return None
    node = ppr.find(f"{_W}outlineLvl")
    if node is not None:
        value = int(node.get(f"{_W}val", "9"))
        if value < 9:
            return value
    return None


def _style_facts(paragraph, cache: dict[str | None, _StyleFacts]) -> _StyleFacts:
    key = paragraph._p.style
    facts = cache.get(key)
    if facts is None:
        style = paragraph.style
        if style is None:
            facts = _StyleFacts("", None, False, None)
        else:
            font = style.font
            facts = _StyleFacts(
                style.name or "",
                _outline_of(getattr(style.element, "pPr", None)),
                bool(font.bold),
                font.size.pt if font.size is not None else None,
            )
        cache[key] = facts
    return facts


def _para_block(paragraph, styles: dict[str | None, _StyleFacts]) -> _Block | None:
    text = clean_inline(paragraph.text.replace("\t", " "))
    if not text:
        return None
    facts = _style_facts(paragraph, styles)
    style = facts.name
    level = None
    if m := _HEADING_STYLE.match(style):
        level = int(m.group(1))
    elif style.lower() == "title":
        level = 0
    elif (outline := _outline_of(paragraph._p.pPr)) is not None or (
        outline := facts.outline
    ) is not None:
        level = outline + 1
    runs = [r for r in paragraph.runs if r.text.strip()]
    bold = bool(runs) and all(r.bold or (r.bold is None and facts.bold) for r in runs)
    sizes = [r.font.size.pt for r in runs if r.font.size is not None]
    if not sizes and facts.size is not None:
        sizes = [facts.size]
    size = max(sizes) if sizes else None
    return _Block(text, "para", level, style, bold, size, style.lower().startswith("list"))


def _table_block(table) -> _Block:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            value = clean_inline(cell.text.replace("\n", " "))
            if not cells or value != cells[-1]:  # merged cells repeat their text
                cells.append(value)
        if any(cells):
            rows.append(" | ".join(cells))
    return _Block("\n".join(rows), "table")


def convert_docx(name: str, data: bytes) -> ConvertedDocument:
    """Body paragraphs and tables in order; headings from styles, else inferred.

    Raises:
        CorruptDocumentError: not a readable DOCX package.
        DocumentTooLargeError: parts past their unzipped bounds, or too many paragraphs.
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    from lxml.etree import XMLSyntaxError

    _check_package(name, data)
    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise CorruptDocumentError(f"{name}: not a readable DOCX file ({exc})") from exc
    except (XMLSyntaxError, AttributeError, TypeError) as exc:
        # python-docx trips over damaged package parts with these (e.g. bad [Content_Types])
        raise CorruptDocumentError(f"{name}: the DOCX file is damaged ({exc})") from exc
    blocks: list[_Block] = []
    styles: dict[str | None, _StyleFacts] = {}
    for count, element in enumerate(document.element.body.iterchildren(), 1):
        if count > DOCX_MAX_PARAGRAPHS:
            raise over_bound(name, "paragraphs and tables", DOCX_MAX_PARAGRAPHS)
        if element.tag == f"{_W}p":
            block = _para_block(Paragraph(element, document), styles)
        elif element.tag == f"{_W}tbl":
            block = _table_block(Table(element, document))
        else:
            continue
        if block is not None and block.text:
            blocks.append(block)

    levels, signals = _levels(blocks)
    writer = MarkdownWriter(name)
    for i, block in enumerate(blocks):
        if i in levels:
            writer.heading(levels[i], block.text, signals[i])
        else:
            writer.paragraph(f"- {block.text}" if block.list_item else block.text)
    return writer.result(name, "docx")


def _check_package(name: str, data: bytes) -> None:
    """Refuse a package whose parts unzip past their bounds, from the sizes its directory
    declares, before any part is read. The declared size is what is read: zipfile stops
    inflating a part at it (and fails its CRC check if the part is longer).

    Raises:
        CorruptDocumentError: not a ZIP archive.
        DocumentTooLargeError: too many parts, a part or all parts too large once unzipped.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            infos = package.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise CorruptDocumentError(f"{name}: not a readable DOCX file ({exc})") from exc
    if len(infos) > DOCX_MAX_PARTS:
        raise over_bound(name, "parts in the DOCX package", DOCX_MAX_PARTS)
    total = 0
    for info in infos:
        if info.file_size > DOCX_MAX_PART_BYTES:
            raise over_bound(
                name, f"bytes in the DOCX part {info.filename!r} unzipped", DOCX_MAX_PART_BYTES
            )
        total += info.file_size
    if total > DOCX_MAX_TOTAL_BYTES:
        raise over_bound(name, "bytes in the DOCX parts unzipped", DOCX_MAX_TOTAL_BYTES)


def _levels(blocks: list[_Block]) -> tuple[dict[int, int], dict[int, tuple[str, ...]]]:
    styled = {i: b.style_level for i, b in enumerate(blocks) if b.style_level is not None}
    if styled:
        shift = 1 if 0 in styled.values() else 0  # a Title above Heading 1
        return (
            {i: max(lv + shift, 1) for i, lv in styled.items()},
            {i: (f"style {blocks[i].style_name}",) for i in styled},
        )
    # No heading styles: short paragraphs that are bold, larger than the body, or numbered.
    sizes = Counter(b.size for b in blocks if b.kind == "para" and b.size is not None)
    body = sizes.most_common(1)[0][0] if sizes else None
    found: dict[int, tuple[str, ...]] = {}
    for i, b in enumerate(blocks):
        if b.kind != "para" or b.list_item or len(b.text) > 120 or b.text[-1] in ".,;:。，；：":
            continue
        why = []
        if body is not None and b.size is not None and b.size >= body * 1.15:
            why.append(f"size {b.size:g} > body {body:g}")
        if b.bold:
            why.append("bold")
        num = structural_numbering(b.text)
        if num is not None and (why or (len(b.text) <= 60 and not list_like(num))):
            why.append(f"numbering {num.label}")
        if why:
            found[i] = tuple(why)
    styles = sorted({(-(blocks[i].size or body or 0), not blocks[i].bold) for i in found})
    cands = [
        Candidate(
            blocks[i].text,
            styles.index((-(blocks[i].size or body or 0), not blocks[i].bold)),
            structural_numbering(blocks[i].text),
        )
        for i in found
    ]
    return dict(zip(found, assign_levels(cands), strict=True)), found
