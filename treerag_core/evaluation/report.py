"""Eval reports: atomic JSON on disk and a Markdown table of the headline numbers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from treerag_core.base.artifacts import parse_json
from treerag_core.base.atomic import write_atomic
from treerag_core.base.errors import EvalDataError
from treerag_core.base.safepaths import read_bytes_inside, resolve_inside
from treerag_core.evaluation.intervals import (
    Interval,
    mean_interval,
    paired_difference_interval,
)
from treerag_core.strategies.flat.strategy import FlatHybrid
from treerag_core.strategies.graph.strategy import TreeRAGKG
from treerag_core.strategies.treerag.strategy import TreeRAG
from treerag_core.strategies.treerag.structured import FlatStructured

HEADLINE_KEYS: tuple[str, ...] = (
    "recall@1000c",
    "recall@2000c",
    "hit@5",
    "recall@5",
    "mrr@10",
    "ctx_chars@5",
    "section_hit@5",
    "latency_ms.total.p50",
)
# PDF sets with page-level gold (README "Page-level gold").
PAGE_HEADLINE_KEYS: tuple[str, ...] = (
    "page_hit@1000c",
    "page_hit@2000c",
    "page_hit@1",
    "page_hit@5",
    "page_recall@5",
    "page_mrr@10",
    "ctx_chars@5",
    "latency_ms.total.p50",
)
MISSING = "—"
REPORT_MAX_BYTES = 64 * 1024 * 1024  # a full dev-set report is ~2 MB
# `eval --llm`: the local and the LLM locator on the same questions.
LOCATOR_KEYS: tuple[str, ...] = (
    "section_hit@1",
    "section_hit@3",
    "section_hit@5",
    "recall@1000c",
    "recall@2000c",
    "hit@5",
    "locate_usage.input_tokens",
    "locate_usage.output_tokens",
    "locate_usage.cost_usd",
    "llm_usage.cost_usd",
)


def llm_fallback_notes(report: Mapping[str, Any]) -> list[str]:
    """One line per `+llm` row whose LLM locator fell back on some questions: the row is
    then (partly) the local locator's, which its numbers alone do not show."""
    notes = []
    for row, records in (report.get("questions") or {}).items():
        if not row.endswith("+llm") or not records:
            continue
        reasons: dict[str, int] = {}
        for record in records:
            for fallback in record.get("fallbacks") or ():
                stage, _, reason = str(fallback).partition(":")
                if stage == "locate":
                    reasons[reason] = reasons.get(reason, 0) + 1
                    break
        if reasons:
            why = ", ".join(f"{reason} {n}x" for reason, n in reasons.items())
            notes.append(
                f"the LLM locator was not used for {sum(reasons.values())} of "
                f"{len(records)} questions of {row} ({why}); those used the local locator"
            )
    return notes


def lookup(metrics: Mapping[str, Any], key: str) -> Any:
    # Metric names hold no dots, so a dot always means a nested key (latency_ms.total.p50).
    value: Any = metrics
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _header(key: str) -> str:
    if key.startswith("latency_ms."):
        parts = key.split(".")
        if len(parts) == 3:
            return f"{parts[2]} {parts[1]} ms"
    return key


