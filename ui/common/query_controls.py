"""The Ask sidebar: query-settings widgets (key prefix `qs_`) and their mapping to settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from treerag_core.base.names import Fusion, Locator
from treerag_core.base.settings import LLMSettings, QuerySettings
from treerag_core.base.types import Trace
from treerag_core.strategies import all_strategies
from treerag_core.strategies.drilldown.search import DrilldownOptions
from ui.common.corpora import EVAL, SAMPLES, UPLOADS, corpus_label
from ui.common.llm_panel import llm_panel
from ui.common.session import AskState

KEEP = "session"  # sidebar values survive a visit to another page
QUESTION = "ask_question"  # the question box's widget key
LLM_PREFIX = "qs_llm_"  # the LLM panel's widget keys (its typed key: session memory only)
LLM_SETTINGS = "qs_llm_settings"  # the panel's last LLMSettings (never a key)

# Sidebar widget key -> the query setting it controls (a dotted QuerySettings path).
SETTING_WIDGETS: dict[str, str] = {
    "qs_locator": "locate.locator",
    "qs_strategy": "strategy",
    "qs_max_leaves": "locate.max_leaves",
    "qs_fusion": "retrieve.fusion",
    "qs_dense_weight": "retrieve.dense_weight",
    "qs_rrf_k": "retrieve.rrf_k",
    "qs_top_k_per_leaf": "retrieve.top_k_per_leaf",
    "qs_final_top_k": "answer.final_top_k",
    "qs_context_chars": "answer.context_chars",
    "qs_rerank": "rerank.enabled",
    "qs_rerank_chinese": "rerank.chinese",
}
# The drill-down's per-layer limits (shown while it is the strategy): widget -> option field.
DRILLDOWN = "drilldown"
DRILLDOWN_WIDGETS: dict[str, str] = {
    "qs_dd_documents": "documents",
    "qs_dd_parents": "parents",
    "qs_dd_children": "children",
}
# Controls that wait for an explicit Ask (a new step 1 may cost an LLM call); every other
# control reruns at once, and the engine decides whether the stored step 1 still holds.
ASK_SETTINGS = (
    "strategy",
    "locate.locator",
    "locate.max_leaves",
    "llm.enabled",
    "llm.provider",
    "llm.base_url",
    "llm.locate_model",
    "llm.context_tokens",
)
# Controls that rerun steps 2-3 at once (a new answer model only re-asks for the answer).
RERUN_SETTINGS = (
    *(p for p in SETTING_WIDGETS.values() if p not in ASK_SETTINGS),
    "llm.answer_model",
    # Step 1 of the drill-down is local (no LLM): the engine redoes it when these move.
    *(f"options.{DRILLDOWN}.{name}" for name in DRILLDOWN_WIDGETS.values()),
)
# Each setting's on-screen label: the widgets are drawn with it and the banners name it so
# ("Rerank (cross-encoder): on → off"), never by its field name.
SETTING_LABELS: dict[str, str] = {
    "strategy": "Strategy",
    "locate.locator": "Locator",
    "locate.max_leaves": "Max leaves",
    "retrieve.fusion": "Fusion",
    "retrieve.dense_weight": "Dense weight",
    "retrieve.rrf_k": "RRF k",
    "retrieve.top_k_per_leaf": "Top-k per leaf",
    "answer.final_top_k": "Final top-k",
    "answer.context_chars": "Answer context budget (characters)",
    "rerank.enabled": "Rerank (cross-encoder)",
    "rerank.chinese": "Rerank Chinese questions too",
    "llm.enabled": "Use an LLM",
    "llm.provider": "Provider",
    "llm.base_url": "Endpoint (base URL)",
    "llm.locate_model": "Locate model",
    "llm.answer_model": "Answer model",
    "llm.context_tokens": "Context size (tokens)",
    f"options.{DRILLDOWN}.documents": "Documents kept",
    f"options.{DRILLDOWN}.parents": "Parent sections kept",
    f"options.{DRILLDOWN}.children": "Child passages kept",
}
CONTEXT_MAX_CHARS = 8000  # the budget slider's top; 0 = off (the answer reads Final top-k)
CORPUS_CHOSEN = "qs_corpus_chosen"  # set once the user picks a corpus (radio, History, Eval)
CORPUS_PARAM = "corpus"  # the link's memory of a picked corpus, so a reload keeps it
LINKABLE = (SAMPLES, UPLOADS)  # corpora every session can open (an eval set is opened on Evaluate)
FUSION_LABELS = {
    # Short enough for the sidebar's select box at 1440 px (the help text says the rest).
    "weighted": "weighted (min-max)",
    "rrf": "RRF (reciprocal rank)",
    "dbsf": "DBSF (mean ± 3 std)",
    "union": "union (either retriever)",
}
FUSION_HELP = (
    "weighted: min-max normalise dense and BM25, then a weighted sum · RRF: reciprocal rank · "
    "DBSF: normalised by mean ± 3 std · union: either retriever's hits, once per chunk"
)


def label_of(path: str) -> str:
    """The on-screen label of a setting path (its last field, spaced, for one not shown)."""
    return SETTING_LABELS.get(path) or path.rsplit(".", 1)[-1].replace("_", " ")


def shown_value(path: str, value: Any) -> str:
    """A setting's value as the sidebar shows it: toggles on/off, a 0 budget off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if path == "answer.context_chars" and not value:
        return "off"
    return str(value)


