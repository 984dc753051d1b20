"""Issue 28's hostile inputs: CPU seconds and peak memory of each, before and after the bounds,
and the conversion speed of normal dev files before and after.

Each case runs in a child process under a CPU and address-space limit and a wall-clock
timeout, against this checkout ("after") and, with --baseline, against another checkout of
the project ("before", e.g. a `git worktree add --detach DIR c6cddbd`). The inputs come from
this checkout's `tests/bombs.py`, made in the child at run time (the CPU time of making them
is left out of the figures; the peak memory includes it). A case past its CPU limit is
reported as "over N s of CPU", one killed by the memory limit as such.

    python benchmarks/bench_bombs.py [--baseline DIR] [--timeout 20] [--memory-mb 4000]
        [--only NAME ...] [--normal] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval"
MB = 1_000_000
WALL_FACTOR = 6.0  # wall-clock allowance over the CPU limit (a shared, busy machine)


class Case(NamedTuple):
    row: str  # the row
    what: str  # what the input is


CASES: dict[str, Case] = {
    "pdf-5mb-ops": Case("1", "PDF, one Flate content stream of 5 MB of text operators"),
    "pdf-50mb-ops": Case("1", "PDF, one Flate content stream of 50 MB of text operators"),
    "pdf-at-content-limit": Case("1", "PDF, a content stream just under the 8 MB bound"),
    "pdf-at-text-limit": Case("1", "PDF, 40 pages sharing one stream of ~87,000 characters"),
    "docx-300mb-text": Case("2", "DOCX, one 300 MB text node in word/document.xml"),
    "docx-2gb-text": Case("2", "DOCX, one 2 GB text node in word/document.xml"),
    "docx-37k-paragraphs": Case("3", "DOCX, 37,000 short styled paragraphs"),
    "docx-8k-paragraphs": Case("3", "DOCX, a legitimate 8,000 paragraphs"),
    "docx-at-paragraph-limit": Case("3", "DOCX, 50,000 paragraphs (the bound)"),
    "html-30kb-unclosed": Case("4", "HTML, `<p ` repeated, 30 KB"),
    "html-120kb-unclosed": Case("4", "HTML, `<p ` repeated, 120 KB"),
    "html-9mb-unclosed": Case("4", "HTML, `<p ` repeated, 9 MB"),
    "md-100k-headings": Case("5", "Markdown, 100,000 bare headings: convert, index, load"),
    "md-at-heading-limit": Case("5", "Markdown, 10,000 bare headings (the bound): index, load"),
    "json-deep-report": Case("6", "an eval report upload of `[` x 200,000"),
    "index-dev-zero": Case("7", "an index file that is a symlink to /dev/zero"),
    "index-fifo": Case("7", "an index file that is a FIFO"),
    "hirag-reports-symlink": Case("8", "hirag/reports.json symlinked to a JSON file outside"),
    "llm-slow-drip": Case("9", "an LLM server streaming a token every 0.5 s forever"),
    "manifest-no-fingerprint": Case("11", "a manifest without its fingerprint"),
    "fortran-embeddings": Case("13", "embeddings.npy saved in Fortran order"),
}


def _mod(*names: str):
    """The first of `names` that imports: the stage layout's path, then the flat one."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[0])


MAKING_CPU = [0.0]  # CPU seconds spent making the inputs: not the case's cost


class _Timed:
    """tests/bombs.py, with the CPU time of making each input kept apart."""

    def __init__(self, module) -> None:
        self.module = module

    def __getattr__(self, name: str):
        make = getattr(self.module, name)

        def timed(*args, **kwargs):
            started = time.process_time()
            try:
                return make(*args, **kwargs)
            finally:
                MAKING_CPU[0] += time.process_time() - started

        return timed


