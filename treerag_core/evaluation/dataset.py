"""Load an eval question set and locate each gold evidence's first verbatim span in its doc."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from treerag_core.base.errors import (  # EvalDataError: importable here too
    EvalDataError,
    UnsafePathError,
)
from treerag_core.base.safepaths import read_bytes_checked, resolve_inside

UNANSWERABLE = "unanswerable"
NO_EVIDENCE = "no evidence found verbatim"
QUESTIONS_FILE = "questions.jsonl"
DOCS_DIR = "docs"
PDFS_DIR = "pdfs"  # a PDF set (financebench_pdf): page-level gold in `evidence_pages`
NO_PAGES = "no evidence pages"
MAX_FILE_BYTES = 64 * 1024 * 1024  # per questions file or document

DocReader = Callable[[str, str], str]  # (doc name, where to blame) -> its text


@dataclass(frozen=True)
class GoldEvidence:
    """One gold evidence located verbatim: `doc_text[start:end] == text`."""

    doc: str
    text: str
    start: int
    end: int
    section: str | None = None


@dataclass(frozen=True)
class GoldPage:
    """A gold evidence that is a whole PDF page (1-based), per the README's page-level gold."""

    doc: str
    page: int


@dataclass(frozen=True)
class EvalQuestion:
    """One eval question with its located evidence; `left_out_reason` is set when unusable."""

    id: str
    question: str
    doc: str
    docs: tuple[str, ...]
    answers: tuple[str, ...]
    evidences: tuple[GoldEvidence, ...]
    n_evidence_missing: int
    evidence_sections: tuple[str, ...]
    unanswerable: bool = False
    qtype: str | None = None
    left_out_reason: str | None = None
    gold_pages: tuple[GoldPage, ...] = ()  # PDF sets: evidence pages instead of spans

    @property
    def usable(self) -> bool:
        """True when the question counts in the metric means."""
        return self.left_out_reason is None


@dataclass(frozen=True)
class EvalDataset:
    """A question set over a folder of documents, with the left-out questions counted."""

    name: str
    docs_dir: Path
    doc_names: tuple[str, ...]
    questions: tuple[EvalQuestion, ...]
    left_out: dict[str, int]
    paged: bool = False  # documents are PDFs in pdfs/, gold is pages
    roots: tuple[Path, ...] | None = None  # where its files may lie (None: its own folder)
    max_bytes: int = MAX_FILE_BYTES  # per document

    def doc_bytes(self, name: str) -> bytes:
        """One document's bytes, read the way `load_dataset` reads: it must resolve inside
        `roots` (None: the set's own folder) and be a regular file of at most `max_bytes`.

        Raises:
            EvalDataError: naming the document and why (outside, not a file, too large).
        """
        roots = self.roots if self.roots is not None else (self.docs_dir.parent,)
        try:
            return read_bytes_checked(resolve_inside(self.docs_dir / name, roots), self.max_bytes)
        except UnsafePathError as exc:
            raise EvalDataError(f"eval set {self.name}: cannot read {name}: {exc}") from exc

    @property
    def usable_questions(self) -> tuple[EvalQuestion, ...]:
        return tuple(q for q in self.questions if q.usable)

    @property
    def n_evidence_found(self) -> int:
        return sum(len(q.evidences) for q in self.questions)

    @property
    def n_evidence_missing(self) -> int:
        return sum(q.n_evidence_missing for q in self.questions)


