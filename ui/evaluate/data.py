"""The Evaluate page's data: dev-set folders, cached eval sets and indexes, saved reports."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from treerag_core import (
    MY_SET,
    CorpusIndex,
    Engine,
    EvalDataset,
    EvalQuestion,
    dataset_index,
    index_cache_key,
    load_dataset,
    report_query_settings,
    run,
    write_report,
)
from treerag_core import TREE_STRATEGY as TREE
from treerag_core.base.config import IndexSettings, data_dir, eval_roots
from treerag_core.base.errors import UnsafePathError
from treerag_core.base.safepaths import allowed_roots, resolve_inside
from treerag_core.base.types import Trace
from ui.common.corpora import EVAL, corpus_key, corpus_label
from ui.common.resources import Corpus, cached_embedder

DEV_SETS = ("qasper", "lecoqa_laws", "gitlab_handbook")
MINE = "mine"  # the dataset choice that scores the workspace's labelled questions (issue 26)
OTHER = "other"  # the dataset choice that reads a typed folder
CHOICES = (*DEV_SETS, MINE, OTHER)  # the sidebar's dataset menu, in order
CHOICE_LABELS = {MINE: "My labelled questions", OTHER: "Another folder…"}
CACHE_DIR, REPORTS_DIR = "eval-cache", "eval-reports"  # under data_dir()


def cache_dir() -> Path:
    """Where built eval indexes live (shared with `python -m treerag_core eval --cache`)."""
    return Path(data_dir()) / CACHE_DIR


def reports_dir() -> Path:
    return Path(data_dir()) / REPORTS_DIR


def dev_set_folder(name: str) -> Path:
    """A dev set's folder: the first of `config.eval_roots()` (TREERAG_EVAL_DIRS) holding it,
    else where the first root would hold it (so a missing set is reported there)."""
    roots = eval_roots()
    return next((root / name for root in roots if (root / name).is_dir()), roots[0] / name)


def choice_label(choice: str) -> str:
    return CHOICE_LABELS.get(choice, choice)


def selected_folder(choice: str, typed: str) -> Path | None:
    """The dataset folder for a sidebar choice; None while "another folder" is still empty,
    and for the labelled questions (they live in the workspace, not in a folder)."""
    if choice == MINE:
        return None
    if choice == OTHER:
        text = typed.strip()
        return Path(text).expanduser() if text else None
    return dev_set_folder(choice)


def _fingerprint(folder: Path) -> str:
    """Changes when the questions or a document are added, removed or edited (no file read)."""
    parts = []
    for path in [folder / "questions.jsonl", *sorted((folder / "docs").glob("*.md"))]:
        try:
            info = path.stat()
        except OSError:
            parts.append(f"{path.name}:-")
            continue
        parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def dataset_roots() -> tuple[Path, ...]:
    """The folders a dataset may be read from: the app's data folder and the eval sets."""
    return allowed_roots()


def safe_folder(folder: Path) -> Path:
    """`folder` resolved, if inside `dataset_roots()` (UnsafePathError otherwise)."""
    return resolve_inside(folder, dataset_roots())


@st.cache_resource(show_spinner=False, max_entries=8)
def _dataset(folder: str, fingerprint: str, roots: tuple[Path, ...]) -> EvalDataset:
    return load_dataset(Path(folder), roots=roots)


def dataset(folder: Path) -> EvalDataset:
    """The eval set in `folder` (read once per content version).

    Raises:
        UnsafePathError: the folder (or a file in it) lies outside the allowed folders.
        EvalDataError: the folder, its questions.jsonl or a document is missing or malformed.
    """
    folder = safe_folder(folder)  # before anything is read, even a stat
    return _dataset(str(folder), _fingerprint(folder), dataset_roots())


