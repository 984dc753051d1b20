"""Reading a user-named file: containment after symlinks, no devices or FIFOs, size first."""

from __future__ import annotations

import os

import pytest

from treerag_core.base.errors import UnsafePathError
from treerag_core.base.safepaths import (
    allowed_roots,
    read_bytes_checked,
    read_bytes_inside,
    resolve_inside,
)


def test_path_inside_a_root_is_read(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    assert read_bytes_inside(tmp_path / "a.json", [tmp_path]) == b"{}"


def test_dev_zero_is_refused_before_any_read(tmp_path):
    with pytest.raises(UnsafePathError, match="outside"):
        read_bytes_inside("/dev/zero", [tmp_path])
    # Even when a root contained it, a device is not a regular file.
    with pytest.raises(UnsafePathError, match="device"):
        read_bytes_checked("/dev/zero")


def test_dotdot_escape_is_refused(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    with pytest.raises(UnsafePathError, match="outside"):
        read_bytes_inside(root / ".." / "secret.txt", [root])


def test_symlink_out_of_the_root_is_refused(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    (root / "link.json").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(UnsafePathError, match="outside"):
        read_bytes_inside(root / "link.json", [root])


def test_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePathError, match="FIFO"):
        read_bytes_inside(fifo, [tmp_path])


def test_size_is_checked_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(10_000_000)  # sparse: the size is known without writing the bytes
    with pytest.raises(UnsafePathError, match="larger than the limit"):
        read_bytes_inside(big, [tmp_path], max_bytes=1_000_000)


def test_symlink_loop_is_a_clear_error(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(UnsafePathError, match="cannot resolve the path \\(Symlink loop"):
        read_bytes_inside(tmp_path / "a", [tmp_path])


def test_folder_is_not_a_file(tmp_path):
    with pytest.raises(UnsafePathError, match="folder"):
        read_bytes_checked(tmp_path)


def test_allowed_roots_are_the_data_folder_and_eval_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("TREERAG_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("TREERAG_EVAL_DIRS", str(tmp_path / "e"))
    assert allowed_roots() == (tmp_path / "d", tmp_path / "e")
    assert resolve_inside(tmp_path / "e" / "x" / "report.json") == tmp_path / "e/x/report.json"
    with pytest.raises(UnsafePathError):
        resolve_inside(tmp_path / "elsewhere.json")
