"""AppTest: treerag-kg on an index without leaf graphs points to the explorer's own rebuild
(Documents → Rebuild with other settings), before Ask and when Ask stops; never the CLI flag."""

from __future__ import annotations

import pytest

from tests.app_helpers import ask, open_app, page_text
from tests.conftest import keyless_app
from treerag_core.base.errors import IndexFormatError, MissingGraphsError
from ui.common.graph_guidance import documents_note, missing_graphs_message


@pytest.fixture(scope="module", autouse=True)
def app_env(tmp_path_factory):
    with keyless_app(tmp_path_factory.mktemp("guidance_data")) as data:
        yield data


def test_the_engine_error_is_named_and_still_an_index_format_error():
    assert issubclass(MissingGraphsError, IndexFormatError)  # the CLI's handling is unchanged


def test_each_corpus_kind_gets_explorer_steps_not_the_cli_flag():
    for kind in ("samples", "uploads", "eval", None):
        message = missing_graphs_message(kind)
        assert "Rebuild with other settings" in message and "--graph-min" not in message
    assert "Copy the sample documents" in missing_graphs_message("samples")
    assert "Copy the sample" not in documents_note("uploads")
    assert "first document" not in documents_note("uploads") + documents_note("samples")


def test_treerag_kg_on_the_samples_warns_at_once_and_stops_with_the_explorer_steps():
    at = open_app()
    assert "treerag-kg" not in page_text(at, "warning", sep=" ", plain=True)
    at.selectbox(key="qs_strategy").set_value("treerag-kg").run()
    assert not at.exception, at.exception
    assert missing_graphs_message("samples") in [w.value for w in at.warning]
    ask(at, "How many epochs was the model trained for?")
    errors = page_text(at, "error", sep=" ", plain=True)
    assert "Rebuild with other settings" in errors
    assert "--graph-min-leaf-chars" not in errors and "python -m" not in errors


def test_the_stop_message_is_the_one_for_the_corpus_asked_on():
    from ui.common.text_safety import error_markdown

    exc = MissingGraphsError("this index has no knowledge graphs")
    assert error_markdown(exc, "uploads") == missing_graphs_message("uploads")
    assert "Copy the sample" not in error_markdown(exc, "uploads")
    assert "Copy the sample" in error_markdown(exc, "samples")