def load_dataset(
    folder: Path, roots: Sequence[str | Path] | None = None, max_bytes: int = MAX_FILE_BYTES
) -> EvalDataset:
    """Read `folder/questions.jsonl` and `folder/docs/*.md` and locate every gold evidence.

    With `roots` (the explorer passes `safepaths.allowed_roots()` for a typed folder), the
    folder and every file read must resolve inside them. Every file must be a regular file of
    at most `max_bytes` (no device or FIFO is ever opened).

    Raises:
        EvalDataError: the folder, its questions file or a referenced document is missing, or a
            line is not a JSON object with the expected fields (the message names file and line).
        UnsafePathError: a path outside `roots`, not a regular file, or too large.
    """
    folder = Path(folder)
    if roots is not None:
        resolve_inside(folder, roots)
    # Kept on the set, so its later reads (dataset_sources, the cache key) obey the same rule.
    kept: dict[str, Any] = {
        "roots": tuple(Path(r) for r in roots) if roots is not None else None,
        "max_bytes": max_bytes,
    }

    def read(path: Path) -> str:
        checked = resolve_inside(path, roots) if roots is not None else path
        try:
            return read_bytes_checked(checked, max_bytes).decode("utf-8")
        except UnicodeDecodeError as e:
            raise EvalDataError(f"{path} is not UTF-8 text ({e})") from e

    questions_path = folder / QUESTIONS_FILE
    docs_dir = folder / DOCS_DIR
    # Only a missing file is "no questions"; a FIFO or folder in its place is refused by the
    # checked read below with its own message ("is a FIFO ..., not a regular file").
    if not questions_path.exists():
        raise EvalDataError(f"No {QUESTIONS_FILE} in {folder}: is this an eval dataset folder?")
    if not docs_dir.is_dir() and (folder / PDFS_DIR).is_dir():
        return replace(_load_pdf_dataset(folder, questions_path, folder / PDFS_DIR, read), **kept)
    if not docs_dir.is_dir():
        raise EvalDataError(f"No {DOCS_DIR}/ folder in {folder}: the questions need their docs.")
    doc_names = tuple(sorted(p.name for p in docs_dir.glob("*.md") if p.is_file()))
    texts: dict[str, str] = {}

    def doc_text(name: str, where: str) -> str:
        if name not in texts:
            path = docs_dir / name
            if not path.is_file():
                raise EvalDataError(f"{where}: document {name!r} is not in {docs_dir}")
            texts[name] = read(path)
        return texts[name]

    questions = [
        _parse_question(row, where, doc_text) for where, row in _question_rows(questions_path, read)
    ]

    left_out: dict[str, int] = {UNANSWERABLE: 0, NO_EVIDENCE: 0}
    for q in questions:
        if q.left_out_reason is not None:
            left_out[q.left_out_reason] += 1
    return EvalDataset(folder.name, docs_dir, doc_names, tuple(questions), left_out, **kept)


def _load_pdf_dataset(
    folder: Path, questions_path: Path, pdfs_dir: Path, read: Callable[[Path], str]
) -> EvalDataset:
    """A PDF set: each question's `evidence_pages` (0-based in the file) become GoldPages."""
    doc_names = tuple(sorted(p.name for p in pdfs_dir.glob("*.pdf") if p.is_file()))
    questions: list[EvalQuestion] = []
    left_out = {UNANSWERABLE: 0, NO_PAGES: 0}
    for where, row in _question_rows(questions_path, read):
        doc = _require_str(row, "doc", where)
        if doc not in doc_names:
            raise EvalDataError(f"{where}: document {doc!r} is not in {pdfs_dir}")
        pages = row.get("evidence_pages") or []
        if not isinstance(pages, list) or not all(isinstance(p, int) and p >= 0 for p in pages):
            raise EvalDataError(f"{where}: 'evidence_pages' must be a list of page numbers >= 0")
        gold = tuple(GoldPage(doc, p + 1) for p in dict.fromkeys(pages))
        unanswerable = bool(row.get("unanswerable", False))
        reason = UNANSWERABLE if unanswerable else (None if gold else NO_PAGES)
        if reason is not None:
            left_out[reason] += 1
        questions.append(
            EvalQuestion(
                id=_require_str(row, "id", where),
                question=_require_str(row, "question", where),
                doc=doc,
                docs=(doc,),
                answers=_str_list(row, "answers", where),
                evidences=(),
                n_evidence_missing=0,
                evidence_sections=(),
                unanswerable=unanswerable,
                qtype=row.get("question_type"),
                left_out_reason=reason,
                gold_pages=gold,
            )
        )
    return EvalDataset(folder.name, pdfs_dir, doc_names, tuple(questions), left_out, paged=True)


