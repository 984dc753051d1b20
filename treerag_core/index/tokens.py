"""Tokenizing for BM25: English stop words and stemming, jieba for Han runs."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
import warnings
from functools import lru_cache
from types import ModuleType

from treerag_core.base.text_rules import HAN_RUNS

# Numbers first (73.2, 1,000), then runs of letters/digits; "/", "-", "'" and the rest split.
_EN_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?![\d])|\d+(?:\.\d+)+|[^\W_]+")


def word_set(listing: str) -> frozenset[str]:
    """The whitespace-separated words of a listing (stop words, boundary words, POS tags)."""
    return frozenset(listing.split())


EN_STOPWORDS = word_set(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can could couldn't d did didn't do does doesn't doing don
    don't down during each few for from further had hadn't has hasn't have haven't having he her
    here hers herself him himself his how i if in into is isn't it it's its itself just ll m ma
    me might mightn't more most must mustn't my myself needn't no nor not now o of off on once
    only or other our ours ourselves out over own re s same shan't she she's should should've
    shouldn't so some such t than that that'll the their theirs them themselves then there these
    they this those through to too under until up ve very was wasn't we were weren't what when
    where which while who whom why will with won't would wouldn't y you you'd you'll you're
    you've your yours yourself yourselves also may us e g eg ie etc vs via per whose whether
    upon yet within without shall tell describe explain many much
    """
)
# Contractions are split by the token pattern ("don't" -> "don", "t"), so their parts count too.
EN_STOPWORDS = EN_STOPWORDS | frozenset(
    part for word in EN_STOPWORDS if "'" in word for part in word.split("'")
)

# Function words and question words; negation (没有, 不) and 问题 stay: they carry meaning in law.
ZH_STOPWORDS = word_set(
    """
    的 了 是 在 和 与 及 或 并 而 且 也 都 就 又 还 被 把 将 对 从 向 以 于 为 由 之 其 此 该 这 那
    这个 那个 这些 那些 这种 那种 一个 一种 个 着 过 地 得 所 等 等等 中 上 下 里 即 则 但 但是
    如果 因为 所以 因此 以及 或者 还是 并且 而且 我 你 他 她 它 我们 你们 他们 它们 自己 有 有的
    什么 哪些 哪个 哪里 哪 如何 怎么 怎样 怎么样 为什么 为何 吗 呢 吧 啊 呀 么 多少 几 是否
    能否 是不是 请问 请 关于 对于 根据 按照 通过 进行 之一 其中 以上 以下 哪儿 谁
    """
)

_jieba_lock = threading.Lock()
_jieba_ready = False


def load_jieba() -> ModuleType:
    """jieba, initialised once (its dictionary load takes ~0.8 s); safe under Streamlit threads."""
    global _jieba_ready
    with warnings.catch_warnings():
        # jieba reads its dictionary through pkg_resources when setuptools has it, and a
        # setuptools that another package pulls in warns on that import (stderr stays clean).
        warnings.filterwarnings(
            "ignore", message="pkg_resources is deprecated", category=UserWarning
        )
        import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba_ready = True
    return jieba


def tokenize(text: str) -> list[str]:
    """Content tokens for BM25: Han runs through jieba, everything else as stemmed English."""
    text = unicodedata.normalize("NFKC", text).lower()  # full-width Ｅ１ -> e1
    tokens: list[str] = []
    for i, run in enumerate(HAN_RUNS.split(text)):
        if not run:
            continue
        if i % 2:  # split() with a capture group puts the Han runs at odd positions
            tokens.extend(_tokenize_zh(run))
        else:
            tokens.extend(_tokenize_en(run))
    return tokens


def _tokenize_en(text: str) -> list[str]:
    out = []
    for match in _EN_TOKEN.finditer(text):
        word = match.group()
        if word in EN_STOPWORDS:
            continue
        if word[0].isdigit():
            out.append(word.replace(",", "") if "." not in word else word)
        else:
            out.append(stem(word))
    return out


def _tokenize_zh(text: str) -> list[str]:
    words = load_jieba().lcut_for_search(text)
    return [w for w in words if w.strip() and w not in ZH_STOPWORDS]


def zh_words(text: str) -> list[str]:
    """`text` cut into words by jieba (precise mode: the pieces join back into `text`), for
    breaking a Chinese line between words rather than inside one (中华人民共和国 / 劳动合同法)."""
    return load_jieba().lcut(text)


def is_stopword_only(text: str) -> bool:
    """True when the text has no content token (empty, punctuation, or only stop words)."""
    return not tokenize(text)


# ---- a light Porter stemmer (steps 1a-1c and 5 of Porter 1980) ------------------------------
# Enough to merge inflections (epochs/epoch, routing/routes/route, trained/training); the
# derivational steps 2-4 are left out on purpose: they conflate too much for exact retrieval.

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in the stem."""
    m, prev_vowel = 0, False
    for i in range(len(stem_)):
        consonant = _is_consonant(stem_, i)
        if consonant and prev_vowel:
            m += 1
        prev_vowel = not consonant
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _is_consonant(stem_, i) for i in range(len(stem_)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Consonant-vowel-consonant ending, the last not w, x or y (hop, not hoop)."""
    if len(word) < 3:
        return False
    return (
        _is_consonant(word, len(word) - 3)
        and not _is_consonant(word, len(word) - 2)
        and _is_consonant(word, len(word) - 1)
        and word[-1] not in "wxy"
    )


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light Porter stemming of one lowercase word; short and non-alphabetic words unchanged."""
    if len(word) <= 2 or not word.isalpha() or not word.isascii():
        return word
    # Step 1a: plurals.
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss") and not word.endswith("us"):
        word = word[:-1]
    # Step 1b: -eed, -ed, -ing.
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif _double_consonant(word) and word[-1] not in "lsz":
                    word = word[:-1]
                elif _measure(word) == 1 and _cvc(word):
                    word += "e"
                break
    # Step 1c: y -> i after a vowel-bearing stem (accuracy/accuracies meet at "accuraci").
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    # Step 5a: a final e (route/routing meet at "rout").
    if word.endswith("e"):
        m = _measure(word[:-1])
        if m > 1 or (m == 1 and not _cvc(word[:-1])):
            word = word[:-1]
    # Step 5b: -ll -> -l on long stems.
    if _double_consonant(word) and word.endswith("l") and _measure(word) > 1:
        word = word[:-1]
    return word
