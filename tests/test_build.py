"""The API's one index build (`index_folder`): what the CLI, the explorer and the harness call."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SAMPLES
from treerag_core import IndexLLM, NoDocumentsError, index_folder, load_index
from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import LLMError
from treerag_core.cli import main

SETTINGS = IndexSettings(embedder="hashing")
PAPER, GUIDE = SAMPLES / "test_paper.md", SAMPLES / "zh_sample.md"


class FailingClient:
    """The LLM seam, down: every call fails as a connection error."""

    calls = 0

    def complete(self, prefix: str, rest: str, model: str, max_tokens: int, **_):
        FailingClient.calls += 1
        raise LLMError("the server is down", reason="connection")


def test_a_second_run_reuses_the_folder_index_and_holds_exactly_the_inputs(tmp_path):
    folder = tmp_path / "index"
    first = index_folder([PAPER, GUIDE], folder, SETTINGS)
    assert first.previous is None and first.folder == folder
    assert {d.name for d in load_index(folder).documents} == {PAPER.name, GUIDE.name}
    second = index_folder([PAPER], folder, SETTINGS)
    assert second.previous is not None  # the first run's index lent its vectors
    assert [d.name for d in load_index(folder).documents] == [PAPER.name]
    before = first.index.embeddings[
        [c.doc_id == second.index.chunks[0].doc_id for c in first.index.chunks]
    ]
    assert np.array_equal(before, second.index.embeddings)


def test_no_readable_input_is_an_error_that_lists_why_and_writes_nothing(tmp_path):
    bad = tmp_path / "empty.md"
    bad.write_text("")
    with pytest.raises(NoDocumentsError) as info:
        index_folder([bad], tmp_path / "index", SETTINGS)
    assert [r.name for r in info.value.rejected] == ["empty.md"]
    assert not (tmp_path / "index").exists()


def test_llm_parts_without_an_llm_fail_before_any_work(tmp_path):
    with pytest.raises(LLMError, match="llm_summaries needs an LLM"):
        index_folder(
            [PAPER], tmp_path / "index", IndexSettings(embedder="hashing", llm_summaries=True)
        )
    assert not (tmp_path / "index").exists()


def test_a_failing_llm_falls_back_to_local_summaries_and_says_so(tmp_path):
    settings = IndexSettings(embedder="hashing", llm_summaries=True)
    run = index_folder([PAPER], tmp_path / "index", settings, llm=IndexLLM(FailingClient(), "m"))
    assert FailingClient.calls > 0
    assert any(n.startswith("LLM summaries failed (the server is down)") for n in run.notes)
    assert run.index.settings.llm_summaries is False
    assert load_index(tmp_path / "index").settings.llm_summaries is False


def test_a_folder_that_cannot_be_written_keeps_the_index_in_memory_when_asked(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run = index_folder([PAPER], blocker / "index", SETTINGS, must_save=False)
    assert run.folder is None and run.index.documents[0].name == PAPER.name
    assert any("is not saved in" in n for n in run.notes)
    with pytest.raises(OSError):
        index_folder([PAPER], blocker / "index", SETTINGS)


def test_the_cli_and_the_api_build_the_same_index(tmp_path, capsys):
    assert main(["index", "--input", str(PAPER), "--output", str(tmp_path / "cli"), "--mock"]) == 0
    index_folder([PAPER], tmp_path / "api", SETTINGS)
    cli, api = load_index(tmp_path / "cli"), load_index(tmp_path / "api")
    assert [c.text for c in cli.chunks] == [c.text for c in api.chunks]
    assert [n.heading_path for n in cli.nodes.values()] == [
        n.heading_path for n in api.nodes.values()
    ]
    assert np.array_equal(cli.embeddings, api.embeddings)
