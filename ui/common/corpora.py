"""Corpus kinds, the keys that name them and the words the explorer shows for them."""

from __future__ import annotations

from typing import Literal

SAMPLES, UPLOADS, EVAL = "samples", "uploads", "eval"  # corpus kinds
KEY_PREFIX = {SAMPLES: "samples", UPLOADS: "ws", EVAL: "eval"}  # a corpus key's first part

LabelForm = Literal["menu", "short", "phrase"]
# menu: a corpus choice (the Ask sidebar, Documents' preview); short: a History row;
# phrase: inside a sentence ("asked … on the sample documents").
_WORDS: dict[str | None, dict[LabelForm, str]] = {
    SAMPLES: {"menu": "Sample documents", "short": "samples",
              "phrase": "the sample documents"},
    UPLOADS: {"menu": "My uploads", "short": "my uploads",
              "phrase": "your uploads as they were then"},
    EVAL: {"menu": "Eval set", "short": "eval set", "phrase": "an eval set"},
    None: {"menu": "Another corpus", "short": "?", "phrase": "another corpus"},
}  # fmt: skip


def corpus_key(kind: str, *parts: object) -> str:
    """The key of a corpus of `kind`; `parts` change whenever its node ids may change."""
    return ":".join([KEY_PREFIX[kind], *map(str, parts)])


def kind_of_key(key: str | None) -> str | None:
    """The corpus kind a key names, or None for a key no kind makes (an old or foreign log)."""
    prefix = str(key or "").split(":")[0]
    return next((kind for kind, p in KEY_PREFIX.items() if p == prefix), None)


def corpus_kind_of(key: str | None) -> str:
    """The kind a key names; the samples for an unknown key (the corpus every session has)."""
    return kind_of_key(key) or SAMPLES


def corpus_label(kind: str | None, form: LabelForm = "menu", name: str | None = None) -> str:
    """What the explorer calls a corpus of `kind` (None: unknown); `name` names an eval set."""
    words = _WORDS.get(kind, _WORDS[None])[form]
    return f"{words}: {name}" if name and kind == EVAL and form == "menu" else words


def key_label(key: str | None, form: LabelForm = "short") -> str:
    """What the explorer calls the corpus a logged key names (History, a stored result)."""
    return corpus_label(kind_of_key(key), form)
