"""Shared fixtures: sample corpora indexed once per test session."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_docs"
EVAL_DIR = Path(os.environ.get("TREERAG_EVAL_DIR") or REPO.parent / "shared" / "eval")


# `make test` runs two pytest-xdist workers. The tests that drive a real Chromium against a
# real server run on one worker, one at a time and in file order: two at once would each
# measure the other's CPU, and a module's page carries state from one test to the next. A new
# browser test file is added here.
ONE_BROWSER_AT_A_TIME = frozenset(
    {
        "test_app_load.py",
        "test_browser.py",
        "test_browser_labels.py",
        "test_browser_navigation.py",
        "test_browser_openai.py",
    }
)


# The tests that start Milvus Lite run on one worker, one file after another: two Lite
# engines starting at once in two processes can fail to create a collection ("Mmap manager
# has not been init", milvus-lite issue 305; seen once in CI on this machine).
ONE_MILVUS_LITE_AT_A_TIME = frozenset(
    {"test_cli_milvus.py", "test_ui_vector_store.py", "test_vectors_milvus.py"}
)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Every test is its own work unit, except the browser files' and the Milvus Lite files',
    which are one unit each. (xdist's `loadgroup` marks do not work under pytest 9: it renames
    node ids that pytest 9 no longer reads, so the grouping is done here, from the file
    names.)"""
    from xdist.scheduler import LoadScopeScheduling

    class SharedEnginesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
            if file in ONE_BROWSER_AT_A_TIME:
                return "browser"
            return "milvus-lite" if file in ONE_MILVUS_LITE_AT_A_TIME else nodeid

    return SharedEnginesTogether(config, log)


def skip_unless_ci(what: str, reason: str) -> None:
    """Skip a test its machine cannot run, but fail under CI (`.ci/run` sets CI=true): CI
    must not pass by skipping the browser, the load test or the eval data."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI is set and the {what} cannot run: {reason}")
    pytest.skip(f"{what.upper()} SKIPPED — {reason}. Under CI=true this fails instead.")


def sample_sources(names: list[str] | None = None):
    from treerag_core.index.corpus import SourceDocument

    paths = sorted(p for p in SAMPLES.glob("*.md") if p.name != "README.md")
    return [
        SourceDocument(p.name, p.read_text(encoding="utf-8"))
        for p in paths
        if names is None or p.name in names
    ]


LLM_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TREERAG_LLM_MODEL",
)


@contextlib.contextmanager
def keyless_app(data: Path) -> Iterator[Path]:
    """The explorer as AppTest runs it: the hashing embedder (speed), `data` as its data
    folder, offline, and no LLM key or endpoint from the machine."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TREERAG_EMBEDDER", "hashing")
        mp.setenv("TREERAG_DATA_DIR", str(data))
        mp.setenv("HF_HUB_OFFLINE", "1")
        for name in LLM_VARIABLES:
            mp.delenv(name, raising=False)
        yield data


@pytest.fixture(scope="session")
def eval_dir() -> Path:
    if not EVAL_DIR.is_dir():
        skip_unless_ci("eval-data test", f"no eval data at {EVAL_DIR} (set TREERAG_EVAL_DIR)")
    return EVAL_DIR


@pytest.fixture(scope="session")
def hashing_index():
    """All sample documents, indexed with the deterministic hashing embedder."""
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder

    settings = IndexSettings(embedder="hashing")
    return build_index(sample_sources(), settings, get_embedder("hashing"))


@pytest.fixture(scope="session")
def paper_engine():
    """The AdaRouter test paper with the real default (multilingual) embedder, no API key."""
    from treerag_core.base.config import IndexSettings
    from treerag_core.index.corpus import build_index
    from treerag_core.index.embedders import get_embedder
    from treerag_core.pipeline import Engine

    settings = IndexSettings()
    embedder = get_embedder(settings.embedder)
    index = build_index(sample_sources(["test_paper.md"]), settings, embedder)
    return Engine(index=index, embedder=embedder, api_key=None)


@dataclass(frozen=True)
class ModelTrap:
    """A folder that looks like a sentence-transformers model, and every attempt to load one
    recorded in `made` instead (nothing is ever loaded)."""

    folder: Path
    made: list

    @property
    def name(self) -> str:
        return f"st:{self.folder}"


@pytest.fixture
def model_trap(tmp_path: Path, monkeypatch) -> ModelTrap:
    from treerag_core.index import embedders

    monkeypatch.delenv(embedders.EMBEDDER_ENV, raising=False)
    folder = tmp_path / "models" / "chosen"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    made: list = []
    monkeypatch.setattr(embedders, "SentenceTransformerEmbedder", lambda *a: made.append(a))
    return ModelTrap(folder, made)


def name_index_embedder(folder: Path, name: str) -> None:
    """Write `name` as the embedder in an index folder's manifest, as its author could."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["embedder"]["name"] = name
    path.write_text(json.dumps(manifest), encoding="utf-8")
