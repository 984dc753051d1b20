"""Pick a converter by magic bytes and file extension; enforce the size and page limits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from treerag_core.base.errors import (
    CorruptDocumentError,
    InputDocumentError,
    UnsupportedFormatError,
)
from treerag_core.ingest.convert.base import ConvertedDocument

DEFAULT_MAX_PAGES = 2000
# Bump when a converter's output changes: cached indexes of converted files are keyed by it.
CONVERTER_VERSION = "2"  # 2: outline / contents skeleton, article blocks, weak structure
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
TEXT_SUFFIXES = frozenset({".txt"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
BINARY_SUFFIXES = frozenset({".pdf", ".docx"})
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES | TEXT_SUFFIXES | HTML_SUFFIXES | BINARY_SUFFIXES
# The upload widget's `type=` list (extensions without the dot).
UPLOAD_TYPES = tuple(sorted(s.lstrip(".") for s in SUPPORTED_SUFFIXES))


def detect_format(name: str, data: bytes) -> str:
    """pdf | docx | html | markdown | text, from the content first and the extension second.

    Raises:
        UnsupportedFormatError: a legacy Office file or an extension no converter reads.
        CorruptDocumentError: the extension promises a PDF or DOCX the bytes are not.
    """
    suffix = PurePath(name).suffix.lower()
    head = data[:1024].lstrip()
    if data.startswith(b"%PDF") or head.startswith(b"%PDF"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        if b"word/" in data[:65536] or suffix == ".docx":
            return "docx"
        raise UnsupportedFormatError(f"{name}: a ZIP archive that is not a DOCX document")
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise UnsupportedFormatError(
            f"{name}: a legacy Office (.doc) or encrypted Office file; save it as an "
            "unprotected .docx"
        )
    if suffix == ".pdf":
        raise CorruptDocumentError(f"{name}: not a PDF (no %PDF header): damaged or mislabelled")
    if suffix == ".docx":
        raise CorruptDocumentError(f"{name}: not a DOCX (no ZIP header): damaged or mislabelled")
    if suffix in HTML_SUFFIXES or head[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "html"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in TEXT_SUFFIXES or not suffix:
        return "text"
    raise UnsupportedFormatError(
        f"{name}: unsupported file type {suffix!r}; use one of "
        + ", ".join(sorted(SUPPORTED_SUFFIXES))
    )


def convert_bytes(
    name: str, data: bytes, max_bytes: int, max_pages: int = DEFAULT_MAX_PAGES
) -> ConvertedDocument:
    """Convert one file's bytes to the text the index holds.

    Raises:
        InputDocumentError (or a subclass): too large, empty, unsupported, corrupt,
            encrypted, scanned (needs OCR) or over the page limit.
    """
    from treerag_core.ingest.loading import decode_document, too_large

    if len(data) > max_bytes:
        raise too_large(name, len(data), max_bytes)
    if not data.strip():
        raise InputDocumentError(f"{name}: the file is empty (or only whitespace)")
    fmt = detect_format(name, data)
    if fmt == "pdf":
        from treerag_core.ingest.convert.pdf import convert_pdf

        doc = convert_pdf(name, data, max_pages)
    elif fmt == "docx":
        from treerag_core.ingest.convert.docx import convert_docx

        doc = convert_docx(name, data)
    else:
        text = decode_document(data, name, max_bytes)
        if fmt == "html":
            from treerag_core.ingest.convert.html import convert_html

            doc = convert_html(name, text)
        elif fmt == "markdown":
            from treerag_core.ingest.convert.plain import markdown_document

            doc = markdown_document(name, text)
        else:
            from treerag_core.ingest.convert.plain import text_document

            doc = text_document(name, text)
    if not doc.text.strip():
        raise InputDocumentError(f"{name}: no text found in the {fmt.upper()} file")
    return _with_statute_notes(doc)


def _with_statute_notes(doc: ConvertedDocument) -> ConvertedDocument:
    """The review notes say when the text is a statute whose articles become leaves (the
    parser finds them), and where its article numbers repeat or skip."""
    from treerag_core.ingest.statutes import article_notes, scan_articles

    spans = [(h.start, h.end) for h in doc.headings]
    notes = article_notes(scan_articles(doc.text, spans, [h.text for h in doc.headings]))
    return replace(doc, notes=(*doc.notes, *notes)) if notes else doc
