"""The heading-path presentations measured by benchmarks/path_presentations.py."""

from __future__ import annotations

from benchmarks.path_presentations import PRESENTATIONS, presented

PATH = "Experiments > Datasets"
TEXT = "We evaluate on SQuAD and TriviaQA."


def test_every_presentation_keeps_the_passage_and_the_leaf_title():
    for name, present in PRESENTATIONS.items():
        shown = presented(present, PATH, TEXT)
        assert TEXT in shown, name
        assert "Datasets" in shown, name


def test_leaf_title_only_drops_the_parent_headings():
    shown = presented(PRESENTATIONS["leaf title only"], PATH, TEXT)
    assert shown == f"Datasets\n{TEXT}"


def test_a_passage_without_a_heading_path_is_read_alone():
    for present in PRESENTATIONS.values():
        assert presented(present, "", TEXT) == TEXT