def setting(settings: QuerySettings | Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of settings (or their dict); None when it is not there."""
    data: Any = settings.to_dict() if isinstance(settings, QuerySettings) else settings
    for part in path.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return None
        data = data[part]
    return data


# Widget defaults go into session state once, so widgets pass no value=.
WIDGET_DEFAULTS: dict[str, Any] = {
    "qs_corpus": SAMPLES,
    **{key: setting(QuerySettings(), path) for key, path in SETTING_WIDGETS.items()},
    **{key: getattr(DrilldownOptions(), name) for key, name in DRILLDOWN_WIDGETS.items()},
    "qs_scope_samples": [],
    "qs_scope_uploads": [],
    "qs_scope_eval": [],
    QUESTION: "",
}


NOT_USED = "(not used)"  # a setting the other side's strategy does not read


def _shown(path: str, value: Any) -> str:
    return NOT_USED if value is None else shown_value(path, value)


def describe_moves(
    before: Mapping[str, Any],
    after: QuerySettings | Mapping[str, Any],
    paths: Sequence[str],
    skip_new: bool = False,
) -> list[str]:
    """'Final top-k: 5 → 2' for each setting among `paths` that differs, named by its
    on-screen label; a setting absent on one side reads "(not used)" (with `skip_new`,
    settings absent before are left out)."""
    labels = []
    for path in paths:
        old, new = setting(before, path), setting(after, path)
        if old == new or (skip_new and old is None):
            continue
        labels.append(f"{label_of(path)}: {_shown(path, old)} → {_shown(path, new)}")
    return labels


def runnable_strategies() -> dict[str, str]:
    """Name -> label of the registry's strategies a user can run (oracle needs gold).

    Read at render time, so a plug-in registered after import shows up too."""
    return {s.name: s.label for s in all_strategies() if not s.needs_gold_leaves}


def choose_corpus(kind: str | None = None) -> None:
    """The user picked a corpus (the radio, or a result opened from History or Evaluate):
    from now on this session keeps it rather than the default."""
    if kind is not None:
        st.session_state.qs_corpus = kind
    st.session_state[CORPUS_CHOSEN] = True


def sync_corpus_choice(has_uploads: bool) -> None:
    """A reload keeps the corpus the user picked: the link's `?corpus=` is read once (only a
    kind every session can open; anything else is ignored), then kept equal to the pick.
    "uploads" is taken only when this workspace has documents: a link whose workspace was
    not restored (expired, made up) would otherwise pin the session to an empty corpus."""
    ss = st.session_state
    wanted = st.query_params.get(CORPUS_PARAM)
    if wanted == UPLOADS and not has_uploads:
        wanted = None
    if not ss.get(CORPUS_CHOSEN) and wanted in LINKABLE:
        ss.qs_corpus = wanted
        ss[CORPUS_CHOSEN] = True
    picked = ss.get("qs_corpus") if ss.get(CORPUS_CHOSEN) else None
    if picked in LINKABLE:
        if wanted != picked:
            st.query_params[CORPUS_PARAM] = picked
    elif CORPUS_PARAM in st.query_params:
        del st.query_params[CORPUS_PARAM]


def _corpus_switched() -> None:
    """The radio moved: the user's own pick, and nothing of the other corpus stays open."""
    choose_corpus()
    AskState().forget_nodes()


