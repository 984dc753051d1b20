"""Tune: a bounded search over the query settings that matter, scored on labelled questions
by k-fold cross-validation (chosen on k-1 folds, scored on the held-out one), so the figure
it reports is what to expect on questions the tune never saw."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from treerag_core.base.errors import QueryError, TreeRAGError
from treerag_core.base.names import Fusion
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.dataset import EvalQuestion
from treerag_core.evaluation.harness import passages_of, picked_paths
from treerag_core.evaluation.intervals import Interval, mean_interval, paired_difference_interval
from treerag_core.evaluation.metrics import BUDGETS, KS, question_metrics
from treerag_core.pipeline import Engine, run
from treerag_core.strategies import get_strategy
from treerag_core.strategies.flat.strategy import FlatHybrid
from treerag_core.strategies.treerag.strategy import TreeRAG
from treerag_core.strategies.treerag.structured import FlatStructured, StructureOptions

MIN_QUESTIONS = 8  # below this, a held-out fold is one or two questions: no estimate at all
MAX_FOLDS = 5
DEFAULT_METRIC = "recall@2000c"  # the README's headline when passage sizes differ
RUN_TOP_K = 50  # passages kept per run: the budget metrics walk up to 50 (eval README)
TUNABLE = (
    TreeRAG.name,
    FlatStructured.name,
    FlatHybrid.name,
)  # strategies whose settings the grid moves
SMALL_N = 20  # below this many questions, every mean is shown with its interval

Progress = Callable[[int, int, str], None]  # (runs done, runs in all, setting being tried)


class TuneError(TreeRAGError):
    """A tune that cannot run as asked (too few questions, an unknown metric)."""


@dataclass(frozen=True)
class Candidate:
    """One point of the search: a readable label and the settings it runs with."""

    label: str
    settings: QuerySettings


def tune_metrics() -> tuple[str, ...]:
    """The metrics a tune may maximise (span gold; every one is in `question_metrics`)."""
    budget = tuple(f"{m}@{b}c" for b in BUDGETS for m in ("recall", "hit"))
    return (*budget, *(f"hit@{k}" for k in KS), *(f"recall@{k}" for k in KS), "mrr@10")


def read_size(settings: QuerySettings, metric: str) -> QuerySettings:
    """The answer reads what the metric scored: B characters for @Bc, k passages for @k."""
    _, _, at = metric.partition("@")
    if at.endswith("c"):
        return settings.set("answer.context_chars", int(at[:-1]))
    k = 10 if metric == "mrr@10" else int(at)
    return settings.set("answer.context_chars", 0).set("answer.final_top_k", k)


def label_of(settings: QuerySettings) -> str:
    """A setting as one short line: strategy, routing, fusion, window, rerank."""
    r = settings.retrieve
    parts = [settings.strategy]
    if settings.strategy == TreeRAG.name:
        routed = settings.option(TreeRAG.name, StructureOptions()).route_documents
        parts.append(f"route {routed} doc(s)" if routed else "no routing")
    fusion = "rrf" if r.fusion == Fusion.RRF else f"{r.fusion} dense {r.dense_weight:g}"
    parts += [fusion, f"window {r.candidate_window}"]
    if not settings.rerank.enabled:
        parts.append("rerank off")
    elif settings.strategy in (TreeRAG.name, FlatStructured.name):
        parts.append("rerank path+passage" if settings.rerank.read_path else "rerank passage")
    else:
        parts.append("rerank on")
    return " · ".join(parts)


@dataclass(frozen=True)
class SearchSpace:
    """The bounded grid: every value list is short on purpose (a tune must fit minutes)."""

    strategies: tuple[str, ...] = TUNABLE
    route_documents: tuple[int, ...] = (2, 3)  # treerag only (flat-structured: no routing)
    fusions: tuple[tuple[str, float], ...] = (
        ("weighted", 0.3),
        ("weighted", 0.5),
        ("weighted", 0.7),
        ("rrf", 0.5),
    )
    windows: tuple[int, ...] = (20, 40)
    reranks: tuple[str, ...] = ("path", "passage", "off")  # what the cross-encoder reads

    def __post_init__(self) -> None:
        bad = [s for s in self.strategies if s not in TUNABLE]
        if bad or not self.strategies:
            raise TuneError(f"a tune searches {', '.join(TUNABLE)}; not {', '.join(bad) or 'none'}")
        bad = [r for r in self.reranks if r not in ("path", "passage", "off")]
        if bad or not self.reranks:
            raise TuneError(f"rerank readings are path, passage or off; not {bad or 'none'}")

    def candidates(self, current: QuerySettings) -> list[Candidate]:
        """`current` first (so a tie keeps it), then the grid, without duplicates."""
        out: dict[str, Candidate] = {}
        base = current.set("answer.final_top_k", RUN_TOP_K).set("answer.context_chars", 0)
        base = base.set("llm.enabled", False)
        out[label_of(base)] = Candidate(label_of(base), base)
        for strategy in self.strategies:
            routes = self.route_documents if strategy == TreeRAG.name else (None,)
            reads_path = strategy in (TreeRAG.name, FlatStructured.name)
            reranks = self.reranks if reads_path else tuple(dict.fromkeys(
                "on" if r != "off" else "off" for r in self.reranks
            ))  # fmt: skip
            for route in routes:
                for fusion, weight in self.fusions:
                    for window in self.windows:
                        for rerank in reranks:
                            s = base.with_(strategy=strategy)
                            if route is not None:
                                opts = s.option(strategy, StructureOptions())
                                s = s.with_option(
                                    strategy,
                                    StructureOptions(opts.section_weight, route, opts.route_check),
                                )
                            s = s.set("retrieve.fusion", fusion)
                            s = s.set("retrieve.dense_weight", weight)
                            s = s.set("retrieve.candidate_window", window)
                            s = s.set("rerank.enabled", rerank != "off")
                            if rerank in ("path", "passage"):
                                s = s.set("rerank.read_path", rerank == "path")
                            out.setdefault(label_of(s), Candidate(label_of(s), s))
        return list(out.values())


def space_for(current: QuerySettings, strategies: Sequence[str] | None = None) -> SearchSpace:
    """The grid for a user's settings: `strategies` (default all tunable ones); with the
    cross-encoder off in `current`, every setting tried keeps it off (on a slow machine,
    that is what bounds a tune: the model's scores are nearly all of its time)."""
    space = SearchSpace()
    if strategies:
        space = replace(space, strategies=tuple(strategies))
    if not current.rerank.enabled:
        space = replace(space, reranks=("off",))
    return space


@dataclass(frozen=True)
class Fold:
    """One held-out fold: the setting chosen on the others, and both scores on this one."""

    index: int
    n_questions: int
    chosen: str
    chosen_score: float
    current_score: float


@dataclass(frozen=True)
class TuneResult:
    """What a tune found; `cross_validated` is the honest estimate for new questions."""

    metric: str
    n_questions: int
    n_folds: int
    current: Candidate
    best: Candidate  # chosen on all the questions: the one to apply
    best_in_sample: float  # its mean on the questions that chose it (optimistic)
    cross_validated: Interval  # held-out scores of each fold's choice, pooled
    current_score: Interval
    gain: Interval  # paired: cross-validated minus current, over the same questions
    folds: tuple[Fold, ...]
    tried: int
    planned: int
    partial: bool
    seconds: float
    estimate_seconds: float
    base: QuerySettings = field(default_factory=QuerySettings)  # the user's settings as given
    means: dict[str, float] = field(default_factory=dict)  # every complete setting's mean
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def warning(self) -> str | None:
        """Said whenever the gain could be noise (its interval holds zero), and when the
        search's choice does worse than the current settings on held-out questions."""
        if self.gain.high < 0.0:
            return (
                f"on questions it did not choose on, the search's pick does worse than the "
                f"current settings ({self.gain.text()}): it fits these {self.n_questions} "
                "questions, not new ones; keep the current settings"
            )
        if self.gain.low <= 0.0 <= self.gain.high:
            return (
                f"the gain {self.gain.text()} is inside the noise: its 95% interval holds 0 "
                f"on {self.n_questions} questions; label more questions before trusting it"
            )
        return None

    @property
    def best_is_current(self) -> bool:
        """The search found nothing better than the current settings: they come first in the
        grid and a tie keeps them, so applying the best would change no setting it tried."""
        return self.best.label == self.current.label

    def applied(self) -> QuerySettings:
        """The best settings, reading what the metric scored; the answer's top-k and the LLM
        access are the user's own (a tune never switches an LLM on or off)."""
        chosen = self.best.settings.set("answer.final_top_k", self.base.answer.final_top_k)
        return read_size(chosen, self.metric).with_(llm=self.base.llm)

    def to_dict(self) -> dict[str, Any]:
        def iv(i: Interval) -> dict[str, float]:
            return {"mean": i.mean, "low": i.low, "high": i.high}

        return {
            "metric": self.metric,
            "n_questions": self.n_questions,
            "n_folds": self.n_folds,
            "current": self.current.label,
            "best": self.best.label,
            "best_in_sample": self.best_in_sample,
            "cross_validated": iv(self.cross_validated),
            "current_score": iv(self.current_score),
            "gain": iv(self.gain),
            "folds": [f.__dict__ for f in self.folds],
            "tried": self.tried,
            "planned": self.planned,
            "partial": self.partial,
            "seconds": round(self.seconds, 2),
            "estimate_seconds": round(self.estimate_seconds, 2),
            "warning": self.warning,
        }


def score_question(
    engine: Engine, settings: QuerySettings, question: EvalQuestion, metric: str, scope: str
) -> float:
    """One question's `metric` under `settings` (no answer written: retrieval only)."""
    where = list(question.docs) if scope == "doc" else None
    trace = run(engine, question.question, settings, scope=where, synthesize=False)
    pages = {d.doc_id: d.page_starts for d in engine.index.documents if d.page_starts}
    return question_metrics(question, passages_of(trace), picked_paths(trace), pages)[metric]


def folds_of(n: int, seed: int = 0) -> list[list[int]]:
    """Question positions split into k folds (k = min(5, n // 2)), shuffled with a seed."""
    if n < MIN_QUESTIONS:
        raise TuneError(
            f"a tune needs at least {MIN_QUESTIONS} labelled questions, this set has {n}: "
            "mark the evidence of more questions on Ask (or import a set)"
        )
    k = min(MAX_FOLDS, n // 2)
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [sorted(order[i::k]) for i in range(k)]


@dataclass
class Tuner:
    """Runs candidates over questions with one engine, so query vectors and cross-encoder
    scores computed for one setting are reused by every other (the time a tune takes is
    mostly the first setting's)."""

    engine: Engine
    questions: Sequence[EvalQuestion]
    current: QuerySettings
    metric: str = DEFAULT_METRIC
    space: SearchSpace = field(default_factory=SearchSpace)
    scope: str = "corpus"  # corpus: the whole index (as Ask); doc: each question's documents

    def __post_init__(self) -> None:
        if self.metric not in tune_metrics():
            raise TuneError(f"unknown metric {self.metric!r}; choose {', '.join(tune_metrics())}")
        if self.scope not in ("corpus", "doc"):
            raise TuneError(f"scope must be corpus or doc, but got {self.scope!r}")
        self.questions = [q for q in self.questions if q.usable]
        self.folds = folds_of(len(self.questions))
        self.candidates = self.space.candidates(self.current)

    def score(self, candidate: Candidate, question: EvalQuestion) -> float:
        return score_question(self.engine, candidate.settings, question, self.metric, self.scope)

    def estimate(self, probe: int = 2, timed_pairs: int = 8) -> float:
        """Seconds the whole tune should take, measured before it starts.

        The cross-encoder is nearly all of a tune's cost, once per distinct (question,
        passage, reading): so on `probe` questions every setting runs without it (cheap) to
        count the distinct pairs the grid will score and time a run, and `timed_pairs` pairs
        are scored by the bare model (no cache) to time one pair.
        """
        qs = self.questions[:probe]
        pairs: list[int] = []
        runs = 0
        started = time.perf_counter()
        sample: list[str] = []
        for q in qs:
            seen: set[tuple[str, bool]] = set()
            for cand in self.candidates:
                plain = cand.settings.set("rerank.enabled", False)
                where = list(q.docs) if self.scope == "doc" else None
                try:
                    trace = run(self.engine, q.question, plain, scope=where, synthesize=False)
                except QueryError:
                    continue
                runs += 1
                if not cand.settings.rerank.enabled:
                    continue
                reads = (
                    cand.settings.rerank.read_path
                    and get_strategy(cand.settings.strategy).reads_structure
                )
                for hit in trace.reranked:
                    seen.add((hit.chunk.chunk_id, reads))
                    if len(sample) < timed_pairs:
                        sample.append(hit.chunk.text)
            pairs.append(len(seen))
        per_run = (time.perf_counter() - started) / max(1, runs)
        per_pair = self._pair_seconds(qs[0].question, sample) if sample and any(pairs) else 0.0
        mean_pairs = sum(pairs) / max(1, len(pairs))
        return len(self.questions) * (mean_pairs * per_pair + len(self.candidates) * per_run)

    def _pair_seconds(self, question: str, passages: Sequence[str]) -> float:
        """One cross-encoder pair's time, on the bare model (a cached score costs nothing)."""
        model = self.candidates[0].settings.rerank.model
        try:
            reranker = self.engine.reranker_factory(model)
        except TreeRAGError:
            return 0.0  # the tune's own runs report the load failure
        bare = getattr(reranker, "inner", reranker)
        bare.score(question, passages[:1])  # warm: a first call may load the model
        started = time.perf_counter()
        bare.score(question, passages)
        return (time.perf_counter() - started) / len(passages)

    def run(
        self,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        estimate_seconds: float = 0.0,
    ) -> TuneResult:
        """Every candidate on every question (setting by setting, so a stop keeps whole
        settings), then the cross-validation. Ctrl-C or `should_stop` ends it early: the
        settings finished so far are compared (the current one is always first)."""
        started = time.perf_counter()
        n = len(self.questions)
        total = n * len(self.candidates)
        scores: list[list[float]] = []
        skipped: dict[str, int] = {}
        partial = False
        done = 0
        try:
            for cand in self.candidates:
                row = []
                for q in self.questions:
                    if should_stop is not None and should_stop():
                        raise KeyboardInterrupt
                    try:
                        row.append(self.score(cand, q))
                    except QueryError as exc:  # a question the engine refuses scores 0
                        row.append(0.0)
                        skipped[str(exc)] = skipped.get(str(exc), 0) + 1
                    done += 1
                    if progress is not None:
                        progress(done, total, cand.label)
                scores.append(row)
        except KeyboardInterrupt:
            partial = True
        if not scores:
            raise TuneError("the tune was stopped before the current settings were scored")
        return self._result(
            scores, partial, time.perf_counter() - started, estimate_seconds, skipped
        )

    def _result(self, scores, partial, seconds, estimate, skipped) -> TuneResult:
        n = len(self.questions)
        tried = self.candidates[: len(scores)]

        def best_on(positions: Sequence[int]) -> int:
            means = [sum(row[i] for i in positions) / len(positions) for row in scores]
            return max(range(len(means)), key=lambda c: (means[c], -c))  # ties: earlier

        held_out = [0.0] * n
        folds = []
        for f, test in enumerate(self.folds):
            train = [i for i in range(n) if i not in set(test)]
            c = best_on(train)
            for i in test:
                held_out[i] = scores[c][i]
            folds.append(
                Fold(
                    f + 1,
                    len(test),
                    tried[c].label,
                    sum(scores[c][i] for i in test) / len(test),
                    sum(scores[0][i] for i in test) / len(test),
                )
            )
        best = best_on(range(n))
        return TuneResult(
            metric=self.metric,
            n_questions=n,
            n_folds=len(self.folds),
            current=self.candidates[0],
            best=tried[best],
            best_in_sample=sum(scores[best]) / n,
            cross_validated=mean_interval(held_out),
            current_score=mean_interval(scores[0]),
            gain=paired_difference_interval(held_out, scores[0]),
            folds=tuple(folds),
            tried=len(scores),
            planned=len(self.candidates),
            partial=partial,
            seconds=seconds,
            estimate_seconds=estimate,
            base=self.current,
            means={tried[c].label: sum(r) / n for c, r in enumerate(scores)},
            skipped=skipped,
        )
