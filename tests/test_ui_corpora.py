"""Corpus kinds, keys and labels: one rule for the sidebar, Documents, History, stored results."""

from __future__ import annotations

import pytest

from ui.common.corpora import (
    EVAL,
    SAMPLES,
    UPLOADS,
    corpus_key,
    corpus_kind_of,
    corpus_label,
    key_label,
    kind_of_key,
)


@pytest.mark.parametrize("kind", [SAMPLES, UPLOADS, EVAL])
def test_a_key_names_the_kind_it_was_made_for(kind: str) -> None:
    key = corpus_key(kind, "abc", 3)
    assert key.endswith(":abc:3")
    assert kind_of_key(key) == corpus_kind_of(key) == kind


def test_key_prefixes_are_the_logged_ones() -> None:
    # Audit-log rows hold these keys: History must keep reading old rows.
    assert corpus_key(SAMPLES, "hashing", "f") == "samples:hashing:f"
    assert corpus_key(UPLOADS, "w1", 2) == "ws:w1:2"
    assert corpus_key(EVAL, "h") == "eval:h"


@pytest.mark.parametrize("key", [None, "", "other:1", "wsx:1", "uploads:1"])
def test_an_unknown_key_is_no_kind_and_reads_as_the_samples(key: str | None) -> None:
    assert kind_of_key(key) is None
    assert corpus_kind_of(key) == SAMPLES  # the corpus every session has
    assert key_label(key) == "?"
    assert key_label(key, "phrase") == "another corpus"


def test_each_form_of_each_label() -> None:
    assert [corpus_label(k) for k in (SAMPLES, UPLOADS)] == ["Sample documents", "My uploads"]
    assert corpus_label(EVAL, name="qasper") == "Eval set: qasper"
    assert corpus_label(EVAL, "short", name="qasper") == "eval set"  # a name only in the menu
    assert key_label("ws:w1:2") == "my uploads"
    assert key_label("samples:h:f", "phrase") == "the sample documents"
    assert key_label("ws:w1:2", "phrase") == "your uploads as they were then"
    assert key_label("eval:h", "phrase") == "an eval set"
