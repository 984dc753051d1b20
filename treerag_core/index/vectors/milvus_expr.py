"""Pure builders for Milvus: filter expressions with escaped values, and our tokens as terms.

Kept apart from the client so they are tested by exact string equality (no engine needed).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence

# A field name we put in an expression: ours, never a user's, but checked all the same.
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Milvus collection names: a letter or underscore, then letters, digits, underscores.
_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")


def check_collection_name(name: str) -> str:
    """The name itself, or a ValueError naming it (Milvus would refuse it later, less clearly)."""
    if not _COLLECTION.fullmatch(name or ""):
        raise ValueError(
            f"a Milvus collection name is a letter or '_' then letters, digits or '_' "
            f"(at most 200), but got {name!r}"
        )
    return name


def quote(value: str) -> str:
    """A string literal for a Milvus expression: double-quoted, with `"` and `\\` escaped.

    Milvus reads string literals with Go-style escapes; JSON's escaping is a subset of those
    (`\\"`, `\\\\`, `\\n`, `\\uXXXX`), so a value holding quotes, backslashes or a whole
    `" or kind != "` stays one literal and can never close the string and add a clause.
    (Milvus Lite does not take `filter_params` templates, so values are written inline.)
    """
    if not isinstance(value, str):
        raise TypeError(f"a filter value must be a str, but got {type(value).__name__}")
    return json.dumps(value, ensure_ascii=False)


def _field(name: str) -> str:
    if not _FIELD.fullmatch(name):
        raise ValueError(f"not a field name: {name!r}")
    return name


def equals(field: str, value: str) -> str:
    return f"{_field(field)} == {quote(value)}"


def one_of(field: str, values: Iterable[str]) -> str:
    """`field in ["a", "b"]`, values escaped and de-duplicated in their given order."""
    unique = list(dict.fromkeys(values))
    return f"{_field(field)} in [{', '.join(quote(v) for v in unique)}]"


def all_of(clauses: Sequence[str]) -> str:
    """Clauses joined by `and`, each in parentheses; "" when there are none (no filter)."""
    return " and ".join(f"({c})" for c in clauses if c)


def term(token: str) -> str:
    """One token of ours as an ASCII word the engine's `standard` analyzer keeps whole.

    Milvus Lite offers only the `standard` and `jieba` tokenizers: `standard` would split a
    jieba word such as 合同法 into single characters, and `jieba` would re-cut it its own way.
    A 64-bit blake2b of the token, in hex behind a letter, is one word to both, so the engine
    indexes exactly our tokens (collisions: ~3e-8 for a million distinct tokens).
    """
    return "t" + hashlib.blake2b(token.encode("utf-8"), digest_size=8).hexdigest()


def terms(tokens: Iterable[str]) -> str:
    """Our tokens as the engine's text: one word per token, repeats kept (they are the tf)."""
    return " ".join(term(t) for t in tokens)
