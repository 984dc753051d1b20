"""Index settings (part of the index manifest) and where the app keeps its data.

Query settings live in `treerag_core.base.settings`, one class per step.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from treerag_core.base.names import EmbedderName
from treerag_core.base.settings import SETTING, SettingInfo, check_ranges, field_default, setting

N = TypeVar("N", int, float)

# The one unit of every size a user sets or reads (TREERAG_MAX_FILE_MB, TREERAG_WS_MAX_MB,
# the explorer's and the CLI's messages): decimal megabytes. Streamlit counts
# server.maxUploadSize differently by side: its uploader in Linux and macOS browsers turns it
# into bytes with 10^6, in Windows browsers and on its server with 2^20. The smaller, 10^6,
# is the one every side honours, so the explorer states the uploader's limit in this MB too
# (`ui.documents.upload.upload_limits`).
MB = 1_000_000
DEFAULT_MAX_FILE_BYTES = 20 * MB


def env_positive(name: str, default: float, unit: str = "") -> float:
    """A positive finite number from the environment variable `name`, or `default` when unset.

    Raises:
        ValueError: the variable is set but not a positive number (named, with its value).
    """
    what = f"a positive number of {unit}" if unit else "a positive number"
    return _env_number(name, default, float, lambda v: math.isfinite(v) and v > 0, what)


def env_positive_int(name: str, default: int) -> int:
    """A positive whole number from the environment variable `name` (a count: files, chunks),
    or `default` when unset; "2.5" is refused, not truncated to 2.

    Raises:
        ValueError: the variable is set but not a positive whole number (named, with its value).
    """
    return _env_number(name, default, int, lambda v: v > 0, "a positive whole number")


def _env_number(
    name: str, default: N, parse: Callable[[str], N], accept: Callable[[N], bool], what: str
) -> N:
    """The environment variable `name` read by `parse`, or `default` when unset; a value
    `parse` refuses or `accept` rejects raises ValueError naming `what` it must be."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value: N | None = parse(raw)
    except ValueError:
        value = None
    if value is None or not accept(value):
        raise ValueError(f"{name} must be {what}, but got {raw!r}")
    return value


def max_file_bytes() -> int:
    """The per-document size cap: TREERAG_MAX_FILE_MB (a positive number of MB, 10^6 bytes)
    or 20 MB.

    Raises:
        ValueError: the variable is set but not a positive number.
    """
    mb = env_positive("TREERAG_MAX_FILE_MB", DEFAULT_MAX_FILE_BYTES / MB, "MB")
    return int(mb * MB)


# Bounds on converting one document. A small file can expand (a Flate stream, a zipped part)
# or hit a slow path (a paragraph per byte), so each bound is checked while the converter
# reads, not after: past one, the file is refused with a message naming the bound, and the
# rest of a batch goes on. The measured cost of a hostile file at each bound is in
# docs/security.md ("Converting a document").
CONVERT_MAX_CHARS = 2_000_000  # text one PDF, DOCX or HTML file may yield (~800 dense pages;
# a PDF costs ~10 µs a character to read, so ~21 s at the bound)
CONVERT_MAX_BLOCKS = 100_000  # paragraphs, table rows and headings one file may yield
CONVERT_MAX_HEADINGS = 10_000  # headings (tree nodes) in one document, Markdown and text too
PDF_MAX_STREAM_BYTES = 32 * MB  # one PDF stream (a font, an object stream, ...) inflated
# One stream of drawing operators (a page's or a form's content) inflated: pdfium's text
# extraction costs ~0.6 s a MB of text operators, so this bounds a page's cost before it runs.
PDF_MAX_CONTENT_BYTES = 8 * MB
PDF_MAX_INFLATED_BYTES = 256 * MB  # all of a PDF's Flate streams but images, once inflated
PDF_MAX_PAGE_CHARS = 100_000  # characters on one PDF page (a dense page holds ~8,000)
DOCX_MAX_PART_BYTES = 32 * MB  # one part of a DOCX package (word/document.xml, ...) unzipped
DOCX_MAX_TOTAL_BYTES = 256 * MB  # all of a DOCX package's parts unzipped
DOCX_MAX_PARTS = 10_000  # entries in a DOCX package
DOCX_MAX_PARAGRAPHS = 50_000  # body paragraphs and tables (python-docx: ~0.14 ms each)
HTML_MAX_UNFINISHED = 4_096  # characters of unfinished markup (an unclosed tag) at an HTML end
# Converting an untrusted upload runs in a child process with these budgets
# (`convert.budget`): past either, the file is refused and the server is untouched.
DEFAULT_CONVERT_CPU_SECONDS = 60.0
DEFAULT_CONVERT_MEMORY_MB = 2_000.0


def convert_cpu_seconds() -> float:
    """CPU seconds one document's conversion may use: TREERAG_CONVERT_CPU_SECONDS or 60."""
    return env_positive("TREERAG_CONVERT_CPU_SECONDS", DEFAULT_CONVERT_CPU_SECONDS, "seconds")


