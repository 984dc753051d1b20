"""File converters (PDF, DOCX, HTML, text, Markdown) to the Markdown-ish text the index holds."""

from treerag_core.ingest.convert.base import ConvertedDocument, InferredHeading
from treerag_core.ingest.convert.dispatch import (
    CONVERTER_VERSION,
    DEFAULT_MAX_PAGES,
    SUPPORTED_SUFFIXES,
    UPLOAD_TYPES,
    convert_bytes,
    detect_format,
)

__all__ = [
    "CONVERTER_VERSION",
    "DEFAULT_MAX_PAGES",
    "SUPPORTED_SUFFIXES",
    "UPLOAD_TYPES",
    "ConvertedDocument",
    "InferredHeading",
    "convert_bytes",
    "detect_format",
]