def _question_rows(
    questions_path: Path, read: Callable[[Path], str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) per non-blank line: a JSON object with a string id no earlier line used.

    Both set layouts (docs/ and pdfs/) read their questions here, so a duplicate id (which
    the per-question analysis would merge into one row) is refused in either.
    """
    seen_ids: dict[str, int] = {}
    # split("\n"), not splitlines(): U+2028 and friends may sit raw inside JSON strings.
    for line_no, line in enumerate(read(questions_path).split("\n"), start=1):
        if not line.strip():
            continue  # a trailing blank line is not a question
        where = f"{questions_path}, line {line_no}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise EvalDataError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
        except RecursionError as e:
            raise EvalDataError(f"{where}: not valid JSON (nested too deeply to read)") from e
        if not isinstance(row, dict):
            raise EvalDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
        qid = _require_str(row, "id", where)
        if qid in seen_ids:
            raise EvalDataError(
                f"{where}: question id {qid!r} already used on line {seen_ids[qid]}"
            )
        seen_ids[qid] = line_no
        yield where, row


def dataset_sources(
    dataset: EvalDataset, progress: Callable[[int, int], None] | None = None
) -> list:
    """The set's documents as SourceDocuments (PDFs converted, with their page map); every
    file is read by `EvalDataset.doc_bytes` (inside the set's roots, size-capped).
    `progress(done, total)` hears of each PDF converted (a PDF set takes minutes).

    Raises:
        EvalDataError: a document is outside the roots, too large, not UTF-8 or not readable.
    """
    from treerag_core.index.corpus import SourceDocument
    from treerag_core.ingest.documents import sources_from

    if not dataset.paged:
        sources = []
        for name in dataset.doc_names:
            try:
                text = dataset.doc_bytes(name).decode("utf-8")
            except UnicodeDecodeError as e:
                raise EvalDataError(f"{dataset.docs_dir / name} is not UTF-8 text ({e})") from e
            sources.append(SourceDocument(name, text))
        return sources
    uploads = [(name, dataset.doc_bytes(name)) for name in dataset.doc_names]
    sources, rejected = sources_from(uploads, dataset.max_bytes, progress=progress)
    if rejected:
        raise EvalDataError("; ".join(r.reason for r in rejected))
    return sources


def _parse_question(row: Any, where: str, doc_text: DocReader) -> EvalQuestion:
    if not isinstance(row, dict):
        raise EvalDataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    qid = _require_str(row, "id", where)
    text = _require_str(row, "question", where)
    doc = _require_str(row, "doc", where)
    docs = _str_list(row, "docs", where)
    answers = _str_list(row, "answers", where)
    evidence = _str_list(row, "evidence", where)
    evidence_docs = _str_list(row, "evidence_docs", where)
    sections = _optional_str_list(row, "evidence_sections", where)
    unanswerable = bool(row.get("unanswerable", False))
    qtype = row.get("type")
    if qtype is not None and not isinstance(qtype, str):
        raise EvalDataError(f"{where}: field 'type' must be a string, got {qtype!r}")

    # README: try evidence_docs in order; `doc` and `docs` are the fallback for older rows.
    candidates = tuple(dict.fromkeys((*evidence_docs, doc, *docs)))
    parallel = len(sections) == len(evidence)
    found: list[GoldEvidence] = []
    missing = 0
    for i, ev in enumerate(evidence):
        section = sections[i] if parallel and sections[i] and sections[i].strip() else None
        span = _locate(ev, candidates, where, doc_text)
        if span is None:
            missing += 1
        else:
            found.append(GoldEvidence(span[0], ev, span[1], span[1] + len(ev), section))

    if unanswerable:
        reason: str | None = UNANSWERABLE
    elif not found:
        reason = NO_EVIDENCE
    else:
        reason = None
    gold_paths = tuple(dict.fromkeys(s for s in sections if s and s.strip()))
    return EvalQuestion(
        id=qid,
        question=text,
        doc=doc,
        docs=tuple(dict.fromkeys((doc, *docs, *evidence_docs))),
        answers=answers,
        evidences=tuple(found),
        n_evidence_missing=missing,
        evidence_sections=gold_paths,
        unanswerable=unanswerable,
        qtype=qtype,
        left_out_reason=reason,
    )


def _locate(
    evidence: str, candidates: tuple[str, ...], where: str, doc_text: DocReader
) -> tuple[str, int] | None:
    if not evidence:
        return None  # an empty string "occurs" everywhere; it cannot be gold
    for name in candidates:
        pos = doc_text(name, where).find(evidence)
        if pos >= 0:
            return name, pos
    return None


def _require_str(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise EvalDataError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
    return value


def _str_list(row: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalDataError(f"{where}: field {key!r} must be a list of strings, got {value!r}")
    return tuple(value)


def _optional_str_list(row: dict[str, Any], key: str, where: str) -> tuple[str | None, ...]:
    # evidence_sections holds null where a quote's section is unknown (gitlab_handbook).
    value = row.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        raise EvalDataError(
            f"{where}: field {key!r} must be a list of strings or nulls, got {value!r}"
        )
    return tuple(value)
