"""Gold evidence for a question asked in the explorer, and each strategy's metrics against it."""

from __future__ import annotations

from dataclasses import dataclass

from treerag_core import CorpusIndex, EvalQuestion, passages_of, picked_paths, question_metrics
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.text_rules import one_line
from treerag_core.base.types import Trace
from ui.evaluate import data as eval_data

# The metrics Compare shows (keys of question_metrics), with their column names.
SHOWN = {
    "recall@1000c": "Recall@1000c",
    "recall@2000c": "Recall@2000c",
    "hit@5": "Hit@5",
    "section_hit@5": "Section hit@5",
}


@dataclass(frozen=True)
class Gold:
    """A dev-set question whose gold evidence lies verbatim in the corpus being asked."""

    dataset: str
    question: EvalQuestion


def _holds(index: CorpusIndex, question: EvalQuestion) -> bool:
    """Every gold span is in the index's text at the same offsets (the same document text)."""
    return bool(question.evidences) and all(
        ev.doc in index.texts and index.texts[ev.doc][ev.start : ev.end] == ev.text
        for ev in question.evidences
    )


@dataclass(frozen=True)
class GoldLookup:
    """The gold found for a question (None: none), and the dev sets that could not be read."""

    gold: Gold | None
    problems: tuple[str, ...] = ()


def gold_for(question: str, index: CorpusIndex) -> GoldLookup:
    """The dev-set question asked (same text) with gold in this index, if there is one.

    Only span-level gold counts (the PDF set's page gold needs its page maps); a question the
    metrics leave out (unanswerable, evidence not found) has no gold to score against. A dev
    set that cannot be read is named in `problems`, so the page says why metrics are missing.
    """
    wanted = one_line(question).strip()
    problems = []
    for name in eval_data.DEV_SETS:
        folder = eval_data.dev_set_folder(name)
        if not folder.is_dir():
            continue
        try:
            dataset = eval_data.dataset(folder)
        except TreeRAGError as exc:
            problems.append(f"dev set {name}: {exc}")
            continue
        for q in dataset.questions:
            same = one_line(q.question).strip() == wanted
            if same and q.usable and not q.gold_pages and _holds(index, q):
                return GoldLookup(Gold(dataset.name, q), tuple(problems))
    return GoldLookup(None, tuple(problems))


def strategy_metrics(gold: Gold, trace: Trace) -> dict[str, float]:
    """The shown metrics of one strategy's run, by the harness's own rules."""
    found = question_metrics(gold.question, passages_of(trace), picked_paths(trace))
    return {label: found[key] for key, label in SHOWN.items() if key in found}
