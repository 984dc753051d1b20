"""The project's named errors; every module raises these, the edges (CLI, UI) print them."""

from __future__ import annotations

from typing import ClassVar


class TreeRAGError(Exception):
    """Base class: an expected failure with a message a user can act on."""

    # The fix, named for front ends that word it their own way (the message gives the CLI's
    # steps: a flag the explorer has no box for); None: the message is right everywhere.
    remedy: ClassVar[str | None] = None


class InputDocumentError(TreeRAGError):
    """A document cannot be read: empty, binary, undecodable, too large or missing."""


class IndexFormatError(TreeRAGError):
    """An index folder is missing, corrupt, of another schema version or another embedder."""


class MissingGraphsError(IndexFormatError):
    """An index built without leaf knowledge graphs, asked to search them (treerag-kg)."""

    remedy = "leaf-graphs"  # rebuild with graphs: --graph-min-leaf-chars on the CLI


class EmbedderError(TreeRAGError):
    """An embedder cannot be loaded or does not match the index."""


class QueryError(TreeRAGError):
    """A question that cannot be answered as asked (empty, only stop words, too long)."""


class SettingsError(TreeRAGError):
    """A setting given on the command line (or built from one) is out of its range."""


class EvalDataError(TreeRAGError):
    """An eval question set is missing, malformed, or points at a document it does not ship."""


class LLMError(TreeRAGError):
    """The language model call failed; `reason` is a short machine-readable cause."""

    def __init__(self, message: str, reason: str = "error") -> None:
        super().__init__(message)
        self.reason = reason


class UnsupportedFormatError(InputDocumentError):
    """A file type the converters do not read (or a legacy format such as .doc)."""


class CorruptDocumentError(InputDocumentError):
    """A PDF, DOCX or HTML file that cannot be parsed: truncated, damaged or mislabelled."""


class EncryptedDocumentError(InputDocumentError):
    """A password-protected document: its text cannot be read without the password."""


class NeedsOCRError(InputDocumentError):
    """A PDF without a text layer (a scan): it needs OCR before it can be indexed."""


class FileTooLargeError(InputDocumentError):
    """A document over the per-file size limit; `refusal` says so without the CLI's remedy."""

    def __init__(self, message: str, refusal: str) -> None:
        super().__init__(message)
        self.refusal = refusal  # "name: N bytes (…) is larger than the limit of M bytes (…)"


class TooManyPagesError(InputDocumentError):
    """A PDF with more pages than the configured limit."""


class DocumentTooLargeError(InputDocumentError):
    """A document that expands past a conversion bound (text, parts, pages, headings, CPU or
    memory); the message names the bound."""


class UnsafePathError(TreeRAGError):
    """A path the server refuses to read: outside the allowed folders, not a file, too large."""


class IndexBusyError(TreeRAGError):
    """Another process is writing the same index folder; retry when it has finished."""


class WorkspaceLimitError(TreeRAGError):
    """An upload would take a session's workspace over one of its limits."""


class WorkspaceUnreadableError(TreeRAGError):
    """A saved workspace could not be opened; it is kept on disk unchanged (never deleted)."""


class VectorStoreError(TreeRAGError):
    """A vector store (e.g. a Qdrant server) cannot be reached or refused a request."""


class WorkspaceDeleteError(TreeRAGError):
    """A workspace's files could not be deleted; they (and their audit rows) are kept."""
