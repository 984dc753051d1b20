"""Background jobs kept per workspace, not per browser session (the Evaluate page's run, the
tune of the labelled questions).

A reload opens a new Streamlit session: a job kept in the old one was lost to the page while
its thread went on computing. The workspace survives a reload (its id is in the `?ws=` link),
so a job kept under it is found again. One registry per process, shared by every session."""

from __future__ import annotations

import threading
from typing import Generic, Protocol, TypeVar


class Job(Protocol):
    @property
    def running(self) -> bool: ...


J = TypeVar("J", bound=Job)


class WorkspaceJobs(Generic[J]):
    """At most one job per workspace. A finished job stays until it is taken (its result
    shown) or forgotten; past `keep_finished` of them the oldest go first, since a user may
    never come back for a result. Running jobs are bounded by one per workspace.

    Each job is written by its thread and read by pages (single fields); the lock guards the
    registry itself, so two presses of Run cannot both start a job."""

    def __init__(self, keep_finished: int = 16) -> None:
        self.keep_finished = keep_finished
        self._jobs: dict[str, J] = {}  # oldest first
        self._lock = threading.Lock()

    def get(self, workspace: str) -> J | None:
        with self._lock:
            return self._jobs.get(workspace)

    def put(self, workspace: str, job: J) -> J:
        """Keep `job` as the workspace's and return it, unless one is still running there:
        that one is returned instead (the caller starts nothing)."""
        with self._lock:
            old = self._jobs.get(workspace)
            if old is not None and old.running:
                return old
            self._jobs.pop(workspace, None)  # the new job goes last: the newest
            self._jobs[workspace] = job
            finished = [ws for ws, kept in self._jobs.items() if not kept.running]
            for ws in finished[: max(0, len(finished) - self.keep_finished)]:
                del self._jobs[ws]
            return job

    def take(self, workspace: str, job: J) -> bool:
        """Drop the workspace's finished `job`; True for the one caller that dropped it (two
        tabs of one workspace show its result once)."""
        with self._lock:
            if self._jobs.get(workspace) is not job or job.running:
                return False
            del self._jobs[workspace]
            return True

    def forget(self, workspace: str) -> None:
        """Drop the workspace's job if it is finished."""
        with self._lock:
            job = self._jobs.get(workspace)
            if job is not None and not job.running:
                del self._jobs[workspace]

    def __len__(self) -> int:
        with self._lock:
            return len(self._jobs)
