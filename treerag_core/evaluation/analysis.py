"""Reading eval reports: shape checks, per-question rows, filters and the coverage of leaves."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from treerag_core.base.artifacts import parse_json
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import EvalDataError
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.dataset import EvalQuestion
from treerag_core.evaluation.harness import oracle_leaves
from treerag_core.index.corpus import CorpusIndex
from treerag_core.strategies import option_types
from treerag_core.strategies.flat.strategy import FlatHybrid
from treerag_core.strategies.treerag.strategy import TreeRAG

TREE, BASELINE = TreeRAG.name, FlatHybrid.name  # "won/lost by treerag" compares these two
HIT_KEY = "hit@5"
FILTERS = ("all", "missed by all", "won by treerag", "lost by treerag")
NEVER_PICKED = "⚠ holds gold, never picked"


def check_report(report: Any, where: str) -> dict[str, Any]:
    """`report` if it has the shape `evaluate` writes, else EvalDataError naming `where`."""
    ok = (
        isinstance(report, dict)
        and isinstance(report.get("strategies"), dict)
        and all(isinstance(m, dict) for m in report["strategies"].values())
        and isinstance(report.get("questions", {}), dict)
        and all(isinstance(v, list) for v in report.get("questions", {}).values())
    )
    if not ok:
        raise EvalDataError(
            f"{where} is not an eval report (it needs a 'strategies' table and per-question "
            "records, as written by the Run button or `python -m treerag_core eval --out`)"
        )
    return report


def parse_report(data: bytes, name: str) -> dict[str, Any]:
    """An uploaded report file; EvalDataError when it is not a report."""
    try:
        report = parse_json(data.decode("utf-8"))
    except ValueError as exc:  # not JSON, not UTF-8, or nested too deeply
        raise EvalDataError(f"{name} is not valid UTF-8 JSON ({exc})") from exc
    return check_report(report, name)


def number(value: Any) -> float:
    """A metric value as a float; NaN for a missing or non-numeric one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


@dataclass(frozen=True)
class QuestionRow:
    """One question across the report's strategies."""

    id: str
    question: str
    doc: str
    gold_sections: tuple[str, ...]
    outcomes: Mapping[str, str]  # strategy -> outcome
    hits: Mapping[str, bool]  # strategy -> hit@5
    picked: tuple[str, ...]  # sections the section-picking strategy chose (treerag first)


def question_rows(report: Mapping[str, Any]) -> list[QuestionRow]:
    """Merge the per-strategy records by question id, in the report's order."""
    merged: dict[str, dict[str, Any]] = {}
    records = report.get("questions") or {}
    order = [TREE, *(s for s in records if s != TREE)]  # treerag's picks win
    for strategy in order:
        for rec in records.get(strategy, []):
            qid = str(rec.get("id"))
            entry = merged.setdefault(qid, {"rec": rec, "outcomes": {}, "hits": {}, "picked": None})
            entry["outcomes"][strategy] = str(rec.get("outcome", ""))
            hit = number((rec.get("metrics") or {}).get(HIT_KEY))
            entry["hits"][strategy] = hit >= 1.0
            if entry["picked"] is None and rec.get("picked"):
                entry["picked"] = tuple(str(p.get("path", "")) for p in rec.get("picked") or [])
    first_seen = [str(r.get("id")) for recs in records.values() for r in recs]
    rows = []
    for qid in dict.fromkeys(first_seen):
        entry = merged[qid]
        rec = entry["rec"]
        rows.append(
            QuestionRow(
                id=qid,
                question=str(rec.get("question", "")),
                doc=str(rec.get("doc", "")),
                gold_sections=tuple(str(s) for s in rec.get("gold_sections") or []),
                outcomes={s: entry["outcomes"][s] for s in records if s in entry["outcomes"]},
                hits={s: entry["hits"][s] for s in records if s in entry["hits"]},
                picked=entry["picked"] or (),
            )
        )
    return rows


def filter_rows(rows: Sequence[QuestionRow], name: str) -> list[QuestionRow]:
    """The rows a filter keeps (wins and losses compare treerag with flat-hybrid at hit@5).

    Raises:
        ValueError: an unknown filter name.
    """
    if name == "all":
        return list(rows)
    if name == "missed by all":
        return [r for r in rows if r.hits and not any(r.hits.values())]
    if name in ("won by treerag", "lost by treerag"):
        both = [r for r in rows if TREE in r.hits and BASELINE in r.hits]
        if name == "won by treerag":
            return [r for r in both if r.hits[TREE] and not r.hits[BASELINE]]
        return [r for r in both if r.hits[BASELINE] and not r.hits[TREE]]
    raise ValueError(f"unknown filter {name!r}; choose one of {', '.join(FILTERS)}")