def _bombs() -> _Timed:
    spec = importlib.util.spec_from_file_location("bombs", REPO / "tests" / "bombs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return _Timed(module)


def _convert(name: str, data: bytes) -> str:
    convert = _mod("treerag_core.ingest.convert", "treerag_core.convert")
    doc = convert.convert_bytes(name, data, 10**9)
    return f"converted: {len(doc.text):,} characters, {len(doc.headings):,} headings"


def _saved_index(name: str, text: str, page_starts: tuple, fmt: str, tmp: Path) -> Path:
    """One document indexed with the hashing embedder, saved under `tmp`: its folder."""
    corpus = _mod("treerag_core.index.corpus", "treerag_core.index")
    store = _mod("treerag_core.index.store", "treerag_core.store")
    config = _mod("treerag_core.base.config", "treerag_core.config")
    embedders = _mod("treerag_core.index.embedders", "treerag_core.embedders")
    source = corpus.SourceDocument(name, text, page_starts, fmt)
    settings = config.IndexSettings(embedder="hashing")
    index = corpus.build_index([source], settings, embedders.get_embedder("hashing"))
    return store.save_index(index, tmp / "idx")


def _index_and_load(text: bytes, tmp: Path) -> str:
    convert = _mod("treerag_core.ingest.convert", "treerag_core.convert")
    store = _mod("treerag_core.index.store", "treerag_core.store")
    doc = convert.convert_bytes("h.md", text, 10**9)
    folder = _saved_index(doc.name, doc.text, doc.page_starts, doc.fmt, tmp)
    started = time.process_time()
    loaded = store.load_index(folder)
    took = time.process_time() - started
    return f"indexed and loaded {len(loaded.nodes):,} nodes (load {took:.1f} s CPU)"


def _small_index(tmp: Path) -> Path:
    text = "# Guide\n\n## Leave\n\nDays off are planned with the team.\n\n## Pay\n\nMonthly.\n"
    return _saved_index("g.md", text, (), "markdown", tmp)


def _slow_drip() -> str:
    sys.path.insert(0, str(REPO / "tests"))
    from fake_anthropic import FakeAnthropicServer, stream

    provider = _mod("treerag_core.llm.anthropic_provider", "treerag_core.llm.anthropic")
    drip = stream(["tok "] * 100_000, pause=0.5)
    with FakeAnthropicServer(drip, api_key="sk-bench") as server:
        kwargs: dict[str, Any] = {"base_url": server.base_url, "timeout": 5, "max_retries": 0}
        try:
            client = provider.AnthropicClient("sk-bench", deadline=5, **kwargs)
            how = "deadline 5 s"
        except TypeError:  # a checkout without the deadline
            client = provider.AnthropicClient("sk-bench", **kwargs)
            how = "no deadline"
        client.complete("", "question", "model-x", 50)
    return f"answered ({how})"


def run_case(name: str, tmp: Path) -> str:
    """Run one case in this process; return what happened (an exception propagates)."""
    bombs = _bombs()
    # Inputs that are only converted: name -> size, per kind of bomb.
    pdf_ops = {"pdf-5mb-ops": 5_000_000, "pdf-50mb-ops": 50_000_000}
    pdf_ops["pdf-at-content-limit"] = 7_900_000
    docx_text = {"docx-300mb-text": 300_000_000, "docx-2gb-text": 2_000_000_000}
    docx_paragraphs = {"docx-37k-paragraphs": 37_000, "docx-8k-paragraphs": 8_000}
    docx_paragraphs["docx-at-paragraph-limit"] = 50_000
    html = {"html-30kb-unclosed": 30_000, "html-120kb-unclosed": 120_000}
    html["html-9mb-unclosed"] = 9_000_000
    if name in pdf_ops:
        return _convert("bomb.pdf", bombs.pdf_bomb(pdf_ops[name]))
    if name == "pdf-at-text-limit":
        return _convert("bomb.pdf", bombs.pdf_bomb(100_000, pages=40))
    if name in docx_text:
        return _convert("bomb.docx", bombs.docx_text_bomb(docx_text[name]))
    if name in docx_paragraphs:
        return _convert("many.docx", bombs.docx_paragraphs(docx_paragraphs[name]))
    if name in html:
        return _convert("bomb.html", bombs.html_unclosed(html[name]))
    if name == "md-100k-headings":
        return _index_and_load(bombs.markdown_headings(100_000), tmp)
    if name == "md-at-heading-limit":
        return _index_and_load(bombs.markdown_headings(10_000), tmp)
    if name == "json-deep-report":
        analysis = _mod("treerag_core.evaluation.analysis")
        analysis.parse_report(bombs.nested_json(200_000), "report.json")
        return "read as a report"
    if name in ("index-dev-zero", "index-fifo"):
        artifacts = _mod("treerag_core.base.artifacts", "treerag_core.artifacts")
        path = tmp / "layers.json"
        if name == "index-fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        artifacts.read_json(path, dict)
        return "read"
    if name == "hirag-reports-symlink":
        hirag = _mod("treerag_core.strategies.hirag.store", "treerag_core.hirag.store")
        outside = tmp / "outside.json"
        outside.write_text(json.dumps([{"community": "c1", "title": "SECRET"}]))
        folder = tmp / "idx" / hirag.FOLDER
        folder.mkdir(parents=True)
        (folder / "reports.json").symlink_to(outside)
        hirag.read_llm_reports(folder / "reports.json")
        return "followed: the outside file was read"
    if name == "llm-slow-drip":
        return _slow_drip()
    if name in ("manifest-no-fingerprint", "fortran-embeddings"):
        import numpy as np

        store = _mod("treerag_core.index.store", "treerag_core.store")
        folder = _small_index(tmp)
        if name == "manifest-no-fingerprint":
            manifest = json.loads((folder / "manifest.json").read_text())
            del manifest["embedder"]["fingerprint"]
            (folder / "manifest.json").write_text(json.dumps(manifest))
        else:
            matrix = np.load(folder / "embeddings.npy")
            np.save(folder / "embeddings.npy", np.asfortranarray(matrix))
        store.load_index(folder)
        return "loaded without a word"
    raise ValueError(f"unknown case {name!r}")


def child(name: str) -> None:
    """The child side: run the case, print one JSON line with what happened and its cost."""
    started = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            outcome, message = "ok", run_case(name, Path(tmp))
        except RecursionError as exc:
            outcome, message = "crash", f"uncaught RecursionError: {str(exc)[:80]}"
        except MemoryError:
            outcome, message = "crash", "MemoryError"
        except Exception as exc:  # the project's named errors, as a user sees them
            kind = type(exc).__name__
            named = kind.endswith("Error") and type(exc).__module__.startswith("treerag_core")
            outcome = "refused" if named else "crash"
            message = f"{kind}: {' '.join(str(exc).split())[:160]}"
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report = {
        "outcome": outcome,
        "message": message,
        "cpu_s": round(time.process_time() - started - MAKING_CPU[0], 2),
        "making_cpu_s": round(MAKING_CPU[0], 2),
        "peak_mb": round(usage.ru_maxrss * 1024 / MB),
    }
    print(json.dumps(report))


def measure(repo: Path, name: str, timeout: float, memory_mb: int) -> dict[str, Any]:
    """One case in a child against `repo`, bounded in CPU (`timeout` s), address space and wall
    time (WALL_FACTOR x `timeout`: a hang that uses no CPU, such as a FIFO, ends there)."""

    def limits() -> None:  # in the child, before exec: the parent is single-threaded
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * MB,) * 2)
        cpu = int(timeout)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

    env = {**os.environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"}
    env["TRANSFORMERS_OFFLINE"] = "1"
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name]
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timeout * WALL_FACTOR  # a shared machine runs the child slowly: CPU is the limit
    try:
        done = subprocess.run(
            command, cwd=repo, env=env, capture_output=True, text=True, timeout=wall,
            preexec_fn=limits,
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # run() killed and reaped it: its CPU time is known
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        message = f"unfinished after {wall:g} s of wall time ({cpu:.1f} s CPU), stopped"
        return {"outcome": "over", "message": message, "wall_s": wall, "cpu_s": round(cpu, 1)}
    wall = round(time.perf_counter() - started, 1)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if lines:
        return {**json.loads(lines[-1]), "wall_s": wall}
    tail = " ".join(done.stderr.split()[-12:])
    if done.returncode in (-9, -24):  # SIGKILL / SIGXCPU: the CPU limit
        return {
            "outcome": "over",
            "message": f"over {timeout:g} s of CPU (stopped)",
            "wall_s": wall,
        }
    return {
        "outcome": "over",
        "message": f"killed at the {memory_mb:,} MB limit (exit {done.returncode}): {tail[:120]}",
        "wall_s": wall,
    }


def normal_speed(repo: Path, inputs: Path, rounds: int = 2) -> dict[str, float]:
    """Seconds (best of `rounds`) to convert the files in `inputs` with `repo`'s converters."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    command = [sys.executable, str(Path(__file__).resolve()), "--normal-child", str(inputs)]
    command += ["--rounds", str(rounds)]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(lines[-1])


def write_normal_inputs(folder: Path) -> None:
    """The 4 smallest FinanceBench PDFs, the bench_convert Markdown dev documents, and each of
    those rendered to HTML and DOCX (as bench_convert does), as files in `folder`."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_convert import DEFAULT_DOCS, to_docx, to_html

    pdfs = sorted(
        (EVAL / "financebench_pdf" / "pdfs").glob("*.pdf"), key=lambda p: p.stat().st_size
    )
    for path in pdfs[:4]:
        (folder / path.name).write_bytes(path.read_bytes())
    for dataset, names in DEFAULT_DOCS.items():
        for name in names:
            text = (EVAL / dataset / "docs" / name).read_text(encoding="utf-8")
            stem = Path(name).stem
            (folder / name).write_text(text, encoding="utf-8")
            (folder / f"{stem}.html").write_text(to_html(text, stem), encoding="utf-8")
            (folder / f"{stem}.docx").write_bytes(to_docx(text))


def normal_child(folder: Path, rounds: int) -> None:
    suffix = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".md": "markdown"}
    inputs = [(suffix[p.suffix], p.name, p.read_bytes()) for p in sorted(folder.iterdir())]
    convert = _mod("treerag_core.ingest.convert", "treerag_core.convert")
    budget = None
    with contextlib.suppress(ModuleNotFoundError):  # a checkout without the budget
        budget = importlib.import_module("treerag_core.ingest.convert.budget")
    fns = {"in_process": convert.convert_bytes}
    if budget is not None:
        fns["budgeted"] = budget.convert_untrusted
        # The fork server's one start (Markdown stays in process, so warm it with a PDF).
        first_pdf = next(((name, data) for f, name, data in inputs if f == "pdf"), None)
        if first_pdf is not None:
            budget.convert_untrusted(first_pdf[0], first_pdf[1], 10**9, 2000)
    best: dict[str, float] = {}
    # Rounds outermost and the two ways interleaved inside each, so a load that drifts
    # during the run weighs on both alike.
    for _ in range(rounds):
        for fmt in ("pdf", "docx", "html", "markdown"):
            for label, fn in fns.items():
                started = time.perf_counter()
                for f, name, data in inputs:
                    if f == fmt:
                        fn(name, data, 10**9, 2000)
                took = time.perf_counter() - started
                key = f"{label}:{fmt}"
                best[key] = min(best.get(key, took), took)
    result = {key: round(value, 3) for key, value in best.items()}
    print(json.dumps(result))


