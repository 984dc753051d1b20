"""Milvus filter expressions and terms: pure builders, checked by exact strings."""

from __future__ import annotations

import pytest

from treerag_core.index.vectors.milvus_expr import (
    all_of,
    check_collection_name,
    equals,
    one_of,
    quote,
    term,
    terms,
)


def test_quote_escapes_quotes_and_backslashes():
    assert quote("plain") == '"plain"'
    assert quote('a"b') == '"a\\"b"'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote('x" or doc_id != "') == '"x\\" or doc_id != \\""'
    assert quote("line\nbreak") == '"line\\nbreak"'
    assert quote("劳动合同法.md") == '"劳动合同法.md"'
    assert quote("it's") == '"it\'s"'  # single quotes need nothing inside double quotes


def test_quote_refuses_a_non_string():
    with pytest.raises(TypeError, match="must be a str"):
        quote(7)  # type: ignore[arg-type]


def test_clauses():
    assert equals("parent_id", "0007") == 'parent_id == "0007"'
    assert one_of("doc_id", ["b.md", 'a"1.md', "b.md"]) == 'doc_id in ["b.md", "a\\"1.md"]'
    assert all_of([equals("kind", "child"), "", one_of("doc_id", ["x"])]) == (
        '(kind == "child") and (doc_id in ["x"])'
    )
    assert all_of([]) == ""
    with pytest.raises(ValueError, match="not a field name"):
        equals("kind == 'x' or 1", "y")


def test_terms_are_whole_ascii_words_and_keep_repeats():
    word = term("合同法")
    assert word.startswith("t") and len(word) == 17 and word.isalnum() and word.isascii()
    assert term("合同法") == word and term("合同") != word  # stable, distinct
    assert terms(["合同", "解除", "合同"]).split() == [term("合同"), term("解除"), term("合同")]


def test_collection_names():
    assert check_collection_name("eval_qasper_1a2b") == "eval_qasper_1a2b"
    for bad in ("", "1abc", "a-b", "a b", 'a"b', "x" * 201):
        with pytest.raises(ValueError, match="collection name"):
            check_collection_name(bad)
