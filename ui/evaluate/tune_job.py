"""A tune running in a background thread, so the page stays live: progress, estimate, stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from treerag_core import Engine, EvalQuestion, Tuner, TuneResult
from treerag_core import tune_space_for as space_for
from treerag_core.base.errors import TreeRAGError
from treerag_core.base.settings import QuerySettings
from ui.common.jobs import WorkspaceJobs


@dataclass
class TuneJob:
    """One workspace's tune: what it has done so far, and its result or error at the end."""

    planned_settings: int
    n_questions: int
    stage: str = "estimating"  # estimating | tuning | done | failed
    done: int = 0
    total: int = 0
    label: str = ""
    estimate: float | None = None
    started: float = field(default_factory=time.monotonic)
    result: TuneResult | None = None
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return self.stage in ("estimating", "tuning")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


_JOBS: WorkspaceJobs[TuneJob] = WorkspaceJobs()  # a finished tune's table stays on show


def job_for(workspace: str) -> TuneJob | None:
    return _JOBS.get(workspace)


def forget(workspace: str) -> None:
    _JOBS.forget(workspace)


def start(
    workspace: str,
    engine: Engine,
    questions: Sequence[EvalQuestion],
    current: QuerySettings,
    metric: str,
    strategies: Sequence[str] | None = None,
) -> TuneJob:
    """Start a tune (TuneError at once when it cannot run, e.g. too few questions).

    The engine is copied: the tune's query vectors do not crowd the session's own cache.
    """
    space = space_for(current, strategies)
    tuner = Tuner(replace(engine), questions, current, metric, space)  # validates first
    job = TuneJob(len(tuner.candidates), len(tuner.questions))
    kept = _JOBS.put(workspace, job)
    if kept is not job:  # one still running: no second tune
        return kept
    threading.Thread(target=_work, args=(job, tuner), daemon=True, name="treerag-tune").start()
    return job


def _work(job: TuneJob, tuner: Tuner) -> None:
    def progress(done: int, total: int, label: str) -> None:
        job.done, job.total, job.label = done, total, label

    try:
        job.estimate = tuner.estimate()
        job.stage = "tuning"
        job.result = tuner.run(progress, job.stop.is_set, job.estimate)
        job.stage = "done"
    except TreeRAGError as exc:  # stopped before the current settings were scored, a bad model
        job.error, job.stage = str(exc), "failed"
    except Exception as exc:  # a bug: shown on the page, not lost in a thread's stderr
        job.error, job.stage = f"the tune failed ({type(exc).__name__}: {exc})", "failed"
        raise
