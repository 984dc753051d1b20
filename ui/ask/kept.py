"""Nothing lost on navigation: the question and the document scope survive a page switch and a
reload, and a reload of a result shows that result again (issue 25).

Two copies, each for what the other cannot do:
- Session copies (AskState.kept_*), for a page switch: the widgets' own state (persist_state)
  may be dropped when a run stops midway (a page switch during an answer), and then the
  question box would come back empty.
- The link (`?q=`, repeated `?scope=`), for a reload: a reload is a new session, so only the
  URL and the workspace (`?ws=`) remain. The link is per browser tab (two tabs never
  overwrite each other's question, as one file in the workspace would), it is written
  before the answer starts (so a reload mid-answer keeps it), and it holds nothing new for
  whoever has the link: `?ws=` already opens this workspace's History, questions included.

Step 2's controls (fusion, weights, the top-k's, the context budget, rerank) are in the link
too, by their widget keys (`?qs_final_top_k=3`), only when off their defaults: a move retunes
the shown result locally and logs nothing, so after a reload only the link still knows it.
The reopened result is then retuned to them (the slider rerun, its banner naming what moved
against the logged run). Not Streamlit's `bind="query-params"`: a bound slider's default is
its minimum (these widgets take their values from the session, not `value=`), so the link
would always carry them and a move to the minimum would not survive; and the first run must
know the link's values before the widgets are drawn (the rerun runs above them) anyway. (A
bound widget's URL is also written by the browser on a move, which AppTest cannot check.)
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from typing import Any

import streamlit as st

from treerag_core.base.settings import QuerySettings
from treerag_core.base.types import Trace
from ui.common import query_controls as qc
from ui.common.query_log import open_from_history, recent
from ui.common.session import AskState, arrived_on
from ui.common.text_safety import plain

QUESTION_PARAM = "q"
SCOPE_PARAM = "scope"
URL_MAX_CHARS = 2000  # the engine's question limit: a longer one stays out of the link
PAGE = "pages/ask.py"  # as require_app notes it
# Step 2's controls (widget key -> setting path): every rerun-at-once control with a widget.
TUNED: dict[str, str] = {k: p for k, p in qc.SETTING_WIDGETS.items() if p in qc.RERUN_SETTINGS}


def restore_from_link() -> None:
    """Once per session, before the sidebar: the link's question and scope come back. When
    the link's question is this workspace's last logged one (a reload of its result), that
    result is opened as History opens it: nothing runs again."""
    ask, ss = AskState(), st.session_state
    if ask.link_read:
        return
    ask.link_read = True
    question = _param(QUESTION_PARAM)
    scope = [str(d) for d in st.query_params.get_all(SCOPE_PARAM)]
    reopened = None
    if question and ask.trace is None:
        try:
            rows = recent(limit=1)
            if rows and rows[0]["question"] == question:
                reopened = (rows[0]["id"], open_from_history(rows[0]["id"]))
        except (KeyError, ValueError, sqlite3.Error) as exc:
            # The question still comes back below; say why its result did not.
            st.warning(
                f"The linked question's last result could not be reopened: {plain(str(exc))}"
            )
    _restore_tuning(reopened)
    if question and not ss.get(qc.QUESTION):
        ss[qc.QUESTION] = question
    if scope or question:  # the link's scope (none: all documents) was on screen, over the
        ss[f"qs_scope_{ss.qs_corpus}"] = scope  # logged run's: a change not asked yet stays


def _restore_tuning(reopened: tuple[int, Trace] | None) -> None:
    """Step 2's values in the link go back into their widgets, over the reopened result's
    logged ones (which open_from_history has just applied). With a reopened result the link
    describes the whole step 2 on screen: a control it leaves out was at its default (the
    link keeps only the others). What the link moved away from the logged run is noted, so
    the page shows that result retuned (logged_controls). A value the link cannot give (not
    a number, out of range, not a choice) is ignored, as if absent: the link is anyone's."""
    ss, moved = st.session_state, {}
    for key, path in TUNED.items():
        raw = _param(key)
        value = None if raw is None else _from_link(key, path, raw)
        if value is None and reopened is None:
            continue  # no result to describe: the session's own value stays
        if value is None:
            value = qc.WIDGET_DEFAULTS[key]
        ss[key] = value
        logged = None if reopened is None else qc.setting(reopened[1].settings, path)
        if logged is not None and logged != value:
            moved[path] = logged
    AskState().link_tuned = (reopened[0], moved) if reopened is not None and moved else None


