"""A workspace's labelled questions: evidence marks kept in the eval-set format, re-found
by text when a document changes, exported and imported as `questions.jsonl` + `docs/`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treerag_core.base.atomic import write_atomic
from treerag_core.base.errors import EvalDataError
from treerag_core.evaluation.dataset import (
    DOCS_DIR,
    QUESTIONS_FILE,
    EvalQuestion,
    GoldEvidence,
    _optional_str_list,
    _question_rows,
    _require_str,
    _str_list,
)

if TYPE_CHECKING:
    from treerag_core.index.corpus import CorpusIndex

LABELS_DIR = "labels"  # beside the workspace's `index/` folder
MAX_LABEL_BYTES = 8 * 1024 * 1024  # an uploaded questions.jsonl
MAX_MARK_CHARS = 20_000  # a marked span longer than this is a whole section, not evidence
EXPORT_SUFFIX = ".md"  # an exported document is read by `load_dataset` as docs/*.md


class LabelsError(EvalDataError):
    """A labels file or a mark that cannot be used as it is."""


@dataclass(frozen=True)
class Mark:
    """One span of a document judged for a question: `answers` True is gold evidence,
    False is a passage the person said does not answer it (kept, never scored as gold)."""

    doc: str
    start: int
    end: int
    text: str
    answers: bool = True
    section: str | None = None
    pages: tuple[int, ...] = ()  # 1-based PDF pages the span covers (page-level gold)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.doc, self.start, self.end)


@dataclass(frozen=True)
class LabelledQuestion:
    """A question of the workspace with its marks; labelled once one mark answers it."""

    id: str
    question: str
    marks: tuple[Mark, ...] = ()
    answers: tuple[str, ...] = ()

    @property
    def evidence(self) -> tuple[Mark, ...]:
        return tuple(m for m in self.marks if m.answers)

    @property
    def labelled(self) -> bool:
        return bool(self.evidence)


@dataclass(frozen=True)
class LostMark:
    """A mark whose text is no longer in its document (edited or removed since)."""

    question_id: str
    doc: str
    text: str
    why: str


@dataclass(frozen=True)
class Refound:
    """Marks checked against the current index: moved ones re-found by text, lost ones listed."""

    questions: tuple[LabelledQuestion, ...]  # only the marks that still hold
    moved: int = 0
    lost: tuple[LostMark, ...] = ()


@dataclass(frozen=True)
class ImportResult:
    """What an imported set brought: kept questions, and every problem counted and listed."""

    questions: tuple[LabelledQuestion, ...]
    rows: int
    missing_docs: dict[str, int] = field(default_factory=dict)  # doc name -> questions naming it
    not_verbatim: tuple[tuple[str, str], ...] = ()  # (question id, evidence start)
    without_evidence: tuple[str, ...] = ()  # question ids left with no evidence found
    merged: int = 0  # kept questions that replaced a stored one (same id or text)

    def summary(self) -> str:
        parts = [f"{len(self.questions)} of {self.rows} question(s) imported"]
        if self.merged:  # else the labelled count rises by fewer than "imported" says
            new = len(self.questions) - self.merged
            parts[0] += f" ({new} new, {self.merged} merged with a label you already had)"
        if self.missing_docs:
            named = ", ".join(f"{d} ({n})" for d, n in sorted(self.missing_docs.items()))
            parts.append(f"documents not in the workspace: {named}")
        if self.not_verbatim:
            parts.append(f"{len(self.not_verbatim)} evidence span(s) not found verbatim")
        if self.without_evidence:
            parts.append(f"{len(self.without_evidence)} question(s) left with no evidence")
        return "; ".join(parts)


def _norm(question: str) -> str:
    return " ".join(question.split())


def question_id(question: str) -> str:
    """A stable id for a question's text (whitespace-normalised), so marks find it again."""
    norm = _norm(question)
    return "my-" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:10]


def labels_path(workspace_folder: Path) -> Path:
    return Path(workspace_folder) / LABELS_DIR / QUESTIONS_FILE


def _leaf_path(index: CorpusIndex, doc: str, start: int) -> str | None:
    for leaf in index.leaves(doc):
        if leaf.start <= start < leaf.end:
            return leaf.heading_path or leaf.heading
    return None


def _pages(index: CorpusIndex, doc: str, start: int, end: int) -> tuple[int, ...]:
    starts = next((d.page_starts for d in index.documents if d.doc_id == doc), ())
    if not starts:
        return ()
    first = sum(1 for s in starts if s <= start) or 1
    last = sum(1 for s in starts if s < end) or first
    return tuple(range(first, last + 1))


