"""Convert one untrusted document in a child process with a CPU and a memory budget.

The converters' own bounds (text, pages, parts, headings) catch the known expansions; this is
the backstop for the unknown ones (a parser's slow path, a native library's allocation). The
child is forked from a small server process (`convert.budget_server`, started once per
process and kept) that has the converters loaded, so a child costs a fork, not an
interpreter start, and its address-space limit is not inflated by the caller's own memory
(the explorer maps gigabytes of model weights).
"""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys
import threading

from treerag_core.base import errors
from treerag_core.base.config import MB, convert_cpu_seconds, convert_memory_bytes
from treerag_core.base.errors import DocumentTooLargeError, InputDocumentError
from treerag_core.ingest.convert.base import ConvertedDocument

# Wall-clock allowance over the CPU budget: a shared machine may run the child slowly.
WALL_FACTOR = 4.0
WALL_SLACK = 30.0


class _Server:
    """One fork server per process; requests are taken one at a time (the lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None

    def ask(self, request: tuple) -> tuple:
        from treerag_core.ingest.convert.budget_server import read_frame, write_frame

        with self.lock:
            for attempt in (1, 2):  # a server that died (killed) is started again once
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = subprocess.Popen(
                        [sys.executable, "-m", "treerag_core.ingest.convert.budget_server"],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        close_fds=True,
                    )
                try:
                    write_frame(self.proc.stdin, pickle.dumps(request))
                    body = read_frame(self.proc.stdout)
                except (BrokenPipeError, OSError):
                    body = None
                if body is not None:
                    return pickle.loads(body)
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                if attempt == 2:
                    raise InputDocumentError(f"{request[0]}: the converter process failed")
        raise AssertionError("unreachable")


_SERVER = _Server()


# Formats whose converters expand their input or run native parsers; Markdown and plain text
# are converted in process: their cost is linear in a file the size cap already bounds.
ISOLATED_FORMATS = frozenset({"pdf", "docx", "html"})


def convert_untrusted(name: str, data: bytes, max_bytes: int, max_pages: int) -> ConvertedDocument:
    """`convert_bytes`, with PDF, DOCX and HTML converted under the CPU and memory budget.

    Raises:
        InputDocumentError (or a subclass), as `convert_bounded`.
    """
    from treerag_core.ingest.convert.dispatch import convert_bytes, detect_format
    from treerag_core.ingest.loading import too_large

    if len(data) > max_bytes:
        raise too_large(name, len(data), max_bytes)
    if data.strip() and detect_format(name, data) in ISOLATED_FORMATS:
        return convert_bounded(name, data, max_bytes, max_pages)
    return convert_bytes(name, data, max_bytes, max_pages)


def convert_bounded(
    name: str,
    data: bytes,
    max_bytes: int,
    max_pages: int,
    cpu_seconds: float | None = None,
    memory_bytes: int | None = None,
) -> ConvertedDocument:
    """`convert_bytes` in a child with `cpu_seconds` of CPU and `memory_bytes` of address
    space (TREERAG_CONVERT_CPU_SECONDS, TREERAG_CONVERT_MEMORY_MB by default).

    Raises:
        InputDocumentError (or a subclass): what the converter raised, or
            DocumentTooLargeError when the child ran out of its CPU or memory budget.
    """
    from treerag_core.ingest.loading import too_large

    if len(data) > max_bytes:  # refused here: no child for a file that is too large
        raise too_large(name, len(data), max_bytes)
    cpu = convert_cpu_seconds() if cpu_seconds is None else cpu_seconds
    memory = convert_memory_bytes() if memory_bytes is None else memory_bytes
    wall = cpu * WALL_FACTOR + WALL_SLACK
    message, ended = _SERVER.ask((name, data, max_bytes, max_pages, cpu, memory, wall))
    if message is None:
        raise _died(name, ended, cpu, memory)
    return _result(name, message, cpu, memory)


def _result(name: str, message: tuple, cpu: float, memory: int) -> ConvertedDocument:
    kind = message[0]
    if kind == "ok":
        return message[1]
    if kind == "memory":
        raise _over_memory(name, memory)
    if kind == "cpu":
        raise _over_cpu(name, cpu)
    _, class_name, text, refusal = message
    cls = getattr(errors, class_name, InputDocumentError)
    if not (isinstance(cls, type) and issubclass(cls, InputDocumentError)):
        cls = InputDocumentError
    if cls is errors.FileTooLargeError:
        raise cls(text, refusal or text)
    raise cls(text)


def _died(name: str, ended: int, cpu: float, memory: int) -> InputDocumentError:
    if ended in (-signal.SIGXCPU, -signal.SIGKILL):
        return _over_cpu(name, cpu)
    if ended in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS):
        # pdfium and lxml abort or crash when an allocation fails under the limit
        return _over_memory(name, memory)
    return InputDocumentError(f"{name}: the converter stopped without a result (exit {ended})")


def _over_cpu(name: str, cpu: float) -> DocumentTooLargeError:
    return DocumentTooLargeError(
        f"{name}: converting it took more than {cpu:g} s of CPU (or its wall-clock allowance); "
        "refused (raise TREERAG_CONVERT_CPU_SECONDS for a large document you trust)"
    )


def _over_memory(name: str, memory: int) -> DocumentTooLargeError:
    return DocumentTooLargeError(
        f"{name}: converting it needed more than {memory / MB:,.0f} MB of memory; refused "
        "(raise TREERAG_CONVERT_MEMORY_MB for a large document you trust)"
    )
