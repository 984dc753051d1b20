"""Checked readers for index artifacts (bounded JSON / JSONL, header-checked .npy, typed rows).

Every file an index folder holds is read here: opened without following a symlink and
without blocking, refused unless a regular file, its size checked before a byte is read.
"""

from __future__ import annotations

import functools
import json
import math
import os
import types
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import numpy as np

from treerag_core.base.errors import IndexFormatError, UnsafePathError
from treerag_core.base.safepaths import open_regular

# An index folder may come from anyone: nothing in it is read whole before its size is known.
MAX_JSON_BYTES = 512 * 2**20  # the largest real artifact (a corpus's graphs.json) is ~20 MB
MAX_NPY_BYTES = 8 * 2**30  # besides the exact size its header and expected shape imply
MAX_NPY_HEADER = 10_000

T = TypeVar("T")


def _hint(hint: str) -> str:
    return f"; {hint}" if hint else ""


def _open(path: Path, limit: int, hint: str) -> tuple[BinaryIO, int]:
    """The file opened through the checked reader: a regular file (not a symlink, device or
    FIFO), its size known and within `limit` before a byte is read."""
    try:
        fh, size = open_regular(path, 2**62)
    except UnsafePathError as exc:
        why = str(exc).removeprefix(f"{path}: ")
        raise IndexFormatError(f"{path} cannot be read ({why}){_hint(hint)}") from exc
    if size > limit:
        fh.close()
        raise IndexFormatError(
            f"{path} holds {size:,} bytes, more than the {limit:,} an index file may hold"
            f"{_hint(hint)}"
        )
    return fh, size


def _read(path: Path, limit: int, hint: str) -> bytes:
    fh, size = _open(path, limit, hint)
    try:
        with fh:
            return fh.read(size)
    except OSError as exc:
        raise IndexFormatError(f"{path} cannot be read ({exc}){_hint(hint)}") from exc


def present(path: Path) -> bool:
    """Whether anything is at `path`, a symlink, FIFO or device included: an optional index
    file is then read (and refused if it is not a regular file), never skipped silently."""
    return os.path.lexists(path)