def default_corpus(has_uploads: bool) -> None:
    """Until the user picks one: "My uploads" once the workspace has documents (after an
    upload, or a reload that restored them from `?ws=`). Never back on its own: with every
    upload removed, Ask says the workspace is empty and keeps its last result readable."""
    ss = st.session_state
    if has_uploads and not ss.get(CORPUS_CHOSEN) and ss.get("qs_corpus") == SAMPLES:
        ss.qs_corpus = UPLOADS
        AskState().forget_nodes()


def query_settings() -> QuerySettings:
    """The settings the sidebar shows. Raises ValueError for a value no step accepts.

    The LLM part is the LLM panel's last choice (its defaults before the sidebar first ran).
    """
    llm = st.session_state.get(LLM_SETTINGS)
    settings = QuerySettings()
    if isinstance(llm, LLMSettings):
        settings = settings.with_(llm=llm)
    for key, path in SETTING_WIDGETS.items():
        settings = settings.set(path, st.session_state[key])
    if settings.strategy == DRILLDOWN:
        limits = {name: int(st.session_state[key]) for key, name in DRILLDOWN_WIDGETS.items()}
        current = settings.option(DRILLDOWN, DrilldownOptions())
        settings = settings.with_option(DRILLDOWN, replace(current, **limits))
    return settings


def apply_settings(settings: Mapping[str, Any]) -> None:
    """Put a trace's settings back into the sidebar widgets (reopening from History)."""
    paths = {
        **SETTING_WIDGETS,
        **{k: f"options.{DRILLDOWN}.{name}" for k, name in DRILLDOWN_WIDGETS.items()},
    }
    for key, path in paths.items():
        value = setting(settings, path)
        if value is not None:
            st.session_state[key] = value


def changed_settings(trace: Trace, settings: QuerySettings, paths: Sequence[str]) -> list[str]:
    """The settings among `paths` whose value differs from what the trace ran with."""
    now = settings.to_dict()
    return [
        p
        for p in paths
        if setting(trace.settings, p) is not None and setting(trace.settings, p) != setting(now, p)
    ]


def corpus_radio(eval_label: str | None) -> None:
    """The corpus choice (also drawn alone when the chosen corpus cannot be opened)."""
    labels = {kind: corpus_label(kind) for kind in (SAMPLES, UPLOADS)}
    if eval_label is not None:
        labels[EVAL] = eval_label
    st.sidebar.radio(
        "Corpus", list(labels), key="qs_corpus", persist_state=KEEP, format_func=labels.get,
        horizontal=True, on_change=_corpus_switched,
    )  # fmt: skip


