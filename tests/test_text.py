"""Tests for BM25 tokenizing: English stop words and stemming, jieba for Chinese."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from treerag_core.index.tokens import is_stopword_only, load_jieba, stem, tokenize, word_set


def test_english_tokens_are_lowercase_content_words() -> None:
    tokens = tokenize("What is THE Accuracy of AdaRouter on EUR/USD?")
    assert tokens == ["accuraci", "adarouter", "eur", "usd"]


def test_numbers_are_kept_whole() -> None:
    tokens = tokenize("It reaches 73.2% (vs. 65.1%) on 1,000 pairs in 2019, using GPT-4 and BM25.")
    for expected in ("73.2", "65.1", "1000", "2019", "4", "bm25", "gpt"):
        assert expected in tokens
    assert "73" not in tokens and "2" not in tokens  # the decimal is not split


@pytest.mark.parametrize(
    "group",
    [
        ("epoch", "epochs"),
        ("route", "routes", "routing", "routed"),
        ("train", "trains", "trained", "training"),
        ("accuracy", "accuracies"),
        ("study", "studies", "studied"),
    ],
)
def test_stemming_merges_inflections(group: tuple[str, ...]) -> None:
    stems = {tokenize(word)[0] for word in group}
    assert len(stems) == 1, stems


@pytest.mark.parametrize(
    ("word", "expected"),
    # Porter (1980) step 1 examples, plus short and non-alphabetic words left alone.
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("cats", "cat"),
        ("feed", "feed"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("conflated", "conflat"),
        ("happy", "happi"),
        ("corpus", "corpus"),
        ("is", "is"),
        ("bm25", "bm25"),
    ],
)
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_distinct_words_stay_distinct() -> None:
    assert len({stem(w) for w in ("rout", "root", "rotate", "router", "rating")}) == 5


def test_chinese_tokens_drop_stopwords_question_words_and_punctuation() -> None:
    tokens = tokenize("用人单位在试用期内可以解除劳动合同吗？有哪些条件，如何处理？")
    for expected in ("用人", "单位", "试用", "试用期", "解除", "劳动", "合同", "条件", "处理"):
        assert expected in tokens
    for dropped in ("在", "吗", "哪些", "如何", "？", "，", "有"):
        assert dropped not in tokens
    assert all(t.strip() for t in tokens)


def test_search_mode_also_yields_subwords() -> None:
    tokens = tokenize("中华人民共和国劳动合同法")
    assert {"中华人民共和国", "人民", "共和国", "劳动", "合同法"} <= set(tokens)


def test_mixed_text_is_tokenized_run_by_run() -> None:
    tokens = tokenize("AdaRouter在EUR/USD上的准确率是多少？训练用了多少个epochs")
    assert tokens[:3] == ["adarouter", "eur", "usd"]
    assert "准确率" in tokens and "训练" in tokens and "epoch" in tokens
    assert not {"的", "多少", "上"} & set(tokens)


def test_full_width_forms_match_ascii() -> None:
    assert tokenize("ＥＵＲ／ＵＳＤ　１２") == tokenize("EUR/USD 12")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is it?", True),
        ("  ", True),
        ("", True),
        ("什么是吗？", True),
        ("的了吗", True),
        ("What is BM25?", False),
        ("什么是合同？", False),
    ],
)
def test_is_stopword_only(text: str, expected: bool) -> None:
    assert is_stopword_only(text) is expected


def test_tokenize_is_thread_safe_on_first_use() -> None:
    # A fresh process, so jieba's one-time initialisation itself races across 8 threads.
    script = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from treerag_core.index.tokens import tokenize\n"
        "texts = ['劳动者在试用期内可以解除劳动合同', '中华人民共和国民法典第一千条'] * 8\n"
        "with ThreadPoolExecutor(max_workers=8) as pool:\n"
        "    got = list(pool.map(tokenize, texts))\n"
        "print(got == [tokenize(t) for t in texts], got[0] == got[2], len(got[0]) > 3)\n"
    )
    repo = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "True"]


def test_word_lists_and_jieba_are_public_for_the_modules_that_share_them() -> None:
    import ast

    import jieba

    assert word_set(" a\nb  a ") == frozenset({"a", "b"})
    assert load_jieba() is jieba and load_jieba().lcut("劳动合同") == ["劳动合同"]
    # Other modules use these names, never text's private ones (one definition each).
    repo = Path(__file__).resolve().parents[1]
    private = [
        f"{path.relative_to(repo)}: {alias.name}"
        for folder in ("treerag_core", "ui", "pages")
        for path in sorted((repo / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "treerag_core.index.tokens"
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []
