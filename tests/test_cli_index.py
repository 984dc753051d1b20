"""`index`: what a re-run changes against the folder's previous index, one run per folder."""

from __future__ import annotations

import fcntl
import subprocess
import sys

import pytest

from tests.conftest import REPO, SAMPLES
from treerag_core.cli import main
from treerag_core.index.store import lock_path_of, run_lock

DOCS = ("test_paper.md", "zh_sample.md", "README.md", "1908.10461.md", "劳动合同法(2012-12-28).md")


def _index(capsys, out, *names: str, extra: tuple[str, ...] = ()) -> tuple[int, str, str]:
    paths = [str(SAMPLES / n) for n in names]
    code = main(["index", "--input", *paths, "--output", str(out), "--mock", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_subset_names_what_it_removed_and_what_it_reused(tmp_path, capsys):
    out = tmp_path / "ix"
    code, stdout, _ = _index(capsys, out, *DOCS)
    assert code == 0 and "indexed 5 documents" in stdout
    assert "changes against" not in stdout  # a new folder: nothing to compare with
    code, stdout, _ = _index(capsys, out, "test_paper.md")
    assert code == 0
    assert "indexed 1 document:" in stdout
    assert (
        f"changes against the previous index in {out}: 0 added, 0 updated, "
        "1 unchanged (vectors reused), 4 removed (1908.10461.md, README.md, "
        "zh_sample.md and 1 more)"
    ) in stdout


def test_added_updated_and_re_embedded_documents_are_counted(tmp_path, capsys):
    out, doc = tmp_path / "ix", tmp_path / "notes.md"
    doc.write_text("# Notes\n\nThe first version of a small note.\n", encoding="utf-8")
    paper = str(SAMPLES / "test_paper.md")
    assert main(["index", "--input", paper, "--output", str(out), "--mock"]) == 0
    doc.write_text("# Notes\n\nThe second version, other words.\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["index", "--input", paper, str(doc), "--output", str(out), "--mock"]) == 0
    assert "1 added, 0 updated, 1 unchanged (vectors reused), 0 removed" in capsys.readouterr().out
    doc.write_text("# Notes\n\nA third version.\n", encoding="utf-8")
    args = ["index", "--input", paper, str(doc), "--output", str(out), "--mock"]
    assert main([*args, "--chunk-size", "300"]) == 0
    assert (
        "0 added, 1 updated, 1 unchanged (0 reused their vectors, 1 re-embedded: "
        "the embedder or chunking changed), 0 removed"
    ) in capsys.readouterr().out


def test_help_says_the_folder_becomes_exactly_the_inputs(capsys):
    with pytest.raises(SystemExit):
        main(["index", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "updated in place" not in text
    assert "becomes an index of exactly the --input documents" in text


def test_a_second_run_on_the_same_folder_refuses_at_start(tmp_path, capsys):
    out = tmp_path / "ix"
    # Another holder of `.ix.lock` (its own open file, as another process would have).
    with open(lock_path_of(out.resolve()), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, stdout, err = _index(capsys, out, "test_paper.md")
    assert code == 2 and stdout == ""
    assert err.strip() == (
        f"error: another index run is writing to {out}; wait for it or pick another --output"
    )
    assert not out.exists()  # it did no work
    assert _index(capsys, out, "test_paper.md")[0] == 0  # the lock is freed


def test_two_processes_one_refused(tmp_path):
    """A real second process: the lock holds across processes for the whole run."""
    out = tmp_path / "ix"
    script = (
        f"from treerag_core.index.store import run_lock\nwith run_lock({str(out)!r}):\n"
        "    print('held', flush=True)\n    input()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        paper = str(SAMPLES / "test_paper.md")
        second = subprocess.run(
            [sys.executable, "-m", "treerag_core", "index", "--input", paper,
             "--output", str(out), "--mock"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        holder.communicate("\n", timeout=30)
    assert second.returncode == 2
    assert "another index run is writing to" in second.stderr


def test_a_save_inside_the_run_reuses_its_lock(tmp_path):
    """flock belongs to an open file: a save inside the run must not wait for itself."""
    from tests.conftest import sample_sources
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.index.store import save_index

    index = build_index(
        sample_sources(["test_paper.md"]),
        IndexSettings(embedder="hashing"),
        get_embedder("hashing"),
    )
    with run_lock(tmp_path / "ix"):
        save_index(index, tmp_path / "ix", lock_timeout=0.1)
    assert (tmp_path / "ix" / "manifest.json").is_file()


def test_the_converter_notes_are_printed_so_inferred_sections_are_said(tmp_path, capsys):
    doc = tmp_path / "flat.txt"
    doc.write_text("\n\n".join(f"Paragraph {k}: " + "words about things " * 14 for k in range(40)))
    code = main(["index", "--input", str(doc), "--output", str(tmp_path / "ix"), "--mock"])
    err = capsys.readouterr().err
    assert code == 0
    assert "note: flat.txt: " in err and "sections inferred: no headings found" in err
    assert "named by its first line" in err