def convert_memory_bytes() -> int:
    """Address space one document's conversion may use: TREERAG_CONVERT_MEMORY_MB or 2,000."""
    return int(env_positive("TREERAG_CONVERT_MEMORY_MB", DEFAULT_CONVERT_MEMORY_MB, "MB") * MB)


# Leaves from this many characters get a knowledge graph when graphs are wanted: the
# threshold measured in docs/graphs.md (the default is none).
GRAPH_LEAF_CHARS = 3000


@dataclass(frozen=True)
class IndexSettings:
    """How documents become trees, chunks and vectors. Part of the index manifest."""

    # Label, help and range of each setting a person sets (CLI flags, the Rebuild form) are
    # declared here once; `check_ranges` refuses a value outside them.
    max_depth: int = setting(
        3,
        label="Depth cap",
        help="heading levels that become tree nodes; deeper headings stay in their section's text",
        min=1,
        top=6,
    )
    chunk_size: int = setting(
        200,
        label="Chunk size (characters)",
        help="most characters per chunk",
        min=20,
        top=4000,
        step=50,
    )
    chunk_overlap: int = setting(
        50,
        label="Chunk overlap (characters)",
        help="characters shared by consecutive chunks",
        min=0,
        top=1000,
        step=10,
    )
    min_chunk_chars: int = 20
    embedder: str = setting(  # a names.EmbedderName or st:<folder>
        EmbedderName.MULTILINGUAL.value,
        label="Embedder",
        help="multilingual (bundled Universal Sentence Encoder, zh + en; the default), minilm "
        "(bundled all-MiniLM-L6-v2, English), e5 (bundled multilingual-e5-small, ~100 "
        "languages, trained for retrieval; slower to index), hashing (word overlap, no model: "
        "fast, for tests), or st:FOLDER (a local sentence-transformers model)",
    )
    max_file_bytes: int = field(  # TREERAG_MAX_FILE_MB
        default_factory=max_file_bytes,
        metadata={SETTING: SettingInfo("Largest file (bytes)", "files larger are refused", min=1)},
    )
    max_pages: int = setting(
        2000, label="Most PDF pages", help="skip PDFs with more pages than this", min=1
    )
    summary_chars: int = 160
    llm_summaries: bool = False
    # Leaves at least this long get a leaf-local knowledge graph (0: no graphs). Off by
    # default: on both dev sets the graphs did not improve retrieval, and they cost 1.45x the
    # build time and 2.25x the index size (docs/graphs.md). GRAPH_LEAF_CHARS is the measured
    # setting when graphs are wanted.
    graph_min_leaf_chars: int = setting(
        0,
        label="Knowledge graphs for leaves from … characters",
        help="leaves at least this long get a knowledge graph (treerag-kg needs them; 0: none)",
        min=0,
        top=1_000_000,
        step=500,
    )
    llm_graphs: bool = False  # extract graph entities and relations with the LLM (needs a key)
    # A statute's 第X条 articles as the leaves under their chapter (issue 24). Off by default:
    # on the dev laws in corpus scope treerag loses 1.0 point of Recall@2000c against chapter
    # leaves (docs/evaluation.md), past the 0.5 a default may lose.
    article_leaves: bool = setting(
        False,
        label="Statute articles as leaves",
        help="a statute's 第X条 articles become the leaves under their chapter (off by "
        "default: docs/evaluation.md)",
    )

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap must be below chunk_size ({self.chunk_size}), but got "
                f"{self.chunk_overlap}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def changed(self, skip: Collection[str] = ()) -> list[str]:
        """Each setting a person sets (one with a SettingInfo) that is not at its default,
        outside `skip`, named by its declared label: a switch that is on by the label alone
        ("Statute articles as leaves"), a label with "…" by the value in its place
        ("Knowledge graphs for leaves from 3000 characters"), any other as "label: value"."""
        named = []
        for f in fields(self):
            info = f.metadata.get(SETTING)
            value = getattr(self, f.name)
            if info is None or f.name in skip or value == field_default(type(self), f.name):
                continue
            if isinstance(value, bool):
                named.append(info.label if value else f"{info.label}: off")
            elif "…" in info.label:
                named.append(info.label.replace("…", f"{value}"))
            else:
                named.append(f"{info.label}: {value}")
        return named

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def data_dir() -> str:
    """Where the app keeps indexes and the audit log (TREERAG_DATA_DIR, default ./data)."""
    return os.environ.get("TREERAG_DATA_DIR", "data")


def eval_roots() -> tuple[Path, ...]:
    """Folders holding eval sets the app may read (TREERAG_EVAL_DIRS, os.pathsep-separated).

    Default: `shared/eval` beside the repository, where the dev sets live.
    """
    listed = os.environ.get("TREERAG_EVAL_DIRS", "").split(os.pathsep)
    if roots := tuple(Path(p) for p in listed if p.strip()):
        return roots
    return (Path(__file__).resolve().parents[3] / "shared" / "eval",)
