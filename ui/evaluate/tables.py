"""The Evaluate page's tables and charts: metrics, curves, the question list, the coverage map."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from treerag_core import (
    HEADLINE_KEYS,
    LOCATOR_KEYS,
    CorpusIndex,
    Coverage,
    Interval,
    QuestionRow,
    mean_intervals,
)
from treerag_core import METRIC_KS as KS
from treerag_core import SMALL_SET_N as SMALL_N
from treerag_core import metric_lookup as lookup
from treerag_core import metric_number as number
from ui.common.tree_graph import PALETTE, GraphMarks, GraphView, graph_view

CURVES = {"recall": "evidence recall@k", "hit": "hit@k", "section_hit": "section hit@k"}
HEADLINE_LABELS = {"latency_ms.total.p50": "p50 latency (ms)"}
# Distinct colours per strategy (the theme's default gave two strategies the same blue).
STRATEGY_COLOURS = ["#2563EB", "#EA580C", "#16A34A", "#9333EA", "#DC2626", "#0891B2", "#CA8A04"]
LEFT_OUT = "left out of the set"
COVERAGE_COLUMNS = ["node", "section", "picked", "gold", "picked with gold", "pick rate", "flag"]


def headline_label(key: str) -> str:
    return HEADLINE_LABELS.get(key, key)


INTERVAL = " 95%"  # the column beside a mean that holds its bootstrap interval


def small(report: Mapping[str, Any]) -> bool:
    """Whether a strategy scored fewer than SMALL_N questions: then every mean is shown with
    its bootstrap interval beside it (a mean of a few questions alone misleads)."""
    return any(
        number(m.get("n_questions")) < SMALL_N for m in (report.get("strategies") or {}).values()
    )


def interval_text(interval: Interval | None, key: str) -> str:
    if interval is None:
        return ""
    digits = 0 if key.startswith(("ctx_chars", "n_")) else 3
    return f"[{interval.low:.{digits}f}, {interval.high:.{digits}f}]"


def metric_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """Strategies as rows; n, left out and the headline metrics as columns."""
    rows = []
    for name, metrics in report["strategies"].items():
        row: dict[str, Any] = {
            "strategy": name,
            "n": number(metrics.get("n_questions")),
            LEFT_OUT: number(metrics.get("n_left_out")),
        }
        row.update({headline_label(k): number(lookup(metrics, k)) for k in HEADLINE_KEYS})
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["strategy", "n", LEFT_OUT, *map(headline_label, HEADLINE_KEYS)]
    )


# The locator table's columns (the CLI's `eval --llm` table: LOCATOR_KEYS), shorter heads.
LOCATOR_LABELS = {
    "locate_usage.input_tokens": "locate tokens in",
    "locate_usage.output_tokens": "locate tokens out",
    "locate_usage.cost_usd": "locate cost $",
    "llm_usage.cost_usd": "LLM cost $",
}


def locator_label(key: str) -> str:
    return LOCATOR_LABELS.get(key, key)


def has_llm_rows(report: Mapping[str, Any]) -> bool:
    """Whether the report compared the LLM locator (`eval --llm`, or the toggle here)."""
    return any(str(name).endswith("+llm") for name in report.get("strategies") or {})


def locator_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """The local and the LLM locator on the same questions: section hit, recall, the
    locator's tokens and cost (a cost without a known price for the model is left empty)."""
    rows = []
    for name, metrics in report["strategies"].items():
        row: dict[str, Any] = {"strategy": name, "n": number(metrics.get("n_questions"))}
        for key in LOCATOR_KEYS:
            value = number(lookup(metrics, key))
            usage = key.split(".", 1)[0]
            if key.endswith("cost_usd") and lookup(metrics, f"{usage}.cost_known") is False:
                value = math.nan
            row[locator_label(key)] = value
        rows.append(row)
    return pd.DataFrame(rows, columns=["strategy", "n", *map(locator_label, LOCATOR_KEYS)])


def locator_columns() -> dict[str, Any]:
    config: dict[str, Any] = {
        "n": st.column_config.NumberColumn("n", format="%d", help="questions scored", width=44)
    }
    for key in LOCATOR_KEYS:
        label = locator_label(key)
        if key.endswith("_tokens"):
            config[label] = st.column_config.NumberColumn(
                label, format="%d", width=92, help=f"{key}: summed over the questions"
            )
        elif key.endswith("cost_usd"):
            config[label] = st.column_config.NumberColumn(
                label, format="%.4f", width=92,
                help=f"{key}: US dollars, summed over the questions (empty: no price known "
                "for the model)",
            )  # fmt: skip
        else:
            config[label] = st.column_config.ProgressColumn(
                label, min_value=0.0, max_value=1.0, format="%.3f", width=92
            )
    return config