@dataclass(frozen=True)
class LeafCoverage:
    """One leaf of a document: how often treerag picked it and how often it held gold."""

    node: str
    section: str
    picked: int
    gold: int
    picked_with_gold: int
    pick_rate: float

    @property
    def flag(self) -> str:
        return NEVER_PICKED if self.gold and not self.picked else ""


@dataclass(frozen=True)
class Coverage:
    """Per leaf of one document, over the report's questions about it."""

    doc: str
    n_questions: int
    leaves: tuple[LeafCoverage, ...]
    stale_picks: int = 0  # picked ids that no longer name the same section in this index


def coverage_docs(
    questions: Mapping[str, EvalQuestion], report: Mapping[str, Any]
) -> list[tuple[str, int]]:
    """(document, questions of the report about it), most questions first."""
    ids = {str(r.get("id")) for recs in (report.get("questions") or {}).values() for r in recs}
    counts = Counter(d for qid in ids if qid in questions for d in questions[qid].docs)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def coverage(
    index: CorpusIndex,
    questions: Mapping[str, EvalQuestion],
    records: Sequence[Mapping[str, Any]],
    doc: str,
) -> Coverage:
    """Pick and gold counts for every leaf of `doc`, over the report's questions about it.

    Gold leaves are the `oracle_leaves` of each question (the leaves whose span holds a gold
    evidence); a pick counts only when its id still names the same section in `index`.
    """
    picked: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    both: Counter[str] = Counter()
    n = stale = 0
    for rec in records:
        question = questions.get(str(rec.get("id")))
        if question is None or doc not in question.docs:
            continue
        n += 1
        ids = set()
        for pick in rec.get("picked") or []:
            node = index.nodes.get(str(pick.get("node_id")))
            if node is None or node.heading_path != pick.get("path"):
                stale += 1
            elif node.doc_id == doc:
                ids.add(node.node_id)
        golds = {i for i in oracle_leaves(index, question) if index.nodes[i].doc_id == doc}
        picked.update(ids)
        gold.update(golds)
        both.update(ids & golds)
    leaves = tuple(
        LeafCoverage(
            leaf.node_id,
            leaf.heading_path,
            picked[leaf.node_id],
            gold[leaf.node_id],
            both[leaf.node_id],
            picked[leaf.node_id] / n if n else 0.0,
        )
        for leaf in index.leaves(doc)
    )
    return Coverage(doc, n, leaves, stale)


def report_index_settings(report: Mapping[str, Any], default_embedder: str) -> IndexSettings:
    """The index settings a report was run with (`default_embedder` when it does not say).

    Raises EvalDataError when the report saved index settings that cannot be read: replaying
    its questions on another index would show other results under its name.
    """
    settings = report.get("settings") or {}
    saved = settings.get("index")
    if saved is not None:
        return _load(IndexSettings.from_dict, saved, "index")
    embedder = settings.get("embedder") or default_embedder
    return IndexSettings(embedder=str(embedder))


def report_query_settings(report: Mapping[str, Any]) -> QuerySettings:
    """The query settings a report was run with (final top-k 10, as the harness, when unsaid).

    Raises EvalDataError when the report saved query settings that cannot be read.
    """
    saved = (report.get("settings") or {}).get("query")
    if saved is not None:
        return _load(lambda data: QuerySettings.from_dict(data, option_types()), saved, "query")
    return QuerySettings().set("answer.final_top_k", 10)


def _load(read, saved: Any, what: str):
    """Saved settings read by `read`; EvalDataError naming what is wrong with them."""
    try:
        if not isinstance(saved, Mapping):
            raise TypeError(f"expected an object, got {type(saved).__name__}")
        return read(saved)
    except (TypeError, ValueError, AttributeError) as exc:
        raise EvalDataError(
            f"This report's saved {what} settings cannot be read ({exc}); its questions cannot "
            "be replayed as they ran: run the evaluation again."
        ) from exc


def rerank_was_on(report: Mapping[str, Any]) -> bool:
    """Whether a report's saved query settings (nested or the older flat keys) had rerank on.

    Raises EvalDataError when they cannot be read.
    """
    return report_query_settings(report).rerank.enabled
