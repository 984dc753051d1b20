"""Evaluate page helpers: dev sets, the cached eval index, report tables, filters, coverage."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from pages import state
from pages import widgets as w
from treerag_core.config import IndexSettings, data_dir
from treerag_core.evaluation.dataset import EvalDataError, EvalDataset, EvalQuestion, load_dataset
from treerag_core.evaluation.harness import dataset_index, index_cache_key, oracle_leaves
from treerag_core.evaluation.metrics import KS
from treerag_core.evaluation.report import HEADLINE_KEYS, lookup, write_report
from treerag_core.index import CorpusIndex
from treerag_core.pipeline import Engine, run
from treerag_core.settings import QuerySettings
from treerag_core.strategies import option_types
from treerag_core.types import Trace

EVAL_ROOT = state.REPO.parent / "shared" / "eval"  # the dev sets, beside the repo
DEV_SETS = ("qasper", "lecoqa_laws", "gitlab_handbook")
OTHER = "other"  # the dataset choice that reads a typed folder
CACHE_DIR, REPORTS_DIR = "eval-cache", "eval-reports"  # under data_dir()
TREE, BASELINE = "treerag", "flat-hybrid"  # "won/lost by treerag" compares these two
HIT_KEY = "hit@5"
FILTERS = ("all", "missed by all", "won by treerag", "lost by treerag")
CURVES = {"recall": "evidence recall@k", "hit": "hit@k", "section_hit": "section hit@k"}

# Sidebar widgets (key -> default), put into session state once so widgets pass no value=.
WIDGET_DEFAULTS: dict[str, Any] = {
    "ev_dataset": DEV_SETS[0],
    "ev_folder": "",
    "ev_strategies": [TREE, BASELINE],
    "ev_scope": "doc",
    "ev_limit": 20,
    "ev_rerank": True,
    "ev_report_path": "",
}
HEADLINE_LABELS = {"latency_ms.total.p50": "p50 latency (ms)"}


def cache_dir() -> Path:
    """Where built eval indexes live (shared with `python -m treerag_core eval --cache`)."""
    return Path(data_dir()) / CACHE_DIR


def reports_dir() -> Path:
    return Path(data_dir()) / REPORTS_DIR


def selected_folder(choice: str, typed: str) -> Path | None:
    """The dataset folder for a sidebar choice; None while "another folder" is still empty."""
    if choice == OTHER:
        text = typed.strip()
        return Path(text).expanduser() if text else None
    return EVAL_ROOT / choice


# ---- the eval set and its index (st.cache_resource: once per server process) ---------------


def _fingerprint(folder: Path) -> str:
    """Changes when the questions or a document are added, removed or edited (no file read)."""
    parts = []
    for path in [folder / "questions.jsonl", *sorted((folder / "docs").glob("*.md"))]:
        try:
            info = path.stat()
        except OSError:
            parts.append(f"{path.name}:-")
            continue
        parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@st.cache_resource(show_spinner=False, max_entries=8)
def _dataset(folder: str, fingerprint: str) -> EvalDataset:
    return load_dataset(Path(folder))


def dataset(folder: Path) -> EvalDataset:
    """The eval set in `folder` (read once per content version).

    Raises:
        EvalDataError: the folder, its questions.jsonl or a document is missing or malformed.
    """
    folder = folder.resolve()
    return _dataset(str(folder), _fingerprint(folder))


@dataclass(frozen=True, eq=False)
class EvalSet:
    """An eval set with its index, as a corpus the Ask page can query."""

    folder: Path
    dataset: EvalDataset
    corpus: state.Corpus
    questions: Mapping[str, EvalQuestion] = field(default_factory=dict)

    @property
    def index(self) -> CorpusIndex:
        return self.corpus.index


@st.cache_resource(
    show_spinner="Indexing the eval set (once per server process; kept on disk after that)…",
    max_entries=6,
)
def _eval_set(folder: str, fingerprint: str, settings_json: str) -> EvalSet:
    data = _dataset(folder, fingerprint)
    settings = IndexSettings.from_dict(json.loads(settings_json))
    # dataset_index keeps the built index under eval-cache/, keyed by a content hash, so a
    # new server process (or the CLI) loads it instead of embedding again.
    index = dataset_index(data, settings, cache_dir())
    engine = Engine(index=index, embedder=state.cached_embedder(index.embedder_name))
    key = f"{state.EVAL}:{index_cache_key(data, settings)}"
    corpus = state.Corpus(key, state.EVAL, f"Eval set: {data.name}", engine)
    return EvalSet(Path(folder), data, corpus, {q.id: q for q in data.questions})


def eval_set(folder: Path, settings: IndexSettings) -> EvalSet:
    """The eval set in `folder` indexed with `settings` (built once, then cached).

    Raises:
        EvalDataError: the folder is missing or malformed.
        EmbedderError: the embedder named in `settings` cannot load.
    """
    folder = folder.resolve()
    settings_json = json.dumps(settings.to_dict(), sort_keys=True)
    return _eval_set(str(folder), _fingerprint(folder), settings_json)


# ---- reports -----------------------------------------------------------------------------


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
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalDataError(f"{name} is not valid UTF-8 JSON ({exc})") from exc
    return check_report(report, name)


def report_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, ensure_ascii=False, indent=2)


def report_file_name(report: Mapping[str, Any], created: str | None = None) -> str:
    stamp = (created or datetime.now(UTC).isoformat(timespec="seconds")).replace(":", "")
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(report.get("dataset")))
    return f"eval-{name}-{report.get('scope', 'doc')}-{stamp[:17]}.json"


def save_report(report: Mapping[str, Any], created: str | None = None) -> Path:
    """Write the report under data_dir()/eval-reports; returns its path."""
    path = reports_dir() / report_file_name(report, created)
    write_report(path, report)
    return path


def report_index_settings(report: Mapping[str, Any]) -> IndexSettings:
    """The index settings a report was run with (the default embedder when it does not say)."""
    saved = (report.get("settings") or {}).get("index")
    if isinstance(saved, dict):
        try:
            return IndexSettings.from_dict(saved)
        except (TypeError, ValueError):
            pass
    embedder = (report.get("settings") or {}).get("embedder") or state.default_embedder()
    return IndexSettings(embedder=str(embedder))


def report_query_settings(report: Mapping[str, Any]) -> QuerySettings:
    saved = (report.get("settings") or {}).get("query")
    if isinstance(saved, dict):
        try:
            return QuerySettings.from_dict(saved, option_types())
        except (TypeError, ValueError):
            pass
    return QuerySettings().set("answer.final_top_k", 10)


def resolve_folder(report: Mapping[str, Any], *candidates: Path | None) -> Path | None:
    """The folder of the report's dataset: a candidate whose name matches, else a dev set."""
    name = str(report.get("dataset") or "")
    for folder in candidates:
        if folder is not None and folder.name == name and folder.is_dir():
            return folder
    dev = EVAL_ROOT / name
    return dev if name in DEV_SETS and dev.is_dir() else None


