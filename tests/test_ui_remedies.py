"""The explorer's words for engine errors that name a remedy (text_safety asks, never names one)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from treerag_core.base import errors
from treerag_core.base.errors import MissingGraphsError, QueryError, TreeRAGError
from ui.common.graph_guidance import missing_graphs_message
from ui.common.remedies import REMEDIES, explorer_message
from ui.common.text_safety import error_markdown


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_every_remedy_an_error_names_has_the_explorers_words():
    named = {c.remedy for c in _subclasses(TreeRAGError) if c.remedy is not None}
    assert named == {"leaf-graphs"}
    assert named <= set(REMEDIES)
    assert errors.MissingGraphsError.remedy == "leaf-graphs"


def test_a_remedy_with_no_wording_yet_keeps_the_errors_own_message():
    exc = QueryError("rebuild the index")
    exc.remedy = "not-worded-yet"  # an engine error named a remedy the explorer lacks
    assert explorer_message(exc) is None  # not a KeyError
    assert error_markdown(exc) == "rebuild the index"


def test_shown_time_is_to_the_minute():
    from ui.common.text_safety import shown_time

    assert shown_time("2026-11-22T23:40:17.123+00:00") == "2026-11-22 23:40"
    assert shown_time(None) == ""


def test_an_error_without_a_remedy_keeps_its_own_message():
    assert explorer_message(QueryError("too long")) is None
    assert explorer_message(ValueError("x")) is None
    assert error_markdown(QueryError("too long: 5,000 chars")) == "too long\\: 5,000 chars"


def test_missing_graphs_reads_the_explorer_steps_for_the_kind_asked_on():
    exc = MissingGraphsError("rebuild with --graph-min-leaf-chars 800")
    for kind in ("samples", "uploads", "eval", None):
        assert error_markdown(exc, kind) == missing_graphs_message(kind)
        assert "--graph-min" not in error_markdown(exc, kind)


def _page(kind: str | None) -> None:
    from treerag_core.base.errors import MissingGraphsError, QueryError
    from ui.common.text_safety import show_error

    show_error(MissingGraphsError("--graph-min-leaf-chars"), "Change the question.", kind=kind)
    show_error(QueryError("only stop words"), "Change the question.")


def test_show_error_drops_the_pages_next_step_only_when_the_explorer_worded_it():
    at = AppTest.from_function(_page, args=("uploads",), default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        missing_graphs_message("uploads"),
        "only stop words\n\nChange the question.",
    ]
