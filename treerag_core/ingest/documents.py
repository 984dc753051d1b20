"""From files or uploads to SourceDocuments, reporting bad inputs instead of failing the batch."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from treerag_core.base.errors import InputDocumentError
from treerag_core.base.types import SourceDocument
from treerag_core.ingest.convert import DEFAULT_MAX_PAGES, ConvertedDocument
from treerag_core.ingest.convert.budget import convert_untrusted
from treerag_core.ingest.loading import collect_inputs, read_bytes
from treerag_core.ingest.tree_edits import EditOffer, TreeEdit, apply_edits, edits_for, offer_for

Edits = Mapping[str, Sequence[TreeEdit]]  # source sha256 -> that document's tree edits
# source sha256 -> (the file's name, its edits): what tree_edits.load_edit_entries returns
NamedEdits = Mapping[str, tuple[str, Sequence[TreeEdit]]]


@dataclass
class EditCarry:
    """Corrections of files whose bytes changed (`tree_edits.offer_for`): found while
    converting, applied by heading text when `apply` is set. `offers` pairs each file's new
    sha256 with its offer, so the caller can say so and store them under the new bytes."""

    stored: NamedEdits
    apply: bool = False
    offers: list[tuple[str, EditOffer]] = field(default_factory=list)


@dataclass(frozen=True)
class Rejected:
    """An input that was skipped, and the user-facing reason."""

    name: str
    reason: str


@dataclass(frozen=True)
class Converted:
    """One input after conversion: the document as inferred, and its source bytes' hash."""

    document: ConvertedDocument
    sha256: str  # of the file's bytes: the key its tree edits are stored under


def convert_upload(
    name: str, data: bytes, max_bytes: int, max_pages: int = DEFAULT_MAX_PAGES
) -> Converted:
    """Convert one file's bytes (raises InputDocumentError or a subclass). PDF, DOCX and HTML
    are converted in a child process with a CPU and memory budget (`convert.budget`)."""
    return Converted(convert_untrusted(name, data, max_bytes, max_pages), _sha(data))


def to_source(converted: Converted, edits: Edits | None = None) -> tuple[SourceDocument, list[str]]:
    """The SourceDocument to index, with the stored edits applied; problems are returned."""
    doc, problems = converted.document, []
    todo = edits_for(edits, converted.sha256)
    if todo:
        doc, problems = apply_edits(doc, todo)
    source = SourceDocument(doc.name, doc.text, doc.page_starts, doc.fmt, doc.inferred_starts)
    return source, [f"{doc.name}: tree edit not applied ({p})" for p in problems]


def conversion_notes(converted: Converted) -> list[str]:
    """What the converter noted of the file (sections it inferred, lines it dropped), each
    naming the file: said after an upload and by the CLI's `index`."""
    doc = converted.document
    return [f"{doc.name}: {note}" for note in doc.notes]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_inputs(
    inputs: Sequence[str | Path | tuple[str, bytes]], max_bytes: int
) -> tuple[list[tuple[str, bytes]], list[Rejected]]:
    """Uploads as given, then files and folders on disk read as uploads (name, bytes); a
    file that cannot be read is rejected."""
    uploads = [item for item in inputs if isinstance(item, tuple)]
    rejected: list[Rejected] = []
    for path in collect_inputs([Path(p) for p in inputs if not isinstance(p, tuple)]):
        try:
            uploads.append((path.name, read_bytes(path, max_bytes)))
        except InputDocumentError as exc:
            rejected.append(Rejected(path.name, str(exc)))
    return uploads, rejected


def sources_from(
    inputs: Sequence[str | Path | tuple[str, bytes]],
    max_bytes: int,
    edits: Edits | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    notes: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    carry: EditCarry | None = None,
) -> tuple[list[SourceDocument], list[Rejected]]:
    """Convert files and folders on disk, or uploaded files (name, bytes), all the same way;
    a bad file is reported and skipped, the others kept.

    `notes` (when given) collects each file's conversion notes (`conversion_notes`) and its
    tree edits that no longer apply; `progress(done, total)`
    hears of each file converted (PDF conversion can take minutes); `carry` collects (and
    may apply) the corrections of files whose bytes changed.
    """
    uploads, rejected = _read_inputs(inputs, max_bytes)
    sources: list[SourceDocument] = []
    for done, (name, data) in enumerate(uploads):
        if progress is not None:  # before each file: the first line shows before a slow PDF
            progress(done, len(uploads))
        try:
            converted = convert_upload(name, data, max_bytes, max_pages)
        except InputDocumentError as exc:
            rejected.append(Rejected(name, str(exc)))
            continue
        source, problems = to_source(converted, edits)
        if carry is not None and not edits_for(edits, converted.sha256):
            offer = offer_for(carry.stored, converted.document, converted.sha256)
            if offer is not None:
                carry.offers.append((converted.sha256, offer))
                if carry.apply and offer.applies:
                    source, _ = to_source(converted, {converted.sha256: offer.applies})
        sources.append(source)
        if notes is not None:
            notes.extend([*conversion_notes(converted), *problems])
    if progress is not None and uploads:
        progress(len(uploads), len(uploads))
    return sources, rejected
