"""Tune: the bounded search, k-fold cross-validation, refusal, stopping, the settings file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import SettingsError
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.labels import (
    LabelledQuestion,
    eval_questions,
    mark_from_text,
    question_id,
)
from treerag_core.evaluation.settings_file import read_settings, write_settings
from treerag_core.evaluation.tune import (
    MIN_QUESTIONS,
    SearchSpace,
    TuneError,
    Tuner,
    folds_of,
    read_size,
)
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.pipeline import Engine

TOPICS = [
    ("Router", "The router sends each question to two experts chosen by a learned gate."),
    ("Training", "We trained for twelve epochs on eight GPUs with a batch size of sixty-four."),
    ("Data", "The corpus holds forty thousand legal contracts collected from public filings."),
    ("Costs", "Inference costs three cents per thousand questions on commodity hardware."),
    ("Errors", "Most errors come from tables whose headers span several rows of the page."),
    ("Latency", "The median answer arrives in eight hundred milliseconds including retrieval."),
    ("Languages", "The system answers questions in English and Chinese with one shared index."),
    ("Licence", "The code is released under the Apache licence and the data under CC BY."),
    ("Ablation", "Removing the gate lowers recall by nine points on the held-out questions."),
    ("Future", "Future work will add image evidence from scanned appendices and figures."),
]
QUESTIONS = [
    ("Which experts does the router choose?", "two experts chosen by a learned gate"),
    ("How many epochs of training?", "twelve epochs on eight GPUs"),
    ("What does the corpus hold?", "forty thousand legal contracts"),
    ("What does inference cost?", "three cents per thousand questions"),
    ("Where do most errors come from?", "tables whose headers span several rows"),
    ("What is the median answer latency?", "eight hundred milliseconds"),
    ("Which languages are answered?", "English and Chinese with one shared index"),
    ("Under which licence is the code?", "released under the Apache licence"),
    ("What happens without the gate?", "lowers recall by nine points"),
]
SMALL = SearchSpace(
    strategies=("flat-structured", "flat-hybrid"),
    fusions=(("weighted", 0.5), ("rrf", 0.5)),
    windows=(10,),
    reranks=("off",),  # no cross-encoder: the grid logic is what is tested here
)

NO_RERANK = QuerySettings().set("rerank.enabled", False)


@pytest.fixture(scope="module")
def labelled():
    doc = "# Report\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in TOPICS)
    filler = "# Other\n\n" + "".join(
        f"## Part {i}\n\nUnrelated words {i} here.\n\n" for i in range(8)
    )
    sources = [SourceDocument("report.md", doc), SourceDocument("other.md", filler)]
    index = build_index(sources, IndexSettings(embedder="hashing"), get_embedder("hashing"))
    qs = [
        LabelledQuestion(question_id(q), q, (mark_from_text(index, "report.md", span),))
        for q, span in QUESTIONS
    ]
    engine = Engine(index, get_embedder("hashing"), None)
    return engine, eval_questions(qs)


def test_too_few_questions_refused_with_the_minimum() -> None:
    with pytest.raises(TuneError, match=f"at least {MIN_QUESTIONS} labelled questions.* has 2"):
        folds_of(2)
    folds = folds_of(11)
    assert len(folds) == 5 and sorted(i for f in folds for i in f) == list(range(11))


def test_grid_is_bounded_current_first_and_deduplicated() -> None:
    current = QuerySettings()
    full = SearchSpace().candidates(current)
    assert full[0].settings.strategy == current.strategy
    assert len({c.label for c in full}) == len(full) and 40 <= len(full) <= 90
    assert {c.settings.strategy for c in full} == {"treerag", "flat-structured", "flat-hybrid"}


def test_tune_cross_validates_and_applies(labelled) -> None:
    engine, questions = labelled
    seen: list[tuple[int, int]] = []
    tuner = Tuner(engine, questions, NO_RERANK, space=SMALL)
    assert tuner.estimate() > 0
    result = tuner.run(progress=lambda d, t, _: seen.append((d, t)))
    n = len(questions)
    assert result.n_questions == n == len(QUESTIONS) and result.n_folds == 4
    assert seen[-1] == (n * result.planned, n * result.planned) and not result.partial
    assert sum(f.n_questions for f in result.folds) == n
    # The pooled held-out score is the folds' scores weighted by their sizes.
    pooled = sum(f.chosen_score * f.n_questions for f in result.folds) / n
    assert result.cross_validated.mean == pytest.approx(pooled)
    assert result.cross_validated.low <= result.cross_validated.mean <= result.cross_validated.high
    assert result.gain.mean == pytest.approx(
        result.cross_validated.mean - result.current_score.mean
    )
    assert result.best_in_sample == max(result.means.values())
    applied = result.applied()
    assert applied.answer.context_chars == 2000  # reads what recall@2000c scored
    assert applied.answer.final_top_k == QuerySettings().answer.final_top_k
    assert read_size(applied, "hit@3").answer.final_top_k == 3


def test_selection_uses_only_the_training_folds(labelled) -> None:
    engine, questions = labelled
    tuner = Tuner(engine, questions, NO_RERANK, space=SMALL)
    n = len(questions)
    held = tuner.folds[0]
    # Setting 1 is perfect only on fold 1's questions: it must not be chosen for fold 1.
    scores = [[0.5] * n, [1.0 if i in held else 0.0 for i in range(n)]]
    result = tuner._result(scores, False, 1.0, 1.0, {})
    assert result.folds[0].chosen == tuner.candidates[0].label
    assert result.folds[0].chosen_score == 0.5
    assert result.warning is None or "inside the noise" in result.warning
    # Setting f is perfect everywhere but on fold f: chosen for fold f, it scores 0 there.
    # Cross-validation sees through it, and the result says to keep the current settings.
    overfit = [[0.5] * n] + [[0.0 if i in fold else 1.0 for i in range(n)] for fold in tuner.folds]
    res = tuner._result(overfit, False, 1.0, 1.0, {})
    assert res.cross_validated.mean == 0.0 and res.gain.mean == -0.5
    assert res.best_in_sample > res.current_score.mean  # in-sample, it looked better
    assert "keep the current settings" in res.warning
    # Equal scores everywhere: no gain, and the warning says it is noise.
    flat = tuner._result([[0.5] * n, [0.5] * n], False, 1.0, 1.0, {})
    assert flat.best.label == tuner.candidates[0].label and "inside the noise" in flat.warning
    assert flat.best_is_current and not res.best_is_current  # nothing to apply, or something
    from treerag_core.cli.tune import format_result  # the CLI says it too, not only the page

    assert "already the best found" in format_result(flat)
    assert "already the best found" not in format_result(res)


def test_stop_keeps_the_settings_finished(labelled) -> None:
    engine, questions = labelled
    tuner = Tuner(engine, questions, NO_RERANK, space=SMALL)
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] > len(questions) + 3  # mid-way through the second setting

    result = tuner.run(should_stop=stop)
    assert result.partial and result.tried == 1 < result.planned
    assert result.best.label == result.current.label


def test_settings_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    settings = QuerySettings(strategy="flat-hybrid").set("retrieve.candidate_window", 20)
    path = tmp_path / "tuned.json"
    write_settings(path, settings, {"tune": {"metric": "recall@2000c"}})
    assert read_settings(path) == settings
    assert json.loads(path.read_text())["about"]["tune"]["metric"] == "recall@2000c"
    (tmp_path / "bad.json").write_text('{"retrieve": {"dense_weight": 3}}')
    with pytest.raises(SettingsError, match="dense_weight must be in"):
        read_settings(tmp_path / "bad.json")
    with pytest.raises(SettingsError, match="does not exist"):
        read_settings(tmp_path / "none.json")


def test_estimate_counts_cross_encoder_pairs(labelled) -> None:
    engine, questions = labelled
    one = SearchSpace(
        strategies=("flat-structured",),
        fusions=(("weighted", 0.5),),
        windows=(5,),
        reranks=("path",),
    )
    tuner = Tuner(engine, questions, NO_RERANK, space=one)
    without = Tuner(engine, questions, NO_RERANK, space=SMALL).estimate()
    # The real cross-encoder's pairs dominate: 5 per question, each timed on the bare model.
    assert tuner.estimate() > 0 and without > 0
