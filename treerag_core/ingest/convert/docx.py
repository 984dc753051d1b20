"""DOCX with python-docx: heading styles (or outline levels) first, else bold/size/numbering."""

from __future__ import annotations

import io
import re
import zipfile
from collections import Counter
from dataclasses import dataclass

from treerag_core.base.errors import CorruptDocumentError
from treerag_core.ingest.convert.base import ConvertedDocument, MarkdownWriter, clean_inline
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


def _outline_level(paragraph) -> int | None:
    """The paragraph's (or its style's) outline level 0-8, as Word's navigation pane uses."""
    for ppr in (paragraph._p.pPr, getattr(paragraph.style.element, "pPr", None)):
        if ppr is None:
            continue
        node = ppr.find(f"{_W}outlineLvl")
        if node is not None:
            value = int(node.get(f"{_W}val", "9"))
            if value < 9:
                return value
    return None


def _para_block(paragraph) -> _Block | None:
    text = clean_inline(paragraph.text.replace("\t", " "))
    if not text:
        return None
    style = paragraph.style.name if paragraph.style is not None else ""
    level = None
    if m := _HEADING_STYLE.match(style):
        level = int(m.group(1))
    elif style.lower() == "title":
        level = 0
    elif (outline := _outline_level(paragraph)) is not None:
        level = outline + 1
    runs = [r for r in paragraph.runs if r.text.strip()]
    style_font = paragraph.style.font if paragraph.style is not None else None
    bold = bool(runs) and all(
        r.bold or (r.bold is None and style_font is not None and style_font.bold) for r in runs
    )
    sizes = [r.font.size.pt for r in runs if r.font.size is not None]
    if not sizes and style_font is not None and style_font.size is not None:
        sizes = [style_font.size.pt]
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
    """
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    from lxml.etree import XMLSyntaxError

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise CorruptDocumentError(f"{name}: not a readable DOCX file ({exc})") from exc
    except (XMLSyntaxError, AttributeError, TypeError) as exc:
        # python-docx trips over damaged package parts with these (e.g. bad [Content_Types])
        raise CorruptDocumentError(f"{name}: the DOCX file is damaged ({exc})") from exc
    blocks: list[_Block] = []
    for element in document.element.body.iterchildren():
        if element.tag == f"{_W}p":
            block = _para_block(Paragraph(element, document))
        elif element.tag == f"{_W}tbl":
            block = _table_block(Table(element, document))
        else:
            continue
        if block is not None and block.text:
            blocks.append(block)

    levels, signals = _levels(blocks)
    writer = MarkdownWriter()
    for i, block in enumerate(blocks):
        if i in levels:
            writer.heading(levels[i], block.text, signals[i])
        else:
            writer.paragraph(f"- {block.text}" if block.list_item else block.text)
    return writer.result(name, "docx")


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
