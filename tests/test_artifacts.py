"""The checked readers of index artifacts: bounded JSON, header-checked .npy, typed rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from treerag_core.base import artifacts
from treerag_core.base.artifacts import read_json, read_jsonl, read_npy, read_text, typed_row
from treerag_core.base.errors import IndexFormatError
from treerag_core.base.types import Chunk, DocumentInfo, TreeNode


def test_json_over_the_size_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(["x" * 200]))
    monkeypatch.setattr(artifacts, "MAX_JSON_BYTES", 100)
    for read in (read_json, read_jsonl, read_text):
        with pytest.raises(
            IndexFormatError, match=r"big\.json holds 2\d\d bytes, more than the 100"
        ):
            read(path, hint="rebuild it")


def test_json_of_another_type_or_not_json_names_the_file(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("[1, 2]")
    assert read_json(path) == [1, 2]
    with pytest.raises(
        IndexFormatError, match=r"a\.json is corrupt \(holds a JSON list, expected object\); fix"
    ):
        read_json(path, dict, "fix")
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(IndexFormatError, match=r"a\.json is corrupt"):
        read_json(path)
    path.write_text("[" * 100_000 + "]" * 100_000)  # deep nesting: no RecursionError escapes
    with pytest.raises(IndexFormatError, match=r"a\.json is corrupt"):
        read_json(path)
    with pytest.raises(IndexFormatError, match=r"missing\.json cannot be read"):
        read_json(tmp_path / "missing.json")


def test_jsonl_rows_must_be_objects(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2}\n')
    assert read_jsonl(path) == [{"a": 1}, {"b": 2}]
    path.write_text('{"a": 1}\n[1]\n')
    with pytest.raises(IndexFormatError, match=r"rows\.jsonl is corrupt \(line 2 is a JSON list"):
        read_jsonl(path)


def test_npy_round_trip_and_float16_widened(tmp_path):
    path = tmp_path / "v.npy"
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(path, matrix)
    assert (read_npy(path, 4, 3) == matrix).all()
    np.save(path, matrix.astype(np.float16))
    with pytest.raises(IndexFormatError, match="float16, expected"):
        read_npy(path, 4, 3)
    got = read_npy(path, 4, None, (np.float16, np.float32))
    assert got.dtype == np.float32 and (got == matrix).all()


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (
            lambda p: np.save(p, np.zeros((3, 5), np.float32)),
            r"shape \(3, 5\) float32, expected \(3, 4\)",
        ),
        (lambda p: np.save(p, np.zeros((2, 4), np.float32)), r"shape \(2, 4\)"),
        (lambda p: np.save(p, np.zeros(12, np.float32)), r"shape \(12,\)"),
        (lambda p: np.save(p, np.zeros((3, 4), np.float64)), "float64"),
        (lambda p: np.save(p, np.asfortranarray(np.zeros((3, 4), np.float32))), "expected"),
        (
            lambda p: np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True),
            "object|expected",
        ),
        (lambda p: p.write_bytes(b"garbage"), "not a valid .npy file"),
        (lambda p: p.write_bytes(b""), "not a valid .npy file"),
    ],
    ids=["columns", "rows", "1-d", "dtype", "fortran", "pickle", "garbage", "empty"],
)
def test_npy_of_another_shape_or_kind_is_refused(tmp_path, write, message):
    path = tmp_path / "v.npy"
    write(path)
    with pytest.raises(IndexFormatError, match=message) as info:
        read_npy(path, 4, 3, hint="rebuild it")
    assert str(path) in str(info.value) and str(info.value).endswith("rebuild it")


def test_npy_body_must_match_its_header_and_is_not_read_when_too_long(tmp_path):
    path = tmp_path / "v.npy"
    np.save(path, np.zeros((3, 4), np.float32))
    with path.open("r+b") as fh:
        fh.truncate(1 << 30)  # sparse: a 1 GB body behind a (3, 4) header
    with pytest.raises(IndexFormatError, match="expected"):
        read_npy(path, 4, 3)
    np.save(path, np.zeros((3, 4), np.float32))
    path.write_bytes(path.read_bytes()[:-4])  # one float short
    with pytest.raises(IndexFormatError, match="bytes, expected"):
        read_npy(path, 4, 3)


def test_typed_rows_check_every_field(tmp_path):
    row = {
        "chunk_id": "c1", "text": "t", "source_node_id": "n", "heading_path": "h",
        "doc_id": "d", "start": 0, "end": 1,
    }  # fmt: skip
    assert typed_row(Chunk, row, "chunks.jsonl: row 1").page_start is None
    bad = [
        ({**row, "text": 5}, "field 'text' is 5 \\(int\\), expected str"),
        ({**row, "start": True}, "field 'start'"),
        ({**row, "start": 1.5}, "field 'start'"),
        ({**row, "page_start": "2"}, "field 'page_start'"),
        ({**row, "evil": 1}, "unknown fields \\['evil'\\]"),
        ({k: v for k, v in row.items() if k != "text"}, "lacks the field 'text'"),
        ([1, 2], "is a JSON list, not an object"),
    ]
    for value, message in bad:
        with pytest.raises(IndexFormatError, match=message):
            typed_row(Chunk, value, "chunks.jsonl: row 1", "rebuild it")
    node = {
        "node_id": "n", "doc_id": "d", "heading": "h", "level": 1, "content": "",
        "start": 0, "end": 0, "heading_path": "h", "parent_id": None, "children": ["a", "b"],
    }  # fmt: skip
    assert typed_row(TreeNode, node, "nodes").children == ("a", "b")
    with pytest.raises(IndexFormatError, match="field 'children'"):
        typed_row(TreeNode, {**node, "children": ["a", 1]}, "nodes")
    doc = {
        "doc_id": "d", "name": "d", "title": "t", "language": "en", "sha256": "x",
        "size_chars": 1, "root_id": "n",
    }  # fmt: skip
    assert typed_row(DocumentInfo, doc, "manifest").language == "en"
    with pytest.raises(IndexFormatError, match="field 'language'"):
        typed_row(DocumentInfo, {**doc, "language": "fr"}, "manifest")


def test_number_checks_refuse_bools_nan_and_infinity():
    parsed = json.loads('[1, 2.5, -0.0, NaN, Infinity, -Infinity, true, 1.0, "1", null]')
    assert [artifacts.is_finite_number(v) for v in parsed] == [
        *[True] * 3,
        *[False] * 4,
        True,
        False,
        False,
    ]
    assert [artifacts.is_whole_number(v) for v in parsed] == [True, *[False] * 9]