def interval_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """The metric table's twin for a `small` report: under each headline mean's column, its
    95% bootstrap interval (a separate table, so neither runs past the page's width)."""
    keys = [k for k in HEADLINE_KEYS if not k.startswith("latency_ms")]  # a median of timings
    rows = []
    for name in report["strategies"]:
        found = mean_intervals(report, name, keys)
        row: dict[str, Any] = {"strategy": name}
        row.update({headline_label(k) + INTERVAL: interval_text(found.get(k), k) for k in keys})
        rows.append(row)
    return pd.DataFrame(rows, columns=["strategy", *(headline_label(k) + INTERVAL for k in keys)])


def interval_columns() -> dict[str, Any]:
    """The interval table's columns: as wide as the metric table's, so they line up."""
    return {
        headline_label(k) + INTERVAL: st.column_config.TextColumn(
            headline_label(k) + INTERVAL,
            width=92,
            help=f"{headline_label(k)}: 95% bootstrap interval of the mean, over questions",
        )
        for k in HEADLINE_KEYS
        if not k.startswith("latency_ms")
    }


def metric_columns() -> dict[str, Any]:
    """Rates as bars on [0, 1]; character counts and milliseconds as plain numbers."""
    # Fixed narrow widths: with the default ones the last columns ran off the right edge.
    config: dict[str, Any] = {
        # Short headers (the full name in the help): "left out of the set" and "p50 latency
        # (ms)" were cut at these widths.
        "n": st.column_config.NumberColumn("n", format="%d", help="questions scored", width=44),
        LEFT_OUT: st.column_config.NumberColumn(
            "left out",
            format="%d",
            width=72,
            help="questions of the whole set (not of this run) left out: unanswerable, or "
            "evidence not found verbatim",
        ),
    }
    for key in HEADLINE_KEYS:
        label = headline_label(key)
        if key.startswith("latency_ms"):
            config[label] = st.column_config.NumberColumn(
                "p50 ms", format="%.0f", width=70, help=f"{label}: median milliseconds per question"
            )
        elif key.startswith("ctx_chars"):
            config[label] = st.column_config.NumberColumn(
                label, format="%.0f", width=92, help="characters of context in the top passages"
            )
        else:
            config[label] = st.column_config.ProgressColumn(
                label, min_value=0.0, max_value=1.0, format="%.3f", width=92
            )
    return config


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = number(value)
    return out


def all_metrics_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """Every metric the report holds: one row per metric, one column per strategy (each
    followed by its 95% intervals when the report is `small`)."""
    flat = {name: _flatten(m) for name, m in report["strategies"].items()}
    keys = list(dict.fromkeys(k for values in flat.values() for k in values))
    spread = {s: mean_intervals(report, s, keys) for s in flat} if small(report) else {}
    rows = []
    for k in keys:
        row: dict[str, Any] = {"metric": k}
        for s, values in flat.items():
            row[s] = values.get(k, math.nan)
            if s in spread:
                row[s + INTERVAL] = interval_text(spread[s].get(k), k)
        rows.append(row)
    columns = ["metric"]
    for s in flat:
        columns += [s, s + INTERVAL] if s in spread else [s]
    return pd.DataFrame(rows, columns=columns)


def curve_frame(report: Mapping[str, Any], family: str = "recall") -> pd.DataFrame:
    """Long format for the curve chart: strategy, k, value of `<family>@k`."""
    rows = [
        {"strategy": name, "k": k, "value": number(metrics.get(f"{family}@{k}"))}
        for name, metrics in report["strategies"].items()
        for k in KS
        if f"{family}@{k}" in metrics
    ]
    return pd.DataFrame(rows, columns=["strategy", "k", "value"])


