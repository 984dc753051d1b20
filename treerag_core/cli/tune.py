"""`tune`: find the settings that find your labelled evidence (k-fold cross-validated)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from treerag_core import open_index, terminal_safe
from treerag_core.base.errors import SettingsError
from treerag_core.cli.options import add_query_options, base_settings, settings_from_args
from treerag_core.evaluation.labels import LABELS_DIR, eval_questions, import_rows, refind
from treerag_core.evaluation.settings_file import write_settings
from treerag_core.evaluation.tune import (
    DEFAULT_METRIC,
    TUNABLE,
    Tuner,
    TuneResult,
    space_for,
    tune_metrics,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="find the settings that find your labelled evidence (k-fold cross-validated)",
    )
    p.add_argument(
        "--labels",
        default=None,
        help="labelled questions (eval-set questions.jsonl); default: the labels/ folder "
        "beside --index (a workspace's)",
    )
    p.add_argument(
        "--metric",
        choices=tune_metrics(),
        default=DEFAULT_METRIC,
        help="what the tune maximises; the settings written read that much (default %(default)s)",
    )
    p.add_argument(
        "--scope",
        choices=("corpus", "doc"),
        default="corpus",
        help="corpus: every document of the index, as Ask searches; doc: each question's own",
    )
    p.add_argument(
        "--strategies",
        default=None,
        help=f"the strategies the search tries, comma-separated (default {','.join(TUNABLE)}); "
        "--no-rerank keeps the cross-encoder off in every setting tried",
    )
    p.add_argument("--out", default=None, help="write the best settings here (for --settings)")
    add_query_options(p)
    p.set_defaults(func=run)


def labels_file(args: argparse.Namespace) -> Path:
    """--labels, else the workspace layout: `<workspace>/labels/` beside `<workspace>/index/`."""
    if args.labels:
        return Path(args.labels)
    return Path(args.index).resolve().parent / LABELS_DIR / "questions.jsonl"


def open_engine(args: argparse.Namespace):
    return open_index(args.index, api_key=None, embedder_name=getattr(args, "embedder", None))


def _questions(index, path: Path):
    """The labelled questions of `path` (a stored labels file or any eval-set questions.jsonl),
    checked against the index; every problem is printed, counted, never guessed."""
    if not path.is_file():
        raise SettingsError(f"no labelled questions at {path}: mark some in the explorer, "
                            "or pass --labels questions.jsonl")  # fmt: skip
    result = import_rows(index, path.read_bytes(), str(path))
    print(f"labels: {result.summary()}", file=sys.stderr)
    for qid, start in result.not_verbatim[:10]:
        print(f"  not verbatim: {terminal_safe(qid)}: {terminal_safe(start)!r}…", file=sys.stderr)
    found = refind(index, result.questions)
    return eval_questions(found.questions)


def format_result(result: TuneResult) -> str:
    """The result as Markdown: best against current, per fold and overall, with intervals."""
    lines = [
        f"Tune on {result.n_questions} labelled questions, {result.metric}, "
        f"{result.n_folds}-fold cross-validation; {result.tried} of {result.planned} settings "
        f"tried in {result.seconds:.0f} s (estimate {result.estimate_seconds:.0f} s)"
        + (" — STOPPED EARLY: partial" if result.partial else ""),
        "",
        "| fold | n | chosen on the other folds | its score here | current here |",
        "|---|---|---|---|---|",
    ]
    for f in result.folds:
        lines.append(
            f"| {f.index} | {f.n_questions} | {f.chosen} | {f.chosen_score:.3f} | "
            f"{f.current_score:.3f} |"
        )
    lines += [
        "",
        "| | settings | score (95% interval) |",
        "|---|---|---|",
        f"| current | {result.current.label} | {_iv(result.current_score)} |",
        f"| tuned, cross-validated | (chosen per fold) | {_iv(result.cross_validated)} |",
        f"| best, on all questions | {result.best.label} | {result.best_in_sample:.3f} "
        "(in-sample: optimistic) |",
        f"| gain (paired) | | {result.gain.text()} |",
    ]
    if result.best_is_current:
        lines += ["", "The current settings are already the best found: nothing to change."]
    if result.warning:
        lines += ["", f"warning: {result.warning}"]
    return "\n".join(lines) + "\n"


def _iv(i) -> str:
    return f"{i.mean:.3f} [{i.low:.3f}, {i.high:.3f}]"


def run(args: argparse.Namespace) -> int:
    current = settings_from_args(args, base_settings(args)).set("llm.enabled", False)
    engine = open_engine(args)
    questions = _questions(engine.index, labels_file(args))
    names = [x.strip() for x in args.strategies.split(",")] if args.strategies else None
    space = space_for(current, names)  # --no-rerank: the search never turns the model on
    tuner = Tuner(engine, questions, current, args.metric, space, args.scope)
    print(f"estimating: {len(tuner.candidates)} settings x {len(tuner.questions)} questions…",
          file=sys.stderr)  # fmt: skip
    estimate = tuner.estimate()
    print(f"estimate: about {estimate:.0f} s (Ctrl-C stops and keeps what is done)",
          file=sys.stderr)  # fmt: skip
    bar = tqdm(total=0, desc="tuning", unit="run", file=sys.stderr, disable=not sys.stderr.isatty())

    def progress(done: int, total: int, _label: str) -> None:
        bar.total, bar.n = total, done
        bar.refresh()

    try:
        result = tuner.run(progress=progress, estimate_seconds=estimate)
    finally:
        bar.close()
    print(format_result(result))
    if args.out:
        write_settings(Path(args.out), result.applied(), {"tune": result.to_dict()})
        print(f"wrote {args.out}: use it with `query --settings {args.out}`")
    return 130 if result.partial else 0
