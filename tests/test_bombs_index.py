"""Issue 28, rows 6-8 and 11-13: hostile index folders and user JSON files are refused in
one line, nothing unbounded is read, and the CLI's notes are escaped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from tests import bombs
from tests.conftest import SAMPLES
from treerag_core.base import artifacts
from treerag_core.base.errors import EvalDataError, IndexFormatError
from treerag_core.index.store import load_index, save_index

DEEP = bombs.nested_json(200_000)


@pytest.fixture()
def saved(tmp_path, hashing_index) -> Path:
    return save_index(hashing_index, tmp_path / "idx")


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize("make", [_fifo, _dev_zero], ids=["fifo", "dev-zero"])
@pytest.mark.parametrize(
    "read",
    [artifacts.read_json, artifacts.read_jsonl, artifacts.read_text],
    ids=lambda f: f.__name__,
)
def test_checked_reader_refuses_devices_and_fifos_without_reading(tmp_path, make, read):
    path = tmp_path / "file.json"
    make(path)
    with pytest.raises(IndexFormatError, match=r"not a regular file|symlink"):
        read(path)


def test_checked_reader_refuses_a_symlink_to_a_regular_file_outside(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": 1}')
    link = tmp_path / "idx" / "reports.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(IndexFormatError, match="symlink"):
        artifacts.read_json(link, dict)


def test_npy_through_the_checked_reader(tmp_path):
    _fifo(tmp_path / "v.npy")
    with pytest.raises(IndexFormatError, match="not a regular file"):
        artifacts.read_npy(tmp_path / "v.npy", 4)


def test_index_file_as_fifo_is_an_index_error_not_a_hang(saved):
    _fifo(saved / "chunks.jsonl")
    with pytest.raises(IndexFormatError, match=r"chunks.jsonl"):
        load_index(saved)


def test_optional_layers_file_as_dev_zero_is_refused_not_skipped(saved):
    from treerag_core.strategies.drilldown.layers import LAYERS_JSON, load_layers

    _dev_zero(saved / LAYERS_JSON)
    with pytest.raises(IndexFormatError, match="symlink"):
        load_layers(saved, 8, "rebuild")


def test_hirag_reports_symlinked_outside_are_refused(saved, tmp_path):
    from treerag_core.strategies.hirag.store import read_llm_reports, stored_reports_path

    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps([{"community": "c1", "title": "leaked"}]))
    path = stored_reports_path(saved)
    path.parent.mkdir(exist_ok=True)
    path.symlink_to(outside)
    with pytest.raises(IndexFormatError, match="symlink"):
        read_llm_reports(path)


def test_hirag_folder_symlinked_outside_is_refused(saved, tmp_path):
    from treerag_core.strategies.hirag.store import has_hirag

    (tmp_path / "other").mkdir()
    (saved / "hirag").symlink_to(tmp_path / "other")
    with pytest.raises(IndexFormatError, match="symlink"):
        has_hirag(saved)


def test_deep_json_in_an_index_file_is_corrupt(saved):
    (saved / "manifest.json").write_bytes(DEEP)
    with pytest.raises(IndexFormatError, match="nested too deeply"):
        load_index(saved)


def test_deep_json_report_upload_and_path_and_questions(tmp_path):
    from treerag_core.evaluation.analysis import parse_report
    from treerag_core.evaluation.dataset import load_dataset
    from treerag_core.evaluation.report import load_report

    with pytest.raises(EvalDataError, match="nested too deeply"):
        parse_report(DEEP, "report.json")
    (tmp_path / "report.json").write_bytes(DEEP)
    with pytest.raises(EvalDataError, match="nested too deeply"):
        load_report(tmp_path / "report.json", roots=[tmp_path])
    folder = tmp_path / "set"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("# A\n\ntext\n")
    (folder / "questions.jsonl").write_bytes(DEEP + b"\n")
    with pytest.raises(EvalDataError, match="nested too deeply"):
        load_dataset(folder)


def test_manifest_without_fingerprint_is_refused(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    del manifest["embedder"]["fingerprint"]
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="fingerprint"):
        load_index(saved)


def test_fortran_order_embeddings_say_so(saved, hashing_index):
    np.save(saved / "embeddings.npy", np.asfortranarray(hashing_index.embeddings))
    with pytest.raises(IndexFormatError, match="Fortran"):
        load_index(saved)


def test_cli_rebuild_note_escapes_control_characters(tmp_path, capsys):
    from treerag_core.cli import main

    out = tmp_path / "ix"
    paper = str(SAMPLES / "test_paper.md")
    assert main(["index", "--input", paper, "--output", str(out), "--mock"]) == 0
    rows = (out / "chunks.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["node_id"] = "evil\x1b]52;c;aGk=\x07\x1b[2J"  # a node that does not exist
    (out / "chunks.jsonl").write_text("\n".join([json.dumps(first), *rows[1:]]) + "\n")
    capsys.readouterr()
    assert main(["index", "--input", paper, "--output", str(out), "--mock"]) == 0
    err = capsys.readouterr().err
    assert "rebuilding from scratch" in err
    assert "\x1b" not in err and "\x07" not in err