def parse_json(text: str | bytes) -> Any:
    """`json.loads`, with nesting past the parser's recursion limit a ValueError: a user's
    file of 200,000 `[` is "not JSON", not a RecursionError reaching a traceback."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("nested too deeply to read") from exc


def read_text(path: Path, hint: str = "") -> str:
    """The UTF-8 text of an index file, through the checked reader (at most MAX_JSON_BYTES)."""
    data = _read(path, MAX_JSON_BYTES, hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IndexFormatError(f"{path} cannot be read ({exc}){_hint(hint)}") from exc


def read_json(path: Path, expect: type | None = None, hint: str = "") -> Any:
    """The JSON value in `path` (at most MAX_JSON_BYTES), of type `expect` when given.

    Raises:
        IndexFormatError: the file is missing, not a regular file, too large, not UTF-8 JSON
            (nesting too deep included) or of another type; the message names the file.
    """
    raw = _read(path, MAX_JSON_BYTES, hint)
    try:
        data = parse_json(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too deep
        raise IndexFormatError(f"{path} is corrupt ({exc}){_hint(hint)}") from exc
    if expect is not None and not isinstance(data, expect):
        raise IndexFormatError(
            f"{path} is corrupt (holds a JSON {type(data).__name__}, expected "
            f"{_json_name(expect)}){_hint(hint)}"
        )
    return data


def read_jsonl(path: Path, hint: str = "") -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (blank lines skipped), read as above."""
    raw = _read(path, MAX_JSON_BYTES, hint)
    rows: list[dict[str, Any]] = []
    try:
        text = raw.decode("utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            row = parse_json(line)
            if not isinstance(row, dict):
                raise ValueError(f"line {number} is a JSON {type(row).__name__}, not an object")
            rows.append(row)
    except ValueError as exc:
        raise IndexFormatError(f"{path} is corrupt ({exc}){_hint(hint)}") from exc
    return rows


def read_npy(
    path: Path,
    dim: int,
    rows: int | None = None,
    dtypes: tuple[type, ...] = (np.float32,),
    hint: str = "",
) -> np.ndarray:
    """A 2-D float matrix of `dim` columns (and `rows` rows when given), as float32.

    The header is read first: a body of the wrong shape, dtype or length is refused without
    being read, and nothing is unpickled (a hostile file cannot run code or make the loader
    read gigabytes).

    Raises:
        IndexFormatError: missing, not a .npy file, another shape or dtype, or a body whose
            length disagrees with its header; the message names the file.
    """
    where = _hint(hint)
    opened, size = _open(path, MAX_NPY_BYTES, hint)
    fmt = np.lib.format
    try:
        with opened as fh:
            version = fmt.read_magic(fh)
            if version == (1, 0):
                header = fmt.read_array_header_1_0(fh, max_header_size=MAX_NPY_HEADER)
            elif version == (2, 0):
                header = fmt.read_array_header_2_0(fh, max_header_size=MAX_NPY_HEADER)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = header
            allowed = [np.dtype(d) for d in dtypes]
            if fortran:
                raise IndexFormatError(
                    f"{path} is stored in Fortran (column-major) order, expected C (row-major) "
                    f"order{where}"
                )
            if (
                dtype not in allowed
                or len(shape) != 2
                or shape[1] != dim
                or (rows is not None and shape[0] != rows)
            ):
                want = f"({'n' if rows is None else rows}, {dim})"
                names = " or ".join(d.name for d in allowed)
                raise IndexFormatError(
                    f"{path} has shape {tuple(shape)} {dtype}, expected {want} {names}{where}"
                )
            count = int(shape[0]) * int(shape[1])
            expected = fh.tell() + count * dtype.itemsize
            if size != expected:
                raise IndexFormatError(
                    f"{path} holds {size:,} bytes, expected {expected:,} for its header's "
                    f"shape {tuple(shape)}{where}"
                )
            data = np.fromfile(fh, dtype=dtype, count=count)
    except (OSError, ValueError, EOFError) as exc:
        raise IndexFormatError(f"{path} is not a valid .npy file ({exc}){where}") from exc
    return data.reshape(shape).astype(np.float32, copy=False)


def typed_row(cls: type[T], row: Any, where: str, hint: str = "") -> T:
    """`cls(**row)` for a frozen dataclass, after checking every field's JSON type.

    Lists become tuples where the field is a tuple. A wrong type, a missing field or an
    unknown one is an IndexFormatError naming `where` (file and row) and the field.
    """
    if not isinstance(row, dict):
        kind = type(row).__name__
        raise IndexFormatError(f"{where} is a JSON {kind}, not an object{_hint(hint)}")
    hints = _hints(cls)
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(row) - names)
    if unknown:
        raise IndexFormatError(f"{where} has unknown fields {unknown}{_hint(hint)}")
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name not in row:
            if f.default is MISSING and f.default_factory is MISSING:
                raise IndexFormatError(f"{where} lacks the field {f.name!r}{_hint(hint)}")
            continue
        value = row[f.name]
        if not _matches(value, hints[f.name]):
            raise IndexFormatError(
                f"{where}: field {f.name!r} is {value!r:.60} ({type(value).__name__}), "
                f"expected {_type_name(hints[f.name])}{_hint(hint)}"
            )
        values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)  # evaluated once per class: a big index has 10^5 rows


def _matches(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(_matches(value, h) for h in get_args(hint))
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in get_args(hint))
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, list | tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(map(_matches, value, args))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return isinstance(value, origin or hint)


def is_finite_number(value: Any) -> bool:
    """A JSON number that is neither a bool nor NaN/Infinity (which Python's json accepts)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_whole_number(value: Any) -> bool:
    """A JSON whole number (an offset or a count), not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _json_name(expect: type) -> str:
    return {dict: "object", list: "array", str: "string"}.get(expect, expect.__name__)