def _row(case: str, side: dict[str, Any]) -> str:
    if side["outcome"] == "over":
        return side["message"]
    return f"{side['outcome']}, {side['cpu_s']} s CPU, {side['peak_mb']:,} MB peak"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=None, help="a checkout to measure as 'before'")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--memory-mb", type=int, default=4000)
    parser.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    parser.add_argument("--normal", action="store_true", help="also normal dev file speed")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--normal-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    if args.normal_child:
        normal_child(Path(args.normal_child), args.rounds)
        return 0
    sides = {"after": REPO}
    if args.baseline:
        sides = {"before": Path(args.baseline).resolve(), "after": REPO}
    results: dict[str, Any] = {"cases": {}, "timeout_s": args.timeout}
    print(f"| row | input | {' | '.join(sides)} | message after |")
    print(f"|---|---|{'---|' * len(sides)}---|")
    for case in args.only or CASES:
        row, what = CASES[case]
        measured = {side: measure(repo, case, args.timeout, args.memory_mb)
                    for side, repo in sides.items()}  # fmt: skip
        results["cases"][case] = measured
        cells = " | ".join(_row(case, measured[s]) for s in sides)
        print(f"| {row} | {what} | {cells} | {measured['after']['message']} |", flush=True)
    if args.normal:
        speeds: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        with tempfile.TemporaryDirectory() as tmp:
            write_normal_inputs(Path(tmp))
            for _ in range(2):  # before, after, before, after: the machine's drift is shared
                for side, repo in sides.items():
                    speeds[side].append(normal_speed(repo, Path(tmp)))
        best = {
            side: {k: min(run[k] for run in runs) for k in runs[0]} for side, runs in speeds.items()
        }
        results["normal"] = best
        print("\nNormal dev files, seconds to convert (best of 4 passes, alternating):")
        for key in best["after"]:
            before = best.get("before", {}).get(key.replace("budgeted", "in_process"))
            ratio = f", {best['after'][key] / before:.2f}x before" if before else ""
            was = f" (before {before} s)" if before else ""
            print(f"  {key}: {best['after'][key]} s{ratio}{was}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
