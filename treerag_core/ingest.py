"""From files or uploads to SourceDocuments, reporting bad inputs instead of failing the batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from treerag_core.errors import InputDocumentError
from treerag_core.index import SourceDocument
from treerag_core.loading import collect_inputs, decode_document, read_document


@dataclass(frozen=True)
class Rejected:
    """An input that was skipped, and the user-facing reason."""

    name: str
    reason: str


def sources_from_paths(
    paths: Sequence[str | Path], max_bytes: int
) -> tuple[list[SourceDocument], list[Rejected]]:
    """Read files and folders; a bad file is reported and skipped, the others are kept."""
    sources: list[SourceDocument] = []
    rejected: list[Rejected] = []
    for path in collect_inputs([Path(p) for p in paths]):
        try:
            sources.append(SourceDocument(path.name, read_document(path, max_bytes)))
        except InputDocumentError as exc:
            rejected.append(Rejected(path.name, str(exc)))
    return sources, rejected


def sources_from_uploads(
    uploads: Sequence[tuple[str, bytes]], max_bytes: int
) -> tuple[list[SourceDocument], list[Rejected]]:
    """Decode uploaded files (name, bytes) the same way as files on disk."""
    sources: list[SourceDocument] = []
    rejected: list[Rejected] = []
    for name, data in uploads:
        try:
            sources.append(SourceDocument(name, decode_document(data, name, max_bytes)))
        except InputDocumentError as exc:
            rejected.append(Rejected(name, str(exc)))
    return sources, rejected
