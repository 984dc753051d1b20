"""An evaluation run in a background thread, kept per workspace (issue 25: nothing is lost on
navigation). Streamlit stops a page's script run when the user leaves the page; a run done
inside it was lost with it. The thread goes on: the page that started it follows it while it
stays, and a later visit finds it still going (its progress) or finished (its report). It is
kept under the workspace, not the browser session, so a reload (a new session, the same
`?ws=` link) finds it too, as the tune (tune_job)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ui.common.jobs import WorkspaceJobs
from ui.evaluate.data import INDEXING

Report = tuple[dict[str, Any], dict[str, Any]]  # (report, meta)


@dataclass
class EvalJob:
    """One run: what it does (`label`), how far it is, and its report or error at the end.
    Written by its thread, read by the page (single fields: no lock needed)."""

    label: str  # "2 strategies on 5 questions"
    n_questions: int
    stage: str = "starting"  # starting | indexing | loading | running | done | failed
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)
    result: Report | None = None
    error: BaseException | None = None
    hint: str = ""  # the next step under the error
    finished: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)  # set by the Stop button

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    @property
    def stopping(self) -> bool:
        """Stop was pressed and the run has not ended yet (it ends before its next question;
        indexing, which has no question, runs to its end first)."""
        return self.stop.is_set() and self.running

    def stopped_empty(self) -> bool:
        """Stopped before any question had run: its report would hold no strategy."""
        return (
            self.stop.is_set() and self.result is not None and not self.result[0].get("strategies")
        )

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def progress(self, done: int, total: int) -> None:
        """The harness's progress callback: (done, total) runs."""
        self.stage, self.done, self.total = "running", done, total

    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        """Where the run is, in words, for the progress bar."""
        if self.stopping:
            return (
                "Stopping once indexing is done (the index is kept for the next run)…"
                if self.stage == "indexing"
                else f"Stopping before the next question ({self.done:,} / {self.total:,} runs "
                "done)…"
            )
        if self.stage == "indexing":
            return f"{INDEXING} {self.elapsed:.0f} s"
        if self.stage == "loading":
            return f"Loading the reranker… {self.elapsed:.0f} s"
        if not self.total:
            return f"Running {self.label}…"
        n = self.n_questions
        # runs per question: a strategy compared with the LLM locator runs twice
        return (
            f"{self.done:,} / {self.total:,} runs ({self.total // n if n else 0} per question "
            f"× {n} questions)"
        )


# A finished run leaves when its report is shown (`take`); one never shown (its user gone)
# stays until newer ones push it out.
_JOBS: WorkspaceJobs[EvalJob] = WorkspaceJobs()


def job_for(workspace: str) -> EvalJob | None:
    """The workspace's run: still going, or finished and not shown yet."""
    return _JOBS.get(workspace)


def take(workspace: str, job: EvalJob) -> bool:
    """Drop the workspace's finished run; True once only: its report is shown once."""
    return _JOBS.take(workspace, job)


def start(
    workspace: str,
    job: EvalJob,
    work: Callable[[EvalJob], Report],
    fails: tuple[type[Exception], ...],
) -> EvalJob:
    """Run `work(job)` in a daemon thread, kept as the workspace's run; when a run is still
    going there, nothing starts and that one is returned. `work` must not touch the session
    (a thread has no script context): the page reads everything it needs first. An error of
    `fails` is kept for the page with `job.hint`; any other is kept too (shown, not lost in a
    thread's stderr) and raised."""
    kept = _JOBS.put(workspace, job)
    if kept is not job:
        return kept

    def run() -> None:
        try:
            job.result = work(job)
            job.stage = "done"
        except fails as exc:
            job.error, job.stage = exc, "failed"
        except Exception as exc:
            job.error, job.stage = exc, "failed"
            raise
        finally:
            job.finished.set()

    threading.Thread(target=run, daemon=True, name="treerag-eval").start()
    return job
