"""`--vector-store milvus` on the command line, against a real Milvus Lite engine."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from tests.test_cli import cli

pytestmark = pytest.mark.slow


def test_index_pushes_and_query_is_served_by_milvus(tmp_path):
    db, folder = str(tmp_path / "engine.db"), str(tmp_path / "index")
    docs = [str(SAMPLES / "test_paper.md"), str(SAMPLES / "zh_sample.md")]
    milvus = ["--vector-store", "milvus", "--milvus-uri", db]
    built = cli("index", "--input", *docs, "--output", folder, "--mock", *milvus, timeout=300)
    assert built.returncode == 0, built.stderr
    assert "milvus built: 2 documents" in built.stderr and "chunks in" in built.stderr
    asked = ["query", "--index", folder, "--mock", "--query", "How many epochs of training?"]
    served = cli(*asked, *milvus, timeout=300)
    plain = cli(*asked, timeout=300)
    assert served.returncode == 0, served.stderr
    assert ">>> Step 2: Hybrid Retrieval + Rerank" in served.stdout
    # The engine's scores are the in-process ones here (one collection = this corpus).
    assert (
        served.stdout.split(">>> Step 2")[1].split("Timing")[0]
        == (plain.stdout.split(">>> Step 2")[1].split("Timing")[0])
    )
    other = cli(*asked, *milvus, "--milvus-collection", "nothing_here", timeout=300)
    assert other.returncode == 2
    assert "Milvus has no collection 'nothing_here': run `milvus-push" in other.stderr


def test_milvus_without_a_uri_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("MILVUS_URI", raising=False)
    result = cli("milvus-push", "--index", str(tmp_path / "none"))
    assert result.returncode == 2
    assert result.stderr.startswith("error: --vector-store milvus needs --milvus-uri or MILVUS_URI")