# ---- metric tables and curves ------------------------------------------------------------


def number(value: Any) -> float:
    """A metric value as a float; NaN for a missing or non-numeric one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def headline_label(key: str) -> str:
    return HEADLINE_LABELS.get(key, key)


def metric_frame(report: Mapping[str, Any]) -> pd.DataFrame:
    """Strategies as rows; n, left out and the headline metrics as columns."""
    columns = ["strategy", "n", "left out", *(headline_label(k) for k in HEADLINE_KEYS)]
    rows = []
    for name, metrics in report["strategies"].items():
        row: dict[str, Any] = {
            "strategy": name,
            "n": number(metrics.get("n_questions")),
            "left out": number(metrics.get("n_left_out")),
        }
        row.update({headline_label(k): number(lookup(metrics, k)) for k in HEADLINE_KEYS})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def metric_columns() -> dict[str, Any]:
    """Rates as bars on [0, 1]; character counts and milliseconds as plain numbers."""
    config: dict[str, Any] = {
        "n": st.column_config.NumberColumn("n", format="%d", help="questions scored"),
        "left out": st.column_config.NumberColumn(
            "left out", format="%d", help="unanswerable or evidence not found verbatim"
        ),
    }
    for key in HEADLINE_KEYS:
        label = headline_label(key)
        if key.startswith(("ctx_chars", "latency_ms")):
            config[label] = st.column_config.NumberColumn(label, format="%.0f")
        else:
            config[label] = st.column_config.ProgressColumn(
                label, min_value=0.0, max_value=1.0, format="%.3f"
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
    """Every metric the report holds: one row per metric, one column per strategy."""
    flat = {name: _flatten(m) for name, m in report["strategies"].items()}
    keys = list(dict.fromkeys(k for values in flat.values() for k in values))
    rows = [
        {"metric": k, **{s: values.get(k, math.nan) for s, values in flat.items()}} for k in keys
    ]
    return pd.DataFrame(rows, columns=["metric", *flat])


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
            color=alt.Color("strategy:N", title="strategy"),
            tooltip=["strategy", "k", alt.Tooltip("value:Q", title=title, format=".3f")],
        )
        .properties(height=320)
    )


# ---- per-question list -----------------------------------------------------------------------


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
        outcomes = {s: entry["outcomes"][s] for s in records if s in entry["outcomes"]}
        hits = {s: entry["hits"][s] for s in records if s in entry["hits"]}
        rows.append(
            QuestionRow(
                id=qid,
                question=str(rec.get("question", "")),
                doc=str(rec.get("doc", "")),
                gold_sections=tuple(str(s) for s in rec.get("gold_sections") or []),
                outcomes=outcomes,
                hits=hits,
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


def question_trace(es: EvalSet, question: EvalQuestion, report: Mapping[str, Any]) -> Trace:
    """Run one eval question again with treerag (no LLM) on the eval index, in its scope."""
    settings = report_query_settings(report).with_(strategy=TREE).set("llm.enabled", False)
    scope = question_scope(question, report)
    return run(es.corpus.engine, question.question, settings, strategy=TREE, scope=scope)


def question_scope(question: EvalQuestion, report: Mapping[str, Any]) -> list[str] | None:
    return list(question.docs) if report.get("scope", "doc") == "doc" else None


# ---- coverage map ------------------------------------------------------------------------------

COVERAGE_COLUMNS = ["node", "section", "picked", "gold", "picked with gold", "pick rate", "flag"]
NEVER_PICKED = "⚠ holds gold, never picked"


@dataclass(frozen=True)
class Coverage:
    """Per leaf of one document: how often treerag picked it and how often it held gold."""

    doc: str
    n_questions: int
    frame: pd.DataFrame
    stale_picks: int = 0  # picked ids that no longer name the same section in this index


def coverage_docs(es: EvalSet, report: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(document, questions of the report about it), most questions first."""
    ids = {str(r.get("id")) for recs in (report.get("questions") or {}).values() for r in recs}
    counts = Counter(d for qid in ids if qid in es.questions for d in es.questions[qid].docs)
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
    rows = [
        {
            "node": leaf.node_id,
            "section": leaf.heading_path,
            "picked": picked[leaf.node_id],
            "gold": gold[leaf.node_id],
            "picked with gold": both[leaf.node_id],
            "pick rate": picked[leaf.node_id] / n if n else 0.0,
            "flag": NEVER_PICKED if gold[leaf.node_id] and not picked[leaf.node_id] else "",
        }
        for leaf in index.leaves(doc)
    ]
    return Coverage(doc, n, pd.DataFrame(rows, columns=COVERAGE_COLUMNS), stale)


