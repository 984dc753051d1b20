"""The offline extractor: noun-phrase concepts and sentence co-occurrence edges weighted by PMI.

No model and no network: Chinese concepts are runs of jieba.posseg noun tags, English ones
are the word runs left between stop words, common verbs and punctuation (a RAKE-style,
POS-free chunker). Concepts are merged within the leaf by a normalised key (lower case,
stemmed words); two concepts are linked when they share a sentence, weighted by their
pointwise mutual information over the leaf's sentences (GraphRAG's fast NLP recipe).
Deterministic: the same chunks always give the same graph, ids and order.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.text_rules import sentence_spans
from treerag_core.base.types import Chunk, Language
from treerag_core.index.tokens import EN_STOPWORDS, load_jieba, stem, word_set
from treerag_core.strategies.graph.types import CO_OCCURS, Concept, ConceptRelation, LeafGraph, Span

EXTRACTOR_VERSION = "offline-2"  # part of the content key: a changed recipe rebuilds graphs
MAX_WORDS = 4  # longest English phrase kept whole; longer runs are cut from their head end
MAX_EVIDENCE = 5  # sentences stored per edge (the count keeps the true number)

# Words that end a noun phrase in the POS-free chunker: frequent verbs, adverbs and generic
# academic/legal filler that would otherwise glue phrases together ("model achieves results").
_BOUNDARY_WORDS = word_set(
    """
    use used uses using show shows shown showed propose proposed proposes present presented
    presents achieve achieves achieved obtain obtains obtained perform performs performed make
    makes made take takes taken given give gives based compare compared compares find found
    finds report reported reports see seen consider considered include includes included
    including provide provides provided require requires required allow allows allowed however
    thus therefore hence first second third one two three four five new different several
    various able following previous respectively like well even still since although though
    usually often always never another around among across along best better higher lower
    large larger small smaller high low good similar same due rather instead either neither
    let lets get gets got become becomes became seem seems seemed help helps helped need needs
    needed want wants try tries tried apply applies applied note noted describe described
    introduce introduced study studied focus focuses evaluate evaluated evaluates train
    trained trains test tested predict predicts predicted generate generated generates learn
    learns learned contain contains contained consist consists consisting remain remains
    et al whereas whilst add adds added discard represent represents expressed denote denotes
    denoted refer refers referred called defined define defines read reads write writes
    improve improves outperform outperforms come comes came go goes went
    """
)
# Single words too generic to be a concept on their own (they stay inside longer phrases).
_GENERIC_WORDS = word_set(
    """
    paper work results result approach method methods way ways number numbers set sets case
    cases example examples part parts type types kind kinds use fact order time times terms
    term section sections table tables figure figures fig respect addition end lot
    """
)
# Verbs by their place, for verbs no word list can hold: the word after a subject pronoun
# ("we explore"), and the word between an infinitive "to" and a determiner ("to answer this
# question", "to reduce the cost"; "applied to language data" keeps its noun).
_SUBJECTS = word_set("we you he she they")  # not "i": "type I error"
_DETERMINERS = word_set("a an the this that these those its their our his her your my each every")
# Citation and cross-reference markers ("BIBREF12", "TABREF3") are not concepts.
_MARKER = re.compile(r"(?:BIB|TAB|FIG|SEC|EQ)REF\d+|(?:INLINE|DISPLAY)FORM\d+")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*|\d+(?:\.\d+)?")

# jieba.posseg tags that make a noun run: nouns, names, places, organisations, other proper
# nouns, verbal/adjectival nouns, abbreviations, fixed phrases (劳动合同 is "l") and English.
_ZH_NOUN_TAGS = word_set("n nr nrt nrfg ns nt nz nw ng vn an j l eng")
_ZH_GENERIC = word_set("情况 方面 时候 部分 内容 方式 有关 其他 本法 本条 规定 条件 问题 一 二 三")
_ZH_MAX_TOKENS = 4


@dataclass(frozen=True)
class Mention:
    """One occurrence of a term: document offsets and its surface text."""

    start: int
    end: int
    surface: str


# ---- the leaf's text, rebuilt from its chunks ---------------------------------------------


def segments(chunks: Sequence[Chunk]) -> list[tuple[int, str]]:
    """The leaf's text as (document offset, text) runs: overlapping chunks merged into one."""
    runs: list[tuple[int, list[str], int]] = []  # start, pieces, end
    for chunk in sorted(chunks, key=lambda c: (c.start, c.end)):
        if runs and chunk.start <= runs[-1][2]:
            start, pieces, end = runs[-1]
            if chunk.end > end:
                pieces.append(chunk.text[end - chunk.start :])
                runs[-1] = (start, pieces, chunk.end)
        else:
            runs.append((chunk.start, [chunk.text], chunk.end))
    return [(start, "".join(pieces)) for start, pieces, _ in runs]