def _format(key: str, value: Any) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return MISSING
    if key.startswith(("ctx_chars", "latency_ms", "n_")) or key.endswith("_tokens"):
        return f"{value:.0f}"
    if key.endswith("cost_usd"):
        return f"{value:.4f}"
    return f"{value:.3f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(report: Mapping[str, Any], keys: Sequence[str] | None = None) -> str:
    """One row per strategy with `n` (questions scored), `left out`, then `keys`.

    `keys` are metric names or dotted paths into a strategy's entry (default: the headline
    keys, or the page-level ones for a PDF set); a value the report lacks is shown as "—".
    """
    strategies = report.get("strategies") or {}
    if keys is None:  # page-level gold (PDF sets) has its own headline numbers
        paged = any("page_hit@5" in m for m in strategies.values())
        keys = PAGE_HEADLINE_KEYS if paged else HEADLINE_KEYS
    header = ["strategy", "n", "left out", *(_header(k) for k in keys)]
    lines = [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for name, metrics in strategies.items():
        row = [
            _cell(str(name)),
            _format("n_questions", lookup(metrics, "n_questions")),
            _format("n_left_out", lookup(metrics, "n_left_out")),
            *(_format(k, lookup(metrics, k)) for k in keys),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


# Paired differences: every strategy against the flat baseline; a strategy that routes
# documents also against the same ranking without routing, the comparison routing must pass.
FLAT_BASELINE = FlatHybrid.name
UNROUTED_BASELINE = FlatStructured.name
ROUTING_STRATEGIES: tuple[str, ...] = (TreeRAG.name, TreeRAGKG.name)
# Quality numbers only: a difference in latency or context size is not a gain.
DIFFERENCE_KEYS: tuple[str, ...] = ("recall@1000c", "recall@2000c", "hit@5")
PAGE_DIFFERENCE_KEYS: tuple[str, ...] = ("page_hit@1000c", "page_hit@2000c", "page_hit@5")


def baselines_of(row: str) -> tuple[str, ...]:
    """The baselines a report row is compared with (`treerag+llm` routes like `treerag`)."""
    strategy = row.split("+", 1)[0]
    found = () if row == FLAT_BASELINE else (FLAT_BASELINE,)
    if strategy in ROUTING_STRATEGIES:
        found += (UNROUTED_BASELINE,)
    return found


def _per_question(report: Mapping[str, Any], row: str) -> dict[str, Mapping[str, Any]]:
    records = (report.get("questions") or {}).get(row) or []
    return {str(r["id"]): r.get("metrics") or {} for r in records if "id" in r}


def mean_intervals(report: Mapping[str, Any], row: str, keys: Sequence[str]) -> dict[str, Interval]:
    """{metric: the mean of one row's per-question values with its bootstrap interval}, for
    the `keys` its records have (latency and other non-per-question numbers have none)."""
    per = _per_question(report, row).values()
    out: dict[str, Interval] = {}
    for key in keys:
        values = [float(m[key]) for m in per if isinstance(m.get(key), int | float)]
        if values:
            out[key] = mean_interval(values)
    return out


def paired_differences(
    report: Mapping[str, Any], keys: Sequence[str] | None = None
) -> dict[str, dict[str, dict[str, Interval]]]:
    """{row: {baseline: {metric: interval of row - baseline}}} over the questions both ran.

    Only baselines that ran in the same report count; a metric is compared on the questions
    that have it on both sides (a question skipped by one strategy drops out of its pairs).
    """
    strategies = report.get("strategies") or {}
    if keys is None:
        paged = any("page_hit@5" in m for m in strategies.values())
        keys = PAGE_DIFFERENCE_KEYS if paged else DIFFERENCE_KEYS
    out: dict[str, dict[str, dict[str, Interval]]] = {}
    for row in strategies:
        for baseline in baselines_of(row):
            if baseline not in strategies:
                continue
            mine, theirs = _per_question(report, row), _per_question(report, baseline)
            shared = [q for q in mine if q in theirs]
            cells: dict[str, Interval] = {}
            for key in keys:
                pairs = [
                    (float(mine[q][key]), float(theirs[q][key]))
                    for q in shared
                    if key in mine[q] and key in theirs[q]
                ]
                if pairs:
                    a, b = zip(*pairs, strict=True)
                    cells[key] = paired_difference_interval(a, b)
            if cells:
                out.setdefault(row, {})[baseline] = cells
    return out


def differences_json(report: Mapping[str, Any]) -> dict[str, Any]:
    """`paired_differences` as plain JSON (mean, low, high), kept in the report file."""
    return {
        row: {
            baseline: {
                key: {"mean": i.mean, "low": i.low, "high": i.high} for key, i in cells.items()
            }
            for baseline, cells in by_baseline.items()
        }
        for row, by_baseline in paired_differences(report).items()
    }


def difference_table(report: Mapping[str, Any], keys: Sequence[str] | None = None) -> str:
    """Each strategy's paired difference from its baselines, with a bootstrap 95% interval.

    One row per (strategy, baseline); a cell is `+0.034 [+0.005, +0.061]`, in bold when the
    interval excludes zero (otherwise the difference is within the noise of these questions).
    Empty when no baseline ran in the report.
    """
    found = paired_differences(report, keys)
    if not found:
        return ""
    metrics = list(dict.fromkeys(k for by in found.values() for c in by.values() for k in c))
    header = ["strategy", "minus", *(_header(k) for k in metrics)]
    lines = [
        "| " + " | ".join(_cell(h) for h in header) + " |",
        "|" + "|".join(["---", "---"] + ["---:"] * len(metrics)) + "|",
    ]
    for row, by_baseline in found.items():
        for baseline, cells in by_baseline.items():
            texts = []
            for key in metrics:
                interval = cells.get(key)
                if interval is None:
                    texts.append(MISSING)
                elif interval.excludes_zero:
                    texts.append(f"**{interval.text()}**")
                else:
                    texts.append(interval.text())
            lines.append("| " + " | ".join([_cell(row), _cell(baseline), *texts]) + " |")
    return "\n".join(lines) + "\n"


def routing_summary(report: Mapping[str, Any]) -> str:
    """How often each routing strategy cut documents: "treerag routed 12 of 30 questions"."""
    parts = []
    for row, records in (report.get("questions") or {}).items():
        if row.split("+", 1)[0] not in ROUTING_STRATEGIES or not records:
            continue
        routed = sum(1 for r in records if r.get("routed"))
        parts.append(f"{row} routed {routed} of {len(records)} questions")
    return "; ".join(parts)


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    """Write `report` as UTF-8 JSON; a reader never sees a half-written file."""
    # allow_nan=False: NaN is not JSON, and a metric that is NaN is a bug to surface now.
    text = json.dumps(report, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    write_atomic(path, text, mode=0o644)  # a report is meant to be shared


def load_report(
    path: Path,
    roots: Sequence[str | Path] | None = None,
    max_bytes: int = REPORT_MAX_BYTES,
) -> dict[str, Any]:
    """Read a report written by `write_report`, only from inside `roots`.

    `roots` defaults to the app's data folder and the eval-set folders (`allowed_roots`): a
    path typed in the browser can never make the server read anything else, a device or FIFO,
    or a file larger than `max_bytes`.

    Raises:
        EvalDataError: the file is missing, not JSON, or not a JSON object.
        UnsafePathError: outside the roots, not a regular file, or too large.
    """
    path = Path(path)
    if not resolve_inside(path, roots).exists():
        raise EvalDataError(f"No eval report at {path}")
    raw = read_bytes_inside(path, roots, max_bytes)
    try:
        data = parse_json(raw.decode("utf-8"))
    except ValueError as e:  # not JSON, not UTF-8, or nested too deeply
        raise EvalDataError(f"Eval report {path} is not valid UTF-8 JSON: {e}") from e
    if not isinstance(data, dict):
        raise EvalDataError(
            f"Eval report {path} must hold a JSON object, got {type(data).__name__}"
        )
    return data