def make_mark(index: CorpusIndex, doc: str, start: int, end: int, answers: bool = True) -> Mark:
    """A mark on `index.texts[doc][start:end]`, with its section and PDF pages.

    Raises:
        LabelsError: an unknown document, an empty or out-of-range span, or a span too long.
    """
    text = index.texts.get(doc)
    if text is None:
        raise LabelsError(f"document {doc!r} is not in this index")
    if not 0 <= start < end <= len(text):
        raise LabelsError(f"span {start}:{end} is not inside {doc} (0:{len(text)})")
    if end - start > MAX_MARK_CHARS:
        raise LabelsError(
            f"the span has {end - start:,} characters; mark at most {MAX_MARK_CHARS:,}: "
            "the sentences that answer, not a whole section"
        )
    return Mark(
        doc, start, end, text[start:end], answers, _leaf_path(index, doc, start),
        _pages(index, doc, start, end),
    )  # fmt: skip


def mark_from_text(
    index: CorpusIndex, doc: str, span_text: str, near: int = 0, answers: bool = True
) -> Mark:
    """A mark on a span given by its text (a selection in the inspector): the occurrence
    nearest `near` (the section's start), whitespace at the ends ignored.

    Raises:
        LabelsError: the text is empty or not verbatim in the document.
    """
    wanted = span_text.strip()
    if not wanted:
        raise LabelsError("select or paste the evidence text first: the span is empty")
    start = _nearest(index.texts.get(doc, ""), wanted, near)
    if start is None:
        raise LabelsError(
            f"the text is not verbatim in {doc}: copy it from the section's text as it is"
        )
    return make_mark(index, doc, start, start + len(wanted), answers)


def _nearest(text: str, wanted: str, near: int) -> int | None:
    best, pos = None, text.find(wanted)
    while pos >= 0:
        if best is None or abs(pos - near) < abs(best - near):
            best = pos
        pos = text.find(wanted, pos + 1)
    return best


def with_mark(question: LabelledQuestion, mark: Mark) -> LabelledQuestion:
    """`question` with `mark` added; an earlier mark of the same span is replaced (a change
    of verdict), so a span is never both evidence and not."""
    kept = tuple(m for m in question.marks if m.key != mark.key)
    return replace(question, marks=(*kept, mark))


def without_mark(question: LabelledQuestion, doc: str, start: int, end: int) -> LabelledQuestion:
    return replace(question, marks=tuple(m for m in question.marks if m.key != (doc, start, end)))


def refind(index: CorpusIndex, questions: Iterable[LabelledQuestion]) -> Refound:
    """Check every mark against the index's current texts: a mark whose text moved is
    re-found by text (the occurrence nearest its old place); one whose text is gone, or whose
    document is gone, is reported lost. Nothing is ever shifted by offset alone."""
    out: list[LabelledQuestion] = []
    moved = 0
    lost: list[LostMark] = []
    for q in questions:
        kept: list[Mark] = []
        for m in q.marks:
            text = index.texts.get(m.doc)
            if text is None:
                lost.append(LostMark(q.id, m.doc, m.text, "document no longer in the workspace"))
                continue
            if text[m.start : m.end] == m.text:
                kept.append(m)
                continue
            start = _nearest(text, m.text, m.start)
            if start is None:
                lost.append(LostMark(q.id, m.doc, m.text, "text no longer in the document"))
                continue
            moved += 1
            kept.append(make_mark(index, m.doc, start, start + len(m.text), m.answers))
        out.append(replace(q, marks=tuple(kept)))
    return Refound(tuple(out), moved, tuple(lost))


def eval_questions(questions: Iterable[LabelledQuestion]) -> list[EvalQuestion]:
    """The labelled questions (marks already re-found) as eval questions: the gold spans are
    the marks' own offsets, so the README's metrics score them unchanged."""
    out = []
    for q in questions:
        gold = q.evidence
        if not gold:
            continue
        docs = tuple(dict.fromkeys(m.doc for m in gold))
        out.append(
            EvalQuestion(
                id=q.id,
                question=q.question,
                doc=docs[0],
                docs=docs,
                answers=q.answers,
                evidences=tuple(
                    GoldEvidence(m.doc, m.text, m.start, m.end, m.section) for m in gold
                ),
                n_evidence_missing=0,
                evidence_sections=tuple(dict.fromkeys(m.section for m in gold if m.section)),
            )
        )
    return out


# --- the file: one eval-set row per question ------------------------------------------------


