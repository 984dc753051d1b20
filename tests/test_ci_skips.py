"""A test its machine cannot run skips locally but fails under CI (conftest.skip_unless_ci)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import skip_unless_ci


def test_skips_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="BROWSER TEST SKIPPED — no chromium"):
        skip_unless_ci("browser test", "no chromium")


@pytest.mark.parametrize("value", ["true", "1", "TRUE", "yes"])
def test_fails_under_ci(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI is set and the load test cannot run"):
        skip_unless_ci("load test", "load 12 on 2 cores")


def test_every_browser_test_file_runs_on_one_xdist_worker():
    """A file marked `browser` missing from conftest's list would run beside another browser
    file under `make test`'s two workers (and could be split across them)."""
    from tests.conftest import ONE_BROWSER_AT_A_TIME

    mark = "pytest.mark." + "browser"  # spelled apart so this file does not match itself
    marked = {p.name for p in Path(__file__).parent.glob("test_*.py")
              if mark in p.read_text(encoding="utf-8")}  # fmt: skip
    assert marked and marked <= ONE_BROWSER_AT_A_TIME, marked - ONE_BROWSER_AT_A_TIME
