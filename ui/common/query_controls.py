"""The Ask sidebar: query-settings widgets (key prefix `qs_`) and their mapping to settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

import streamlit as st

from treerag_core import Drilldown, all_strategies, option_types
from treerag_core.base.names import Fusion, Locator
from treerag_core.base.settings import (
    SETTING,
    LLMSettings,
    QuerySettings,
    SettingInfo,
    field_default,
    settings_info,
)
from treerag_core.base.types import Trace
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
# The drill-down's per-layer limits (shown while it is the strategy): widget -> option field,
# one for each field of its options class that declares a widget range.
DRILLDOWN = Drilldown.name
DRILLDOWN_OPTIONS = option_types()[DRILLDOWN]
DRILLDOWN_WIDGETS: dict[str, str] = {
    f"qs_dd_{f.name}": f.name
    for f in fields(DRILLDOWN_OPTIONS)
    if isinstance(meta := f.metadata.get(SETTING), SettingInfo) and meta.min is not None
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


def info(path: str) -> SettingInfo:
    """A setting's label, help and range, from its settings (or options) class."""
    return settings_info(path, {DRILLDOWN: DRILLDOWN_OPTIONS})


def widget_help(path: str) -> str:
    """A setting's help as a sentence, for a widget's tooltip."""
    text = info(path).help
    return text[:1].upper() + text[1:]


# Each setting's on-screen label: the widgets are drawn with it and the banners name it so
# ("Rerank (cross-encoder): on → off"), never by its field name.
SETTING_LABELS: dict[str, str] = {
    path: info(path).label
    for path in (
        *SETTING_WIDGETS.values(),
        *(p for p in ASK_SETTINGS if p.startswith("llm.")),
        "llm.answer_model",
        *(f"options.{DRILLDOWN}.{name}" for name in DRILLDOWN_WIDGETS.values()),
    )
}
CONTEXT_MAX_CHARS = int(info("answer.context_chars").widget_range[1])  # the budget slider's top
CORPUS_CHOSEN = "qs_corpus_chosen"  # set once the user picks a corpus (radio, History, Eval)
CORPUS_PARAM = "corpus"  # the link's memory of a picked corpus, so a reload keeps it
LINKABLE = (SAMPLES, UPLOADS)  # corpora every session can open (an eval set is opened on Evaluate)
FUSION_LABELS = dict(info("retrieve.fusion").choices)  # short enough for the sidebar at 1440 px
FUSION_HELP = widget_help("retrieve.fusion")


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
    **{key: field_default(DRILLDOWN_OPTIONS, name) for key, name in DRILLDOWN_WIDGETS.items()},
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
    if isinstance(after, QuerySettings):  # one dict for every path, not one per path
        after = after.to_dict()
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
        current = settings.option(DRILLDOWN, DRILLDOWN_OPTIONS())
        settings = settings.with_option(DRILLDOWN, replace(current, **limits))
    from ui.common.tune_apply import with_tuned  # issue 26: a tune's settings without a widget

    return with_tuned(settings)


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
        help=widget_help("locate.locator"),
    )
    labels_of = runnable_strategies()
    sb.selectbox(
        SETTING_LABELS["strategy"],
        list(labels_of),
        key="qs_strategy",
        persist_state=KEEP,
        help="\n".join(f"- **{n}**: {label}" for n, label in labels_of.items()),
    )
    setting_slider("locate.max_leaves", "qs_max_leaves", where=sb)
    if ss.qs_strategy == DRILLDOWN:
        sb.caption("Drill-down layers: what each layer keeps (the seed: 1 / 1 / 3).")
        for key, name in DRILLDOWN_WIDGETS.items():
            setting_slider(f"options.{DRILLDOWN}.{name}", key, where=sb)
    sb.subheader("Step 2 · Retrieve and rerank")
    sb.caption(
        "Its controls are on the page, beside ② Evidence: a move there re-runs steps 2-3 "
        "from the stored step 1 and redraws only the story (no new LLM call)."
    )
    from ui.common.tune_apply import sidebar_note  # issue 26

    sidebar_note(sb)
    return llm, typed


STEP2_TITLE = "Step 2 · Retrieve and rerank"


def step2_controls(present: bool = False) -> None:
    """Step 2's controls (fusion, weights, the top-k's, the context budget, rerank), drawn on
    the page beside the evidence they change, inside the story's fragment: a move reruns
    only the story (steps 2-3 from the stored step 1), not the whole page. (In the sidebar
    they could not be in the fragment: a fragment draws only into its own body.) Folded in
    presentation mode, which hides the sidebar's controls too."""
    ss = st.session_state
    with st.expander(STEP2_TITLE + " · changes re-run steps 2-3 at once", expanded=not present):
        left, middle, right = st.columns(3, gap="medium")
        with left:
            st.selectbox(
                SETTING_LABELS["retrieve.fusion"], Fusion.values(), key="qs_fusion",
                persist_state=KEEP, format_func=lambda f: FUSION_LABELS.get(f, f),
                help=FUSION_HELP,
            )  # fmt: skip
            setting_slider("retrieve.dense_weight", "qs_dense_weight")
            st.caption(f"BM25 weight = 1 − dense = {1.0 - float(ss.qs_dense_weight):.2f}")
        with middle:
            setting_slider("retrieve.rrf_k", "qs_rrf_k", disabled=ss.qs_fusion != "rrf")
            per_leaf = [s.name for s in all_strategies() if s.searches_each_leaf]
            setting_slider(
                "retrieve.top_k_per_leaf", "qs_top_k_per_leaf",
                disabled=ss.qs_strategy not in per_leaf,
                more=f": {', '.join(per_leaf)}. The others rank one window over the scope.",
            )  # fmt: skip
            st.toggle(
                SETTING_LABELS["rerank.enabled"], key="qs_rerank", persist_state=KEEP,
                help=widget_help("rerank.enabled"),
            )  # fmt: skip
            st.toggle(
                SETTING_LABELS["rerank.chinese"], key="qs_rerank_chinese", persist_state=KEEP,
                disabled=not ss.qs_rerank, help=widget_help("rerank.chinese"),
            )  # fmt: skip
        with right:
            budget = int(ss.qs_context_chars)
            setting_slider("answer.final_top_k", "qs_final_top_k", disabled=budget > 0)
            setting_slider("answer.context_chars", "qs_context_chars")
            st.caption(
                f"Answer context: fill to {budget:,} characters" if budget > 0
                else f"Answer context: top-{int(ss.qs_final_top_k)} passages"
            )  # fmt: skip


def setting_slider(
    path: str, key: str, disabled: bool = False, more: str = "", where: Any = None
) -> None:
    """The slider of one setting (in `where`: the sidebar, or the page's current place when
    None): label, range, step and help from its SettingInfo."""
    meta = info(path)
    low, high = meta.widget_range
    whole = all(float(v).is_integer() for v in (low, high, meta.step or 1))
    kind = int if whole and not isinstance(st.session_state.get(key), float) else float
    (where or st).slider(
        meta.label, kind(low), kind(high), step=None if meta.step is None else kind(meta.step),
        key=key, persist_state=KEEP, disabled=disabled,
        help=widget_help(path).rstrip(".") + more if more else widget_help(path),
    )  # fmt: skip