def to_row(q: LabelledQuestion, doc_name=lambda d: d) -> dict[str, Any]:
    """The eval README's row: `evidence` verbatim, `evidence_sections` parallel to it,
    `evidence_pages` (0-based, as financebench) for PDF spans; extras the loader ignores:
    `evidence_spans` (exact offsets) and `not_evidence` (spans judged not to answer)."""
    gold = q.evidence
    docs = [doc_name(d) for d in dict.fromkeys(m.doc for m in q.marks)] or [""]
    ev_docs = [doc_name(d) for d in dict.fromkeys(m.doc for m in gold)]
    row: dict[str, Any] = {
        "id": q.id,
        "doc": ev_docs[0] if ev_docs else docs[0],
        "question": q.question,
        "answers": list(q.answers),
        "evidence": [m.text for m in gold],
        "evidence_sections": [m.section for m in gold],
    }
    if len(ev_docs) > 1:
        row["evidence_docs"] = ev_docs
    pages = sorted({p - 1 for m in gold for p in m.pages})
    if pages:
        row["evidence_pages"] = pages
    row["evidence_spans"] = [[doc_name(m.doc), m.start, m.end] for m in gold]
    negatives = [m for m in q.marks if not m.answers]
    if negatives:
        row["not_evidence"] = [[doc_name(m.doc), m.start, m.end, m.text] for m in negatives]
    return row


def rows_text(questions: Iterable[LabelledQuestion], doc_name=lambda d: d) -> str:
    return "".join(json.dumps(to_row(q, doc_name), ensure_ascii=False) + "\n" for q in questions)


@dataclass(frozen=True)
class LabelStore:
    """The labelled questions of one workspace, in `<workspace>/labels/questions.jsonl`."""

    path: Path

    @classmethod
    def for_workspace(cls, workspace_folder: Path) -> LabelStore:
        return cls(labels_path(workspace_folder))

    def load(self) -> list[LabelledQuestion]:
        """Every stored question (marks as stored: `refind` checks them against an index).

        Raises:
            LabelsError: the file is not a labels file (the message names file and line).
        """
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        if len(raw) > MAX_LABEL_BYTES:
            raise LabelsError(f"{self.path} is larger than {MAX_LABEL_BYTES // 2**20} MB")
        return [_from_stored_row(row, where) for where, row in _rows(raw, str(self.path))]

    def save(self, questions: Sequence[LabelledQuestion]) -> None:
        write_atomic(self.path, rows_text(q for q in questions if q.marks))

    def get(self, question: str) -> LabelledQuestion:
        """The stored question with this text (an imported one keeps its own id), or a new
        unlabelled one."""
        norm = _norm(question)
        for q in self.load():
            if _norm(q.question) == norm:
                return q
        return LabelledQuestion(question_id(norm), norm)

    def put(self, question: LabelledQuestion) -> None:
        """Store `question` (replacing the one with its id); one without marks is removed."""
        others = [q for q in self.load() if q.id != question.id]
        self.save([*others, question] if question.marks else others)

    def mark(self, question: str, mark: Mark) -> LabelledQuestion:
        updated = with_mark(self.get(question), mark)
        self.put(updated)
        return updated

    def unmark(self, question: str, doc: str, start: int, end: int) -> LabelledQuestion:
        updated = without_mark(self.get(question), doc, start, end)
        self.put(updated)
        return updated

    def remove(self, qid: str) -> None:
        self.save([q for q in self.load() if q.id != qid])

    def labelled_texts(self) -> set[str]:
        """The whitespace-normalised texts of the labelled questions (History marks them)."""
        return {_norm(q.question) for q in self.load() if q.labelled}

    def merge(self, imported: Iterable[LabelledQuestion]) -> int:
        """Add imported questions; one with the id or the text of a stored question
        replaces it (a question is never in the set twice). Returns how many replaced one."""
        new = list(imported)
        stored = self.load()
        ids = {q.id for q in new}
        texts = {_norm(q.question) for q in new}
        kept = [q for q in stored if q.id not in ids and _norm(q.question) not in texts]
        self.save([*kept, *new])
        old_ids, old_texts = {q.id for q in stored}, {_norm(q.question) for q in stored}
        return sum(q.id in old_ids or _norm(q.question) in old_texts for q in new)

    def merge_import(self, result: ImportResult) -> ImportResult:
        """`result`'s questions merged in (`merge`); `result` again, with how many merged."""
        return replace(result, merged=self.merge(result.questions))


def _rows(raw: bytes, where: str):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LabelsError(f"{where} is not UTF-8 text ({e})") from e
    try:
        yield from _question_rows(Path(where), lambda _p: text)
    except LabelsError:
        raise
    except EvalDataError as e:
        raise LabelsError(str(e)) from e