def chunks_covering(start: int, end: int, chunks: Sequence[Chunk]) -> tuple[str, ...]:
    """Ids of chunks holding [start, end) whole; else those overlapping it most (document order)."""
    whole = tuple(c.chunk_id for c in chunks if c.start <= start and end <= c.end)
    if whole:
        return whole
    overlap = {c.chunk_id: min(end, c.end) - max(start, c.start) for c in chunks}
    best = max(overlap.values(), default=0)
    return tuple(cid for cid, size in overlap.items() if size == best and size > 0)


# ---- terms ----------------------------------------------------------------------------------


def _joined(text: str, left: re.Match[str], right: re.Match[str]) -> bool:
    """Two words with only spaces between them (no punctuation: the same clause)."""
    return not text[left.end() : right.start()].strip()


def _verb_by_place(text: str, words: Sequence[re.Match[str]], i: int) -> bool:
    """Whether word `i` is a verb by its neighbours (see _SUBJECTS): a POS-free rule."""
    if i == 0 or not _joined(text, words[i - 1], words[i]):
        return False
    before = words[i - 1].group().lower()
    if before in _SUBJECTS:
        return True
    return (
        before == "to"
        and i + 1 < len(words)
        and _joined(text, words[i], words[i + 1])
        and words[i + 1].group().lower() in _DETERMINERS
    )


def english_terms(text: str, offset: int = 0) -> list[Mention]:
    """Noun-phrase-like word runs of one English sentence, with document offsets."""
    out: list[Mention] = []
    run: list[re.Match[str]] = []

    def flush() -> None:
        # A run-final past participle is a verb ("features expressed"), not part of the phrase.
        while run and run[-1].group().lower().endswith("ed") and len(run[-1].group()) > 4:
            run.pop()
        pieces = [run[i : i + MAX_WORDS] for i in range(0, len(run), MAX_WORDS)]
        if len(run) > MAX_WORDS:  # English heads come last: keep the tail pieces whole
            tail = len(run) % MAX_WORDS
            pieces = [run[:tail]] if tail else []
            pieces += [run[i : i + MAX_WORDS] for i in range(tail, len(run), MAX_WORDS)]
        for words in pieces:
            if not words:
                continue
            surface = text[words[0].start() : words[-1].end()]
            if len(words) == 1 and (len(surface) < 3 or surface.lower() in _GENERIC_WORDS):
                continue
            out.append(Mention(offset + words[0].start(), offset + words[-1].end(), surface))
        run.clear()

    words = list(_EN_WORD.finditer(text))
    for i, match in enumerate(words):
        gap = text[words[i - 1].end() if i else 0 : match.start()]
        if run and gap.strip():  # punctuation between words ends the phrase
            flush()
        word = match.group()
        lower = word.lower()
        if (
            lower in EN_STOPWORDS
            or lower in _BOUNDARY_WORDS
            or word[0].isdigit()
            or _MARKER.fullmatch(word) is not None
            or (lower.endswith("ly") and len(lower) > 4)
            or _verb_by_place(text, words, i)
        ):
            flush()
            continue
        run.append(match)
    flush()
    return out


def chinese_terms(text: str, offset: int = 0) -> list[Mention]:
    """Runs of noun-tagged jieba words (at most _ZH_MAX_TOKENS) of one sentence."""
    from jieba import posseg

    load_jieba()  # initialise the shared dictionary once, quietly
    out: list[Mention] = []
    run: list[tuple[int, str]] = []
    position = 0

    def flush() -> None:
        for i in range(0, len(run), _ZH_MAX_TOKENS):
            words = run[i : i + _ZH_MAX_TOKENS]
            surface = "".join(w for _, w in words)
            start = words[0][0]
            if len(surface) >= 2 and surface not in _ZH_GENERIC:
                out.append(Mention(offset + start, offset + start + len(surface), surface))
        run.clear()

    for pair in posseg.cut(text):
        word, flag = pair.word, pair.flag
        start = text.find(word, position)  # posseg keeps every character, in order
        position = start + len(word) if start >= 0 else position
        if start < 0 or flag not in _ZH_NOUN_TAGS or not word.strip():
            flush()
            continue
        if flag == "eng" and word.lower() in EN_STOPWORDS:
            flush()
            continue
        run.append((start, word))
    flush()
    return out


def normalise(surface: str, language: Language) -> str:
    """The merge key of a term: lower case; English words stemmed, possessives dropped."""
    text = surface.lower()
    if language == "zh":
        return re.sub(r"\s+", "", text)
    words = re.findall(r"[a-z0-9]+", text.replace("'s", ""))
    return " ".join(stem(w) for w in words)


