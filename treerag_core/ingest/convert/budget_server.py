"""The fork server of `convert.budget`: a fresh interpreter (`python -m
treerag_core.ingest.convert.budget_server`) that imports the converters once, then for each request
on stdin forks a child that sets its CPU and memory limits, converts, and answers. Being
single-threaded and started clean, it can fork safely and its children map little memory.

Protocol (both ways): an 8-byte big-endian length, then a pickle. Request: (name, data,
max_bytes, max_pages, cpu, memory, wall). Reply: (message, how the child ended), message
being ("ok", doc), ("cpu",), ("memory",), ("error", class name, text, refusal) or None when
the child died without one.
"""

from __future__ import annotations

import math
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
from typing import BinaryIO

# Imported here so every child starts with them loaded: a child only forks.
import docx  # noqa: F401
import lxml.etree  # noqa: F401
import pypdfium2  # noqa: F401

import treerag_core.ingest.convert.docx
import treerag_core.ingest.convert.html
import treerag_core.ingest.convert.pdf
import treerag_core.ingest.convert.plain  # noqa: F401
from treerag_core.base.errors import InputDocumentError
from treerag_core.ingest.convert.dispatch import convert_bytes

_HEADER = struct.Struct(">Q")


def read_frame(stream: BinaryIO) -> bytes | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def write_frame(stream: BinaryIO, body: bytes) -> None:
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


class _OutOfCPU(Exception):
    """SIGXCPU arrived: the CPU budget is spent."""


def _on_xcpu(signum, frame) -> None:
    raise _OutOfCPU


def _mapped_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(request: tuple, out: int) -> None:
    """In the forked child: limits, conversion, one reply on `out`; never returns."""
    name, data, max_bytes, max_pages, cpu, memory, _ = request
    try:
        signal.signal(signal.SIGXCPU, _on_xcpu)
        soft = max(1, math.ceil(cpu))  # whole seconds; a fresh child has used ~0 s
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))  # SIGKILL 1 s later
        resource.setrlimit(resource.RLIMIT_AS, (_mapped_bytes() + memory,) * 2)
        message: tuple = ("ok", convert_bytes(name, data, max_bytes, max_pages))
    except _OutOfCPU:
        message = ("cpu",)
    except MemoryError:
        message = ("memory",)
    except InputDocumentError as exc:
        message = ("error", type(exc).__name__, str(exc), getattr(exc, "refusal", None))
    except RecursionError:
        message = ("error", "CorruptDocumentError", f"{name}: nested too deeply to read", None)
    try:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        body = pickle.dumps(("memory",))
    with os.fdopen(out, "wb") as fh:
        write_frame(fh, body)
    os._exit(0)


def _serve_one(request: tuple) -> tuple:
    wall = request[6]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            _child(request, write_end)
        finally:
            os._exit(70)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + wall
    with os.fdopen(read_end, "rb", buffering=0) as fh:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fh], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)  # past the wall-clock allowance
                break
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    raw = b"".join(chunks)
    message = None
    if len(raw) >= _HEADER.size and len(raw) - _HEADER.size == _HEADER.unpack(raw[:8])[0]:
        message = pickle.loads(raw[_HEADER.size :])
    ended = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return message, ended


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the reply stream
    while (body := read_frame(stdin)) is not None:
        write_frame(stdout, pickle.dumps(_serve_one(pickle.loads(body))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