def _from_stored_row(row: dict[str, Any], where: str) -> LabelledQuestion:
    """A row this module wrote: `evidence_spans` hold the offsets."""
    evidence = _str_list(row, "evidence", where)
    sections = _optional_str_list(row, "evidence_sections", where)
    spans = row.get("evidence_spans") or []
    if len(spans) != len(evidence):
        raise LabelsError(f"{where}: 'evidence_spans' must be parallel to 'evidence'")
    marks = [
        _stored_mark(span, text, True, sections[i] if i < len(sections) else None, where)
        for i, (span, text) in enumerate(zip(spans, evidence, strict=True))
    ]
    for item in row.get("not_evidence") or []:
        if not isinstance(item, list) or len(item) != 4:
            raise LabelsError(f"{where}: 'not_evidence' items are [doc, start, end, text]")
        marks.append(_stored_mark(item[:3], item[3], False, None, where))
    return LabelledQuestion(
        _require_str(row, "id", where),
        _require_str(row, "question", where),
        tuple(marks),
        _str_list(row, "answers", where),
    )


def _stored_mark(span: Any, text: Any, answers: bool, section: str | None, where: str) -> Mark:
    ok = (
        isinstance(span, list)
        and len(span) == 3
        and isinstance(span[0], str)
        and all(isinstance(v, int) and v >= 0 for v in span[1:])
        and isinstance(text, str)
        and span[2] - span[1] == len(text)
    )
    if not ok:
        raise LabelsError(f"{where}: a span must be [doc, start, end], end - start its length")
    return Mark(span[0], span[1], span[2], text, answers, section)


# --- export and import -----------------------------------------------------------------------


def export_name(doc: str) -> str:
    """The file name an exported document gets: `load_dataset` reads docs/*.md."""
    return doc if doc.endswith(EXPORT_SUFFIX) else doc + EXPORT_SUFFIX


def export_set(index: CorpusIndex, questions: Sequence[LabelledQuestion], folder: Path) -> int:
    """Write `folder/questions.jsonl` and `folder/docs/` (each document named, as indexed)
    so `eval --data folder` scores the same questions; returns the questions written."""
    kept = [q for q in refind(index, questions).questions if q.labelled]
    folder = Path(folder)
    names = sorted({m.doc for q in kept for m in q.marks})
    for doc in names:
        write_atomic(folder / DOCS_DIR / export_name(doc), index.texts[doc])
    write_atomic(folder / QUESTIONS_FILE, rows_text(kept, export_name))
    return len(kept)


def import_rows(index: CorpusIndex, raw: bytes, where: str = QUESTIONS_FILE) -> ImportResult:
    """Questions of an uploaded `questions.jsonl` over this index's documents.

    A document the index lacks and an evidence not found verbatim are counted and listed
    (the eval README's rule), never guessed; a question left with no evidence is listed too.

    Raises:
        LabelsError: too large, not UTF-8, or a line that is not a question row.
    """
    if len(raw) > MAX_LABEL_BYTES:
        raise LabelsError(f"{where} is larger than {MAX_LABEL_BYTES // 2**20} MB")
    names = {d.doc_id: d.doc_id for d in index.documents}
    names.update({export_name(d): d for d in list(names)})
    kept: list[LabelledQuestion] = []
    missing: dict[str, int] = {}
    not_verbatim: list[tuple[str, str]] = []
    empty: list[str] = []
    n = 0
    for row_where, row in _rows(raw, where):
        n += 1
        qid = _require_str(row, "id", row_where)
        named = [
            _require_str(row, "doc", row_where),
            *_str_list(row, "docs", row_where),
            *_str_list(row, "evidence_docs", row_where),
        ]
        absent = [d for d in dict.fromkeys(named) if d not in names]
        for d in absent:
            missing[d] = missing.get(d, 0) + 1
        candidates = [names[d] for d in dict.fromkeys(named) if d in names]
        marks: list[Mark] = []
        for text in _str_list(row, "evidence", row_where):
            mark = _find(index, candidates, text)
            if mark is None:
                not_verbatim.append((qid, text[:60]))
            else:
                marks.append(mark)
        if not marks:
            empty.append(qid)
            continue
        kept.append(
            LabelledQuestion(
                qid,
                _require_str(row, "question", row_where),
                tuple(dict.fromkeys(marks)),
                _str_list(row, "answers", row_where),
            )
        )
    return ImportResult(tuple(kept), n, missing, tuple(not_verbatim), tuple(empty))


def _find(index: CorpusIndex, docs: Sequence[str], text: str) -> Mark | None:
    """The README's rule: the first verbatim occurrence, trying the documents in order."""
    for doc in docs:
        pos = index.texts[doc].find(text) if text else -1
        if pos >= 0:
            # No length cap here: an imported gold span is kept as its set wrote it.
            return Mark(
                doc, pos, pos + len(text), text, True, _leaf_path(index, doc, pos),
                _pages(index, doc, pos, pos + len(text)),
            )  # fmt: skip
    return None