def _from_link(key: str, path: str, raw: str) -> Any:
    """A step-2 value as the link spells it, or None when the widget could not show it."""
    default = qc.WIDGET_DEFAULTS[key]
    if isinstance(default, bool):
        return {"true": True, "false": False}.get(raw)
    meta = qc.info(path)
    if isinstance(default, str):
        return raw if raw in dict(meta.choices) else None
    try:
        number = float(raw)
    except ValueError:
        return None
    low, high = meta.widget_range
    if not (math.isfinite(number) and low <= number <= high):
        return None
    if meta.step:  # on the slider's steps only (250 characters for the budget)
        steps = (number - low) / meta.step
        if not math.isclose(steps, round(steps), abs_tol=1e-6):
            return None
    if isinstance(default, int):
        return int(number) if number.is_integer() else None
    return number


def _link_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def keep_tuning() -> None:
    """Step 2's values into the link, only those off their defaults (a clean link). Called in
    the story's fragment, where these controls are: a slider move reruns only that."""
    ss = st.session_state
    for key in TUNED:
        value = ss.get(key)
        if value is None or value == qc.WIDGET_DEFAULTS[key]:
            if key in st.query_params:
                del st.query_params[key]
        elif _param(key) != (text := _link_text(value)):
            st.query_params[key] = text


def logged_controls(settings: QuerySettings) -> dict[str, Any]:
    """The controls a result opened from elsewhere is shown for: the sidebar as found (the
    run's own settings, applied when opened), except the step-2 values a reload's link moved
    away from the logged run, which read as logged: the slider rerun then retunes the
    result to the link's values, and its banner names them ("Final top-k: 5 → 3")."""
    ask = AskState()
    tuned = ask.take("link_tuned")
    if tuned is not None and tuned[0] == ask.trace_id and ask.origin == "history":
        for path, value in tuned[1].items():
            settings = settings.set(path, value)
    return settings.to_dict()


def restore_after_visit(scope_key: str, kind: str) -> None:
    """Back on Ask from another page: what the widgets lost comes back from the session copies
    (only then: an emptied box on Ask itself is the user's choice)."""
    if not arrived_on(PAGE):
        return
    ask, ss = AskState(), st.session_state
    if not ss.get(qc.QUESTION) and ask.kept_question:
        ss[qc.QUESTION] = ask.kept_question
    if not ss.get(scope_key) and ask.kept_scope.get(kind):
        ss[scope_key] = list(ask.kept_scope[kind])


def keep(scope_key: str, kind: str) -> None:
    """After the question box and the scope are drawn: copy them into the session and the link
    (before any answer runs, so a switch or reload midway loses neither)."""
    ask, ss = AskState(), st.session_state
    question = str(ss.get(qc.QUESTION) or "")
    scope = [str(d) for d in ss.get(scope_key) or []]
    ask.keep_inputs(kind, question, scope)
    if question and len(question) <= URL_MAX_CHARS:
        if _param(QUESTION_PARAM) != question:
            st.query_params[QUESTION_PARAM] = question
    elif QUESTION_PARAM in st.query_params:
        del st.query_params[QUESTION_PARAM]
    if scope:
        if st.query_params.get_all(SCOPE_PARAM) != scope:
            st.query_params[SCOPE_PARAM] = scope
    elif SCOPE_PARAM in st.query_params:
        del st.query_params[SCOPE_PARAM]


def _param(name: str) -> str | None:
    value: Any = st.query_params.get(name)
    return str(value) if value else None


def interrupted_notice(shown: Trace | None, ask_again: Callable[[str], None]) -> None:
    """An Ask that started and never stored its trace: Streamlit stopped its run (the user
    left the page, or moved a control, while it answered). Said with a button that asks it
    again, instead of the previous answer standing under the new question unremarked."""
    ask = AskState()
    running = ask.running
    if running is None:
        return
    question = running.get("question", "")
    before = (
        f" The result below is that of your previous question “{plain(shown.question)}”."
        if shown is not None and shown.question != question
        else ""
    )
    st.warning(
        f"**Your question “{plain(question)}” was interrupted** when you left the page (or "
        f"changed a control) before its answer was ready: nothing of it was stored.{before}",
        icon=":material/pause_circle:",
    )
    again, dismiss = st.columns([2, 1])
    again.button(
        "Ask again",
        key="ask_interrupted_again",
        on_click=ask_again,
        args=(question,),
        icon=":material/play_arrow:",
        type="primary",
    )
    dismiss.button("Dismiss", key="ask_interrupted_dismiss", on_click=_forget_interrupted)


def _forget_interrupted() -> None:
    AskState().running = None