@dataclass(frozen=True, eq=False)
class EvalSet:
    """An eval set with its index, as a corpus the Ask page can query (`dataset` is None for
    the workspace's labelled questions: their corpus is the workspace's)."""

    folder: Path
    dataset: EvalDataset | None
    corpus: Corpus
    questions: Mapping[str, EvalQuestion] = field(default_factory=dict)

    @property
    def index(self) -> CorpusIndex:
        return self.corpus.index

    @property
    def name(self) -> str:
        return self.dataset.name if self.dataset is not None else MY_SET


INDEXING = "Indexing the eval set (once per server process; kept on disk after that)…"


@st.cache_resource(show_spinner=False, max_entries=6)  # the spinner: eval_set's, on a page only
def _eval_set(
    folder: str, fingerprint: str, settings_json: str, roots: tuple[Path, ...]
) -> EvalSet:
    data = _dataset(folder, fingerprint, roots)
    settings = IndexSettings.from_dict(json.loads(settings_json))
    # dataset_index keeps the built index under eval-cache/, keyed by a content hash, so a
    # new server process (or the CLI) loads it instead of embedding again.
    index = dataset_index(data, settings, cache_dir())
    engine = Engine(index=index, embedder=cached_embedder(index.embedder_name))
    key = corpus_key(EVAL, index_cache_key(data, settings))
    corpus = Corpus(key, EVAL, corpus_label(EVAL, name=data.name), engine)
    return EvalSet(Path(folder), data, corpus, {q.id: q for q in data.questions})


def eval_set(folder: Path, settings: IndexSettings) -> EvalSet:
    """The eval set in `folder` indexed with `settings` (built once, then cached).

    Raises:
        UnsafePathError: the folder lies outside the allowed folders.
        EvalDataError: the folder is missing or malformed.
        EmbedderError: the embedder named in `settings` cannot load.
    """
    folder = safe_folder(folder)
    settings_json = json.dumps(settings.to_dict(), sort_keys=True)
    args = (str(folder), _fingerprint(folder), settings_json, dataset_roots())
    if get_script_run_ctx(suppress_warning=True) is None:  # an evaluation run's own thread:
        return _eval_set(*args)  # no page to draw a spinner on (the run shows its stage)
    with st.spinner(INDEXING):  # drawn only when it takes a while: an index not cached yet
        return _eval_set(*args)


def report_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, ensure_ascii=False, indent=2)


def report_file_name(report: Mapping[str, Any], created: str | None = None) -> str:
    stamp = (created or datetime.now(UTC).isoformat(timespec="seconds")).replace(":", "")
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(report.get("dataset")))
    return f"eval-{name}-{report.get('scope', 'doc')}-{stamp[:17]}.json"


def save_report(report: Mapping[str, Any], created: str | None = None) -> Path:
    """Write the report under data_dir()/eval-reports; returns its path."""
    path = reports_dir() / report_file_name(report, created)
    write_report(path, report)
    return path


def resolve_folder(report: Mapping[str, Any], *candidates: Path | None) -> Path | None:
    """The folder of the report's dataset: a candidate whose name matches, else a dev set."""
    name = str(report.get("dataset") or "")
    for folder in candidates:
        if folder is None or folder.name != name:
            continue
        try:  # a report names its folder: untrusted, so never even stat one outside the roots
            folder = safe_folder(folder)
        except UnsafePathError:
            continue
        if folder.is_dir():
            return folder
    if name not in DEV_SETS:
        return None
    dev = dev_set_folder(name)
    return dev if dev.is_dir() else None


def question_scope(question: EvalQuestion, report: Mapping[str, Any]) -> list[str] | None:
    return list(question.docs) if report.get("scope", "doc") == "doc" else None


def question_trace(es: EvalSet, question: EvalQuestion, report: Mapping[str, Any]) -> Trace:
    """Run one eval question again with treerag (no LLM) on the eval index, in its scope."""
    settings = report_query_settings(report).with_(strategy=TREE).set("llm.enabled", False)
    scope = question_scope(question, report)
    return run(es.corpus.engine, question.question, settings, strategy=TREE, scope=scope)