def terms_of(text: str, language: Language, offset: int = 0) -> list[Mention]:
    """The concept mentions of a sentence in its language."""
    return chinese_terms(text, offset) if language == "zh" else english_terms(text, offset)


# ---- the graph ------------------------------------------------------------------------------


def extract_offline(
    chunks: Sequence[Chunk], language: Language, prefix: str = ""
) -> tuple[tuple[Concept, ...], tuple[ConceptRelation, ...]]:
    """Concepts and PMI-weighted co-occurrence relations of a leaf (or any set of chunks).

    `prefix` starts every node id (a leaf id); nodes are numbered by first mention. Mentions
    and edge evidence carry document offsets and the ids of the chunks they lie in.
    """
    by_key: dict[str, list[Mention]] = {}
    sentences: list[tuple[int, int, tuple[str, ...]]] = []  # start, end, concept keys
    for seg_start, seg_text in segments(chunks):
        for s, e in sentence_spans(seg_text):
            keys: list[str] = []
            for mention in terms_of(seg_text[s:e], language, seg_start + s):
                key = normalise(mention.surface, language)
                if not key:
                    continue
                by_key.setdefault(key, []).append(mention)
                keys.append(key)
            sentences.append((seg_start + s, seg_start + e, tuple(dict.fromkeys(keys))))

    order = sorted(by_key, key=lambda k: (by_key[k][0].start, k))
    ids = {key: f"{prefix}#c{i + 1}" for i, key in enumerate(order)}
    concepts = tuple(_concept(ids[key], key, by_key[key], chunks) for key in order)
    return concepts, _relations(sentences, ids, chunks)


def _concept(node_id: str, key: str, mentions: list[Mention], chunks: Sequence[Chunk]) -> Concept:
    surfaces = Counter(m.surface for m in mentions)
    first = {}
    for m in mentions:
        first.setdefault(m.surface, m.start)
    name = min(surfaces, key=lambda s: (-surfaces[s], first[s]))  # most frequent, then first
    spans = tuple(Span(m.start, m.end, chunks_covering(m.start, m.end, chunks)) for m in mentions)
    return Concept(node_id=node_id, key=key, name=name, mentions=spans)


def _relations(
    sentences: list[tuple[int, int, tuple[str, ...]]],
    ids: dict[str, str],
    chunks: Sequence[Chunk],
) -> tuple[ConceptRelation, ...]:
    n = len(sentences)
    single: Counter[str] = Counter()
    pairs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for start, end, keys in sentences:
        single.update(keys)
        node_ids = sorted(ids[k] for k in keys)
        for i, a in enumerate(node_ids):
            for b in node_ids[i + 1 :]:
                pairs.setdefault((a, b), []).append((start, end))
    key_of = {v: k for k, v in ids.items()}
    out = []
    for (a, b), spans in sorted(pairs.items(), key=lambda item: _id_order(item[0])):
        # PMI = log p(a,b) / (p(a) p(b)), probabilities over the leaf's sentences.
        pmi = math.log(len(spans) * n / (single[key_of[a]] * single[key_of[b]]))
        evidence = tuple(Span(s, e, chunks_covering(s, e, chunks)) for s, e in spans[:MAX_EVIDENCE])
        out.append(ConceptRelation(a, b, round(pmi, 4), len(spans), evidence, CO_OCCURS))
    return tuple(out)


def _id_order(pair: tuple[str, str]) -> tuple[int, int]:
    return tuple(int(x.rsplit("#c", 1)[1]) for x in pair)  # type: ignore[return-value]


def content_key(chunks: Sequence[Chunk], extractor: str) -> str:
    """Hash of a leaf's chunk texts and offsets plus the extractor: unchanged means reusable."""
    digest = hashlib.sha256(extractor.encode())
    for chunk in sorted(chunks, key=lambda c: c.start):
        digest.update(f"\x1f{chunk.start}:{chunk.end}\x1e".encode())
        digest.update(chunk.text.encode("utf-8"))
    return digest.hexdigest()[:32]


def build_leaf_graph(
    leaf_id: str, doc_id: str, chunks: Sequence[Chunk], language: Language
) -> LeafGraph:
    """The offline graph of one leaf, timed."""
    began = time.perf_counter()
    concepts, relations = extract_offline(chunks, language, prefix=leaf_id)
    return LeafGraph(
        leaf_id=leaf_id,
        doc_id=doc_id,
        content_key=content_key(chunks, EXTRACTOR_VERSION),
        extractor="offline",
        language=language,
        concepts=concepts,
        relations=relations,
        build_seconds=time.perf_counter() - began,
    )
