"""The `tune` and `labels` commands: thin argparse parts over evaluation.labels and .tune."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from treerag_core.base.errors import SettingsError
from treerag_core.base.settings import QuerySettings
from treerag_core.evaluation.labels import (
    LABELS_DIR,
    LabelStore,
    eval_questions,
    export_set,
    import_rows,
    refind,
)
from treerag_core.evaluation.settings_file import read_settings, write_settings
from treerag_core.evaluation.tune import (
    DEFAULT_METRIC,
    TUNABLE,
    Tuner,
    TuneResult,
    space_for,
    tune_metrics,
)
from treerag_core.records.terminal import terminal_safe


def base_settings(args: argparse.Namespace) -> QuerySettings:
    """`--settings FILE` when given, else the defaults: what the query flags then change."""
    path = getattr(args, "settings", None)
    return read_settings(Path(path)) if path else QuerySettings()


def _labels_file(args: argparse.Namespace) -> Path:
    """--labels, else the workspace layout: `<workspace>/labels/` beside `<workspace>/index/`."""
    if args.labels:
        return Path(args.labels)
    return Path(args.index).resolve().parent / LABELS_DIR / "questions.jsonl"


def _engine(args: argparse.Namespace):
    from treerag_core.pipeline import load_engine

    return load_engine(args.index, api_key=None, embedder_name=getattr(args, "embedder", None))


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
    if result.warning:
        lines += ["", f"warning: {result.warning}"]
    return "\n".join(lines) + "\n"


def _iv(i) -> str:
    return f"{i.mean:.3f} [{i.low:.3f}, {i.high:.3f}]"


def cmd_tune(args: argparse.Namespace, settings_from_args) -> int:
    current = settings_from_args(args, base_settings(args)).set("llm.enabled", False)
    engine = _engine(args)
    questions = _questions(engine.index, _labels_file(args))
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


def cmd_labels(args: argparse.Namespace) -> int:
    engine = _engine(args)
    store = LabelStore(_labels_file(args))
    if args.action == "export":
        n = export_set(engine.index, store.load(), Path(args.path))
        print(f"exported {n} labelled question(s) and their documents to {args.path}")
        return 0
    source = Path(args.path)
    if not source.is_file():
        raise SettingsError(f"no questions file at {source}: give a questions.jsonl to import")
    result = import_rows(engine.index, source.read_bytes(), args.path)
    store.merge(result.questions)
    print(f"imported into {store.path}: {result.summary()}")
    for qid, start in result.not_verbatim:
        print(f"  not verbatim: {terminal_safe(qid)}: {terminal_safe(start)!r}…")
    return 0


def add_settings_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="start from the query settings in FILE (written by `tune --out`); flags given "
        "beside it change them",
    )


def add_commands(sub, add_query_options, settings_from_args) -> None:
    """`tune` and `labels` on the CLI's subparsers (the shared query flags come from cli)."""
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
    p.set_defaults(func=lambda a: cmd_tune(a, settings_from_args))

    p = sub.add_parser("labels", help="export or import a workspace's labelled questions")
    p.add_argument("action", choices=("export", "import"))
    p.add_argument("path", help="export: a folder to write; import: a questions.jsonl")
    p.add_argument("--index", required=True, help="the index the labels are about")
    p.add_argument("--labels", default=None, help="the labels file (default: beside --index)")
    p.add_argument("--embedder", default=None, help="the index's embedder (st:FOLDER models)")
    p.set_defaults(func=cmd_labels)
