"""Bound a PDF's Flate streams before pdfium parses them: inflated in bounded steps, counted,
and discarded, so a stream that inflates 1,000-fold is refused before it costs anything."""

from __future__ import annotations

import re
import zlib

from treerag_core.base.config import (
    PDF_MAX_CONTENT_BYTES,
    PDF_MAX_INFLATED_BYTES,
    PDF_MAX_STREAM_BYTES,
)
from treerag_core.ingest.convert.base import over_bound

# The `stream` keyword that opens a stream's data; its dictionary is the text before it.
_STREAM = re.compile(rb"(?<![A-Za-z])stream\r?\n")
_OBJ = re.compile(rb"\bobj\b")
_DICT_LOOKBACK = 2048  # a stream dictionary is short; the lookback bounds the scan per stream
# Streams that hold no drawing operators, told by their dictionary: fonts, object and
# cross-reference streams, metadata, colour profiles, CMaps, embedded files. Any other stream
# (a page's or a form's content) is held to PDF_MAX_CONTENT_BYTES.
_NOT_CONTENT = re.compile(
    rb"/Length[123]\b|/Subtype\s*/(?:Type1C|CIDFontType0C|OpenType|XML)\b"
    rb"|/Type\s*/(?:ObjStm|XRef|Metadata|CMap|EmbeddedFile)\b|/N\s+\d"
)
_STEP = 1 << 20  # inflate at most this much at a time: memory stays bounded
_FEED = 1 << 16


def check_streams(name: str, data: bytes) -> None:
    """Refuse a PDF one of whose Flate streams inflates past PDF_MAX_STREAM_BYTES (a content
    stream: PDF_MAX_CONTENT_BYTES), or whose Flate streams together pass
    PDF_MAX_INFLATED_BYTES. Image streams are skipped: text
    extraction never decodes them. Linear in the file and the inflated bytes (capped).

    Raises:
        DocumentTooLargeError: a bound is passed; the message names it.
    """
    total = 0
    for match in _STREAM.finditer(data):
        start = max(0, match.start() - _DICT_LOOKBACK)
        head = data[start : match.start()]
        objs = list(_OBJ.finditer(head))
        if objs:
            head = head[objs[-1].end() :]
        if b"/FlateDecode" not in head and b"/Fl " not in head and b"/Fl]" not in head:
            continue
        if b"/Image" in head:
            continue
        content = _NOT_CONTENT.search(head) is None
        limit = PDF_MAX_CONTENT_BYTES if content else PDF_MAX_STREAM_BYTES
        size = _inflated_size(data, match.end(), limit)
        if size > limit:
            what = "page content stream" if content else "stream"
            raise over_bound(name, f"bytes in one inflated PDF {what}", limit)
        total += size
        if total > PDF_MAX_INFLATED_BYTES:
            raise over_bound(
                name, "in the PDF's inflated streams together", PDF_MAX_INFLATED_BYTES, "bytes"
            )


def _inflated_size(data: bytes, start: int, limit: int) -> int:
    """Bytes the zlib stream at `start` inflates to, counting stops past `limit`. A damaged
    stream counts what inflated before the damage (pdfium judges the rest)."""
    inflater = zlib.decompressobj()
    size = 0
    pos = start
    view = memoryview(data)
    try:
        while pos < len(data) and not inflater.eof and size <= limit:
            chunk = view[pos : pos + _FEED]
            pos += len(chunk)
            out = inflater.decompress(chunk, _STEP)
            size += len(out)
            while inflater.unconsumed_tail and not inflater.eof and size <= limit:
                out = inflater.decompress(inflater.unconsumed_tail, _STEP)
                if not out:  # nothing more comes out of the data given (damage)
                    break
                size += len(out)
    except zlib.error:
        pass
    return size