def coverage_columns() -> dict[str, Any]:
    return {
        "node": st.column_config.TextColumn("node", width="small"),
        "section": st.column_config.TextColumn("section", width="medium"),
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
) -> w.GraphView:
    """The document's tree with each leaf coloured by pick rate; gold leaves get a green
    border, and leaves that held gold but were never picked a red one and a ⚠."""
    stats = {row["node"]: row for row in cov.frame.to_dict("records")}
    focus = frozenset(i for i, r in stats.items() if r["picked"] or r["gold"])
    marks = w.GraphMarks(matches=focus, selected=selected, expanded=expanded)
    view = w.graph_view(index, [cov.doc], marks, full=full)
    for node in view.nodes:
        row = stats.get(node["id"])
        if row is None:
            continue
        background = rate_colour(row["pick rate"])
        font = "#FFFFFF" if row["pick rate"] > 0.55 else "#0F172A"
        border, width = w.PALETTE["border"], 1
        if row["flag"]:
            border, width = w.PALETTE["unsupported"], 4
            node["label"] = "⚠ " + node["label"]
        elif row["gold"]:
            border, width = w.PALETTE["cited"], 4
        if node["id"] == selected:
            border, width = w.PALETTE["selected"], 5
        node["label"] += f"\n{row['picked']}/{cov.n_questions} · {row['gold']} gold"
        node["borderWidth"], node["borderWidthSelected"] = width, max(width, 3)
        node["color"] = {
            "background": background,
            "border": border,
            "highlight": {"background": background, "border": w.PALETTE["selected"]},
            "hover": {"background": background, "border": w.PALETTE["selected"]},
        }
        node["font"] = {"color": font, "size": 14}
    return view