def sidebar(
    doc_options: Mapping[str, str], scope_key: str, eval_label: str | None
) -> tuple[LLMSettings, str | None]:
    """Corpus, scope, LLM and the step-1/step-2 controls; menus are built from the registry.

    Returns the LLM panel's (settings, key typed in this session or None).
    """
    ss = st.session_state
    sb = st.sidebar
    corpus_radio(eval_label)
    ss[scope_key] = [d for d in ss.get(scope_key, []) if d in doc_options]
    sb.multiselect(
        "Document scope",
        list(doc_options),
        key=scope_key,
        persist_state=KEEP,
        format_func=lambda d: doc_options.get(d, d),
        placeholder="All documents",
        help="Search only these documents (empty: all of them).",
    )
    llm, typed = llm_panel(sb, prefix=LLM_PREFIX)
    ss[LLM_SETTINGS] = llm
    sb.subheader("Step 1 · Locate")
    sb.selectbox(
        SETTING_LABELS["locate.locator"],
        Locator.values(),
        key="qs_locator",
        persist_state=KEEP,
        help="auto: the LLM when a key is set, else local. local: best chunk + heading "
        "match per leaf. keyword: question terms in headings and summaries.",
    )
    labels_of = runnable_strategies()
    sb.selectbox(
        SETTING_LABELS["strategy"],
        list(labels_of),
        key="qs_strategy",
        persist_state=KEEP,
        help="\n".join(f"- **{n}**: {label}" for n, label in labels_of.items()),
    )
    sb.slider(SETTING_LABELS["locate.max_leaves"], 1, 5, key="qs_max_leaves", persist_state=KEEP)
    if ss.qs_strategy == DRILLDOWN:
        sb.caption("Drill-down layers: what each layer keeps (the seed: 1 / 1 / 3).")
        for key, top in (("qs_dd_documents", 10), ("qs_dd_parents", 20), ("qs_dd_children", 50)):
            path = f"options.{DRILLDOWN}.{DRILLDOWN_WIDGETS[key]}"
            sb.slider(SETTING_LABELS[path], 1, top, key=key, persist_state=KEEP)
    sb.subheader("Step 2 · Retrieve and rerank")
    sb.caption("Changes here re-run steps 2-3 from the stored step 1: no new LLM call.")
    sb.selectbox(
        SETTING_LABELS["retrieve.fusion"], Fusion.values(), key="qs_fusion", persist_state=KEEP,
        format_func=lambda f: FUSION_LABELS.get(f, f), help=FUSION_HELP,
    )  # fmt: skip
    sb.slider(
        SETTING_LABELS["retrieve.dense_weight"], 0.0, 1.0, step=0.05, key="qs_dense_weight",
        persist_state=KEEP,
    )  # fmt: skip
    sb.caption(f"BM25 weight = 1 − dense = {1.0 - float(ss.qs_dense_weight):.2f}")
    sb.slider(
        SETTING_LABELS["retrieve.rrf_k"], 1, 120, key="qs_rrf_k", persist_state=KEEP,
        disabled=ss.qs_fusion != "rrf",
        help="Used by RRF only: 1 / (k + rank).",
    )  # fmt: skip
    per_leaf = [s.name for s in all_strategies() if s.searches_each_leaf]
    sb.slider(
        SETTING_LABELS["retrieve.top_k_per_leaf"], 1, 20, key="qs_top_k_per_leaf",
        persist_state=KEEP,
        disabled=ss.qs_strategy not in per_leaf,
        help=f"Read only by strategies that search each picked leaf on its own: "
        f"{', '.join(per_leaf)}. The others rank one window over the scope.",
    )  # fmt: skip
    budget = int(ss.qs_context_chars)
    sb.slider(
        SETTING_LABELS["answer.final_top_k"], 1, 50, key="qs_final_top_k", persist_state=KEEP,
        disabled=budget > 0, help="How many passages the answer reads (not used while an "
        "answer context budget is set).",
    )  # fmt: skip
    sb.slider(
        SETTING_LABELS["answer.context_chars"], 0, CONTEXT_MAX_CHARS, step=250,
        key="qs_context_chars", persist_state=KEEP,
        help="0 (off): the answer reads the Final top-k passages. Above 0: passages in final "
        "order until their text fills this many characters (at least one).",
    )  # fmt: skip
    sb.caption(
        f"Answer context: fill to {budget:,} characters" if budget > 0
        else f"Answer context: top-{int(ss.qs_final_top_k)} passages"
    )  # fmt: skip
    sb.toggle(SETTING_LABELS["rerank.enabled"], key="qs_rerank", persist_state=KEEP)
    sb.toggle(
        SETTING_LABELS["rerank.chinese"],
        key="qs_rerank_chinese",
        persist_state=KEEP,
        disabled=not ss.qs_rerank,
        help="The bundled cross-encoder is English-only; off by default for Chinese.",
    )
    return llm, typed
