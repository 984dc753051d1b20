"""The per-workspace registry of background jobs (ui/common/jobs.py): one running job per
workspace, a finished one taken once, finished ones bounded."""

from __future__ import annotations

from dataclasses import dataclass

from ui.common.jobs import WorkspaceJobs


@dataclass(eq=False)
class Job:
    running: bool = True


def test_a_second_job_is_refused_while_the_first_runs_and_replaces_it_once_done():
    jobs: WorkspaceJobs[Job] = WorkspaceJobs()
    first, second = Job(), Job()
    assert jobs.put("a", first) is first
    assert jobs.put("a", second) is first  # still running: nothing new starts
    assert jobs.put("b", second) is second  # another workspace's own job
    first.running = False
    third = Job()
    assert jobs.put("a", third) is third and jobs.get("a") is third


def test_a_finished_job_is_taken_once_and_a_running_one_not_at_all():
    jobs: WorkspaceJobs[Job] = WorkspaceJobs()
    job = jobs.put("a", Job())
    assert not jobs.take("a", job)  # still running
    job.running = False
    assert not jobs.take("a", Job())  # not the workspace's job
    assert jobs.take("a", job)
    assert not jobs.take("a", job)  # a second tab does not show it again
    assert jobs.get("a") is None


def test_finished_jobs_beyond_the_bound_go_oldest_first_and_running_ones_stay():
    jobs: WorkspaceJobs[Job] = WorkspaceJobs(keep_finished=2)
    running = jobs.put("live", Job())
    for ws in ("w0", "w1", "w2", "w3"):
        jobs.put(ws, Job()).running = False
    jobs.put("new", Job())
    assert len(jobs) == 4  # the running two and the newest two finished
    assert jobs.get("live") is running
    assert jobs.get("w0") is None and jobs.get("w1") is None
    assert jobs.get("w2") is not None and jobs.get("w3") is not None