def curve_chart(frame: pd.DataFrame, family: str = "recall") -> alt.Chart:
    title = CURVES.get(family, f"{family}@k")
    names = list(dict.fromkeys(frame["strategy"]))
    colours = [STRATEGY_COLOURS[i % len(STRATEGY_COLOURS)] for i in range(len(names))]
    return (
        alt.Chart(frame)
        .mark_line(point=alt.OverlayMarkDef(size=70))
        .encode(
            x=alt.X(
                "k:Q",
                title="k (top passages)",
                scale=alt.Scale(domain=[min(KS), max(KS)]),
                axis=alt.Axis(values=list(KS), format="d"),
            ),
            y=alt.Y("value:Q", title=title, scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "strategy:N", title="strategy", scale=alt.Scale(domain=names, range=colours)
            ),
            tooltip=["strategy", "k", alt.Tooltip("value:Q", title=title, format=".3f")],
        )
        .properties(height=320)
    )


def question_frame(rows: Sequence[QuestionRow], strategies: Sequence[str]) -> pd.DataFrame:
    """The question list: text, document, each strategy's outcome, picked and gold sections."""
    columns = ["question", "doc", *strategies, "picked sections", "gold sections", "id"]
    return pd.DataFrame(
        [
            {
                "question": r.question,
                "doc": r.doc,
                **{s: r.outcomes.get(s, "—") for s in strategies},
                "picked sections": " · ".join(r.picked),
                "gold sections": " · ".join(r.gold_sections),
                "id": r.id,
            }
            for r in rows
        ],
        columns=columns,
    )


def coverage_frame(cov: Coverage) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "node": leaf.node,
                "section": leaf.section,
                "picked": leaf.picked,
                "gold": leaf.gold,
                "picked with gold": leaf.picked_with_gold,
                "pick rate": leaf.pick_rate,
                "flag": leaf.flag,
            }
            for leaf in cov.leaves
        ],
        columns=COVERAGE_COLUMNS,
    )


def coverage_columns() -> dict[str, Any]:
    return {
        "node": st.column_config.TextColumn("node", width="small"),
        "section": st.column_config.TextColumn("section", width="large"),
        "picked": st.column_config.NumberColumn("picked", help="questions that picked it"),
        "gold": st.column_config.NumberColumn("gold", help="questions whose evidence is in it"),
        "picked with gold": st.column_config.NumberColumn(
            "picked ∧ gold", help="picked by a question whose evidence is in it"
        ),
        "pick rate": st.column_config.ProgressColumn(
            "pick rate", min_value=0.0, max_value=1.0, format="%.2f"
        ),
        "flag": st.column_config.TextColumn("flag"),
    }


def rate_colour(rate: float) -> str:
    """White (never picked) to the picked-leaf orange (picked by every question)."""
    low, high = (255, 255, 255), (0xEA, 0x58, 0x0C)
    share = min(1.0, max(0.0, rate))
    rgb = (round(a + (b - a) * share) for a, b in zip(low, high, strict=True))
    return "#" + "".join(f"{c:02X}" for c in rgb)


def coverage_view(
    index: CorpusIndex,
    cov: Coverage,
    selected: str | None,
    expanded: frozenset[str],
    full: bool,
) -> GraphView:
    """The document's tree with each leaf coloured by pick rate; gold leaves get a green
    border, and leaves that held gold but were never picked a red one and a ⚠."""
    stats = {leaf.node: leaf for leaf in cov.leaves}
    focus = frozenset(i for i, r in stats.items() if r.picked or r.gold)
    marks = GraphMarks(matches=focus, selected=selected, expanded=expanded)
    view = graph_view(index, [cov.doc], marks, full=full)
    for node in view.nodes:
        row = stats.get(node["id"])
        if row is None:
            continue
        background = rate_colour(row.pick_rate)
        font = "#FFFFFF" if row.pick_rate > 0.55 else "#0F172A"
        border, width = PALETTE["border"], 1
        if row.flag:
            border, width = PALETTE["unsupported"], 4
            node["label"] = "⚠ " + node["label"]
        elif row.gold:
            border, width = PALETTE["cited"], 4
        if node["id"] == selected:
            border, width = PALETTE["selected"], 5
        node["label"] += f"\n{row.picked}/{cov.n_questions} · {row.gold} gold"
        node["borderWidth"], node["borderWidthSelected"] = width, max(width, 3)
        node["color"] = {
            "background": background,
            "border": border,
            "highlight": {"background": background, "border": PALETTE["selected"]},
            "hover": {"background": background, "border": PALETTE["selected"]},
        }
        node["font"] = {**node.get("font", {}), "color": font}
    return view
