"""A test its machine cannot run skips locally but fails under CI (conftest.skip_unless_ci)."""

from __future__ import annotations

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
