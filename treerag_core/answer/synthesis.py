"""Step 3: the answer. Streamed from the LLM with cited sections, or a cited extractive answer."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from treerag_core.answer.flags import (
    NOT_ANSWERED_SCORE,
    WEAK_RERANK_LOGIT,
    AnswerVerdict,
    Verdict,
    evidence_scores,
    hits_cross_languages,
    judge,
)
from treerag_core.base.pagemap import format_pages
from treerag_core.base.text_rules import (
    ELLIPSIS,
    detect_language,
    one_line,
    opens_list_item,
    sentence_spans,
    truncate,
)
from treerag_core.base.types import ContextSection, Fallback, Language, RetrievedChunk, Trace
from treerag_core.index.tokens import tokenize
from treerag_core.llm import LLMClient
from treerag_core.llm.prompt_budget import ANSWER_REPLY_TOKENS, check_fits
from treerag_core.llm.prompts import build_synthesis_prompt

EmbedMany = Callable[[Sequence[str]], np.ndarray]
NO_LLM_ANSWER = "no_llm_client"  # the Fallback reason of an LLM asked for but not configured
LLM_OFF = "llm_off"  # the Fallback reason of an answer written with the LLM switched off
EXTRACTIVE_DETAIL = "extractive answer (cited sentences from the evidence, no LLM)"
LLM_OFF_DETAIL = f"LLM switched off: {EXTRACTIVE_DETAIL}"

NO_EVIDENCE = {
    "en": "No evidence was retrieved for this question, so there is nothing to answer from.",
    "zh": "没有检索到与该问题相关的证据，无法作答。",
}
NOT_ANSWERED = {
    "en": "The documents do not seem to answer this question: the closest passage (in “{path}”) "
    "matches it only weakly.",
    "zh": "文档似乎没有回答这个问题：最接近的段落（在“{path}”中）与问题的相关性很弱。",
}
SENTENCE_MARGIN = 400  # characters looked at around a passage to complete its sentences
MIN_SENTENCE_CHARS = 12
MEANING_WEIGHT = 0.6  # sentence score = 0.6 × cosine + 0.4 × share of question terms
DUPLICATE_JACCARD = 0.7  # term overlap above which two sentences say the same
# A list item is quoted with the line that opens its list; looked for this far back.
LEAD_IN_CHARS = 3000
LEAD_IN_MAX = 200  # a longer lead-in paragraph gives only its last sentence
ITEMS_MAX = 300  # characters of a list quoted after the line that opens it


def evidence_pairs(
    hits: Sequence[RetrievedChunk], sections: Sequence[ContextSection] = ()
) -> list[tuple[str, str]]:
    """(label, text) the answer reads: a strategy's context sections first, then passages."""
    pairs = [(section.title, section.text) for section in sections if section.text.strip()]
    return pairs + [(_label(hit), hit.chunk.text) for hit in hits]


def _label(hit: RetrievedChunk) -> str:
    """The passage's heading path, with its PDF pages when it has them: `path (p. 38)`."""
    pages = format_pages(hit.chunk.page_start, hit.chunk.page_end)
    return f"{hit.chunk.heading_path} ({pages})" if pages else hit.chunk.heading_path


_LINK_BRACKETS = re.compile(r"([\[\]<>])")
_BARE_URL = re.compile(r"(?i)(?<=:)//|\bwww\.")


def inert_links(text: str) -> str:
    """Document text quoted into a Markdown answer, with every link made inert.

    Brackets and angle brackets are backslash-escaped (no `[text](url)`, `![img](url)`,
    `<url>` or raw HTML), and `://` and `www.` get backslashes too, so no bare URL is
    auto-linked: a document cannot put a clickable link into an extractive answer.
    """
    text = _LINK_BRACKETS.sub(r"\\\1", text)
    return _BARE_URL.sub(lambda m: m.group(0).replace("/", "\\/").replace(".", "\\."), text)


def synthesis_prompt(
    question: str,
    hits: Sequence[RetrievedChunk],
    language: Language,
    sections: Sequence[ContextSection] = (),
) -> str:
    return build_synthesis_prompt(question, evidence_pairs(hits, sections), language)


@dataclass(frozen=True)
class Sentence:
    """A whole sentence of a document, found around a retrieved passage, with its scores."""

    text: str
    path: str  # the heading path of the passage it came from (what the citation names)
    doc: str
    start: int  # offsets into the document's text
    end: int
    hit_rank: int  # 0-based rank of its passage in the final order
    meaning: float = 0.0  # cosine with the question
    overlap: float = 0.0  # share of the question's terms it (or its section's title) contains
    score: float = 0.0
    heading: str = ""  # its passage's heading path, without pages
    lead_in: str = ""  # for a list item: the line that opens its list ("…有下列情形之一的：")
    items: str = ""  # for a line that opens a list: its first items, which say what it means


@dataclass(frozen=True)
class Extract:
    """The extractive answer's choice: the sentences to say, or `answered=False`."""

    sentences: tuple[Sentence, ...]
    answered: bool
    best: Sentence | None
    verdict: AnswerVerdict | None = None  # what the answer says about its own evidence


def _section_window(doc_text: str, start: int, end: int, margin: int) -> tuple[int, int]:
    """[lo, hi) around a passage, widened by `margin` but never across a heading line."""
    lo, hi = max(0, start - margin), min(len(doc_text), end + margin)
    heading = doc_text.rfind("\n#", lo, start)
    if heading != -1:
        lo = doc_text.find("\n", heading + 1, start)
        lo = start if lo == -1 else lo + 1
    nxt = doc_text.find("\n#", end, hi)
    return lo, (nxt if nxt != -1 else hi)


def whole_sentences(
    hits: Sequence[RetrievedChunk], doc_texts: Mapping[str, str], max_hits: int = 5
) -> list[Sentence]:
    """Whole sentences around the top passages (a passage may start or end mid-sentence).

    Each sentence that overlaps a passage is taken whole from the document, never across a
    heading; a sentence seen twice (overlapping passages) is kept once, at its best rank.
    """
    out: list[Sentence] = []
    seen: set[tuple[str, int]] = set()
    for rank, hit in enumerate(hits[:max_hits]):
        chunk = hit.chunk
        doc_text = doc_texts.get(chunk.doc_id)
        if doc_text is not None and doc_text[chunk.start : chunk.end] == chunk.text:
            lo, hi = _section_window(doc_text, chunk.start, chunk.end, SENTENCE_MARGIN)
            window, offset = doc_text[lo:hi], lo
        else:  # no document text to complete them: the passage's own sentences
            window, offset = chunk.text, chunk.start
        for s, e in sentence_spans(window):
            start, end = offset + s, offset + e
            if end <= chunk.start or start >= chunk.end or (chunk.doc_id, start) in seen:
                continue
            text = window[s:e]
            if len(text) < MIN_SENTENCE_CHARS or text.startswith("#"):
                continue
            seen.add((chunk.doc_id, start))
            out.append(
                Sentence(
                    text, _label(hit), chunk.doc_id, start, end, rank, heading=chunk.heading_path
                )
            )
    return out


def lead_in(doc_text: str, start: int) -> str:
    """The line that opens the list whose item starts at `start`, or "" if there is none.

    Walks back line by line (items may sit on single lines or in blank-line paragraphs)
    over the item's earlier siblings, never past a heading or `LEAD_IN_CHARS`; the first
    line that is not an item is the lead-in when it ends with a colon ("第三十八条
    用人单位有下列情形之一的，劳动者可以解除劳动合同：").
    """
    floor = max(0, start - LEAD_IN_CHARS)
    heading = doc_text.rfind("\n#", floor, start)
    floor = heading + 1 if heading != -1 else floor
    for raw in reversed(doc_text[floor:start].splitlines()):  # nearest first
        line = raw.strip()
        if not line or opens_list_item(line):
            continue
        if line.startswith("#") or not line.endswith(("：", ":")):
            return ""
        if len(line) > LEAD_IN_MAX:
            spans = sentence_spans(line)
            line = line[spans[-1][0] : spans[-1][1]] if spans else ""
        return one_line(line)
    return ""


def list_items(doc_text: str, end: int) -> str:
    """The list items right after a line that opens a list (ending at `end`), as one line
    of at most about `ITEMS_MAX` characters ("…" where the list goes on)."""
    out: list[str] = []
    size = 0
    for raw in doc_text[end : end + 4 * ITEMS_MAX].splitlines():
        item = one_line(raw)
        if not item:
            continue
        if not opens_list_item(item):
            break
        if size + len(item) > ITEMS_MAX:  # the first item too: one long line is one "item"
            out.append(truncate(item, ITEMS_MAX - size) if not out else ELLIPSIS)
            break
        out.append(item)
        size += len(item)
    return " ".join(out)


def with_lead_ins(result: Extract, doc_texts: Mapping[str, str]) -> Extract:
    """List items with the line that opens their list, and such a line with its first items,
    unless the answer already says them: neither half of a list means much alone."""
    said = {one_line(s.text) for s in result.sentences}
    out = []
    for sentence in result.sentences:
        text = doc_texts.get(sentence.doc)
        if text is not None and opens_list_item(sentence.text):
            lead = lead_in(text, sentence.start)
            if lead and lead not in said:
                sentence = replace(sentence, lead_in=lead)
                said.add(lead)
        elif text is not None and sentence.text.rstrip().endswith(("：", ":")):
            items = list_items(text, sentence.end)
            others = [one_line(s.text) for s in result.sentences if s is not sentence]
            if items and not any(other in items for other in others):
                sentence = replace(sentence, items=items)
        out.append(sentence)
    return replace(result, sentences=tuple(out))


def _terms(text: str) -> set[str]:
    return set(tokenize(text))


def score_sentences(
    question: str,
    question_vector: np.ndarray,
    candidates: Sequence[Sentence],
    embed_many: EmbedMany,
) -> list[Sentence]:
    """Each sentence scored by meaning (cosine) plus term overlap; best first."""
    if not candidates:
        return []
    vectors = embed_many([c.text for c in candidates])
    sims = vectors @ question_vector.astype(np.float32)
    q_terms = _terms(question)
    terms = [_terms(c.text) for c in candidates]
    # A question term found in every candidate tells them apart less than a rare one: terms
    # are weighted by their inverse frequency over the candidates themselves.
    n = len(candidates)
    weight = {t: math.log(1 + n / (1 + sum(t in ts for ts in terms))) for t in q_terms}
    # A section title is part of what its sentences are about (as in step 2's BM25 over
    # `heading path + passage`): "E101 ... 重新插紧后重启即可恢复" answers 导航类故障怎么排除
    # because it sits under "（一）导航类故障", though it never says 导航. The title's terms
    # count as found, not in the weights: every sentence of a section shares its title, and
    # would otherwise make the very terms it names look common.
    titles = {c.heading: _terms(c.heading) for c in candidates}  # one tokenizing a section
    found = [ts | titles[c.heading] for ts, c in zip(terms, candidates, strict=True)]
    total = sum(weight.values())
    q_language = detect_language(question)
    scored = []
    for cand, sim, ts in zip(candidates, sims, found, strict=True):
        overlap = sum(weight[t] for t in q_terms & ts) / total if total else 0.0
        if detect_language(cand.text) != q_language:
            # Words of another language cannot be shared: overlap is undefined there, not a
            # miss, so the sentence is judged by meaning alone (the embedder is multilingual).
            score = float(sim)
        else:
            score = MEANING_WEIGHT * float(sim) + (1 - MEANING_WEIGHT) * overlap
        scored.append(replace(cand, meaning=float(sim), overlap=overlap, score=score))
    return sorted(scored, key=lambda c: (-c.score, c.hit_rank, c.start))


def _duplicate(a: Sentence, b: Sentence) -> bool:
    ta, tb = _terms(a.text), _terms(b.text)
    if not ta or not tb:
        return a.text == b.text
    return len(ta & tb) / len(ta | tb) >= DUPLICATE_JACCARD


def _by_passage(scored: Sequence[Sentence]) -> list[list[Sentence]]:
    """The sentences of each passage, best first; passages in step 2's order."""
    groups: dict[int, list[Sentence]] = {}
    for s in sorted(scored, key=lambda c: (c.hit_rank, -c.score, c.start)):
        groups.setdefault(s.hit_rank, []).append(s)
    return [groups[rank] for rank in sorted(groups)]


def _reading_order(kept: Sequence[Sentence]) -> list[Sentence]:
    """Sections in order of relevance; in each, its most relevant sentence leads and the
    others follow in document order (so a wrong fact never comes before the right one)."""
    sections: dict[tuple[str, str], list[Sentence]] = {}
    for k in kept:
        sections.setdefault((k.doc, k.path), []).append(k)
    return [s for lead, *rest in sections.values() for s in [lead, *sorted(rest, key=_pos)]]


def _pos(s: Sentence) -> tuple[str, int]:
    return s.doc, s.start


def choose_sentences(
    scored: Sequence[Sentence], threshold: float, max_sentences: int = 3
) -> Extract:
    """The sentences to answer with (`answered=False` only when there are none).

    Which passage speaks is step 2's verdict, not the sentence scores: its final order was
    decided by the cross-encoder reading question and passage together (for Chinese, by the
    fused dense + BM25 order), a stronger judge than one sentence's cosine and term overlap.
    Those choose *within* a passage. So the answer always leads with the best sentence of the
    top passage, whatever it scores (whether the evidence is weak is `flags.judge`'s verdict,
    shown beside the answer, not a reason to hide it); then the passages take turns in rank
    order (each one's best sentence, then each one's second best, ...), and each further
    sentence must clear `threshold` itself and not repeat one already said.
    """
    if not scored:
        return Extract((), False, None)
    best = max(scored, key=lambda c: (c.score, -c.hit_rank, -c.start))
    queues = _by_passage(scored)
    kept: list[Sentence] = [queues[0][0]]
    for depth in range(max(len(q) for q in queues)):
        for queue in queues:
            if len(kept) >= max_sentences:
                return Extract(tuple(_reading_order(kept)), True, best)
            if depth >= len(queue) or queue[depth] is kept[0]:
                continue
            cand = queue[depth]
            if cand.score >= threshold and not any(_duplicate(cand, k) for k in kept):
                kept.append(cand)
    return Extract(tuple(_reading_order(kept)), True, best)


def speaking_hits(
    hits: Sequence[RetrievedChunk], weak_logit: float = WEAK_RERANK_LOGIT
) -> list[RetrievedChunk]:
    """The passages the answer may quote: the top one (it carries the "not answered" verdict),
    then those the cross-encoder did not judge off-topic. A passage below the logit that
    flags a question's best evidence as too weak to be in scope is no evidence for a
    further sentence, however many words it shares. Unreranked passages (Chinese) all stay.
    """
    return [h for n, h in enumerate(hits) if n == 0 or h.rerank is None or h.rerank >= weak_logit]


def extract(
    question: str,
    question_vector: np.ndarray,
    hits: Sequence[RetrievedChunk],
    embed_many: EmbedMany,
    doc_texts: Mapping[str, str],
    threshold: float = NOT_ANSWERED_SCORE["en"],
    max_sentences: int = 3,
    candidates: Sequence[RetrievedChunk] = (),
    language: Language | None = None,
) -> Extract:
    """The sentences to say and the verdict on them (`flags.judge`: both readers of the
    evidence must doubt it for the answer to say the documents do not answer)."""
    candidates_s = whole_sentences(speaking_hits(hits), doc_texts)
    scored = score_sentences(question, question_vector, candidates_s, embed_many)
    result = with_lead_ins(choose_sentences(scored, threshold, max_sentences), doc_texts)
    language = language or detect_language(question)
    evidence = evidence_scores(hits, candidates)
    verdict = judge(
        result.best.score if result.best else None,
        evidence["top_rerank"],
        evidence["top_dense"],
        hits_cross_languages(hits, language),
        language,
        sentence_bar=threshold,
        shares_terms=shares_terms(scored),
    )
    if verdict.verdict == Verdict.NOT_ANSWERED:
        return Extract((), False, result.best, verdict)
    return replace(result, verdict=verdict)


def shares_terms(scored: Sequence[Sentence]) -> bool:
    """Whether any sentence the answer could quote holds one of the question's terms (its
    own words or its section title's: `Sentence.overlap` > 0)."""
    return any(s.overlap > 0 for s in scored)


def render_extract(result: Extract, language: Language) -> Iterator[str]:
    """The answer text, one cited sentence per delta (each ends with its [Source: path])."""
    label = "来源" if language == "zh" else "Source"
    if not result.answered:
        where = result.best.path if result.best else ""
        yield NOT_ANSWERED[language].format(path=where) if where else NO_EVIDENCE[language]
        return
    for n, sentence in enumerate(result.sentences):
        text = one_line(sentence.text)
        if sentence.lead_in:  # a list item alone would not say what it lists
            text = f"{sentence.lead_in}…{text}"
        if sentence.items:  # nor the line that opens a list without its items
            text = f"{text} {sentence.items}"
        text = inert_links(text)  # a document cannot plant a live link
        yield ("\n" if n else "") + f"{text} [{label}: {sentence.path}]"


def extractive(
    question: str,
    question_vector: np.ndarray,
    hits: Sequence[RetrievedChunk],
    language: Language,
    embed_many: EmbedMany,
    doc_texts: Mapping[str, str] | None = None,
    threshold: float | None = None,
    sections: Sequence[ContextSection] = (),
    candidates: Sequence[RetrievedChunk] = (),
) -> tuple[AnswerVerdict | None, Iterator[str]]:
    """A cited answer without an LLM: its verdict, and its text streamed one sentence at a time.

    Whole sentences around the top passages are scored by meaning (cosine with the question;
    the embedder is multilingual, so a Chinese question still finds an English sentence) plus
    the share of the question's terms they contain; near-duplicates are dropped. The answer
    leads with the top passage's best sentence; when both readers of the evidence find it
    weak (`flags.judge`), it says the documents do not seem to answer, naming the closest
    passage, and cites nothing.
    """
    if not hits:
        return None, iter([NO_EVIDENCE[language]])
    if threshold is None:
        threshold = NOT_ANSWERED_SCORE[language]
    result = extract(
        question, question_vector, hits, embed_many, doc_texts or {}, threshold,
        candidates=candidates, language=language,
    )  # fmt: skip

    def text() -> Iterator[str]:
        yield from render_extract(result, language)
        if result.answered:
            yield from _graph_paths(sections, language)
            yield from _context_rows(sections, language)

    return result.verdict, text()


def _graph_paths(sections: Sequence[ContextSection], language: Language) -> Iterator[str]:
    """The best graph path of each section that has one (rows with "path" and "section")."""
    rows = [
        s.rows[0] for s in sections if s.rows and "path" in s.rows[0] and "section" in s.rows[0]
    ]
    if not rows:
        return
    label = "来源" if language == "zh" else "Source"
    yield "\n\n" + ("图路径:" if language == "zh" else "Graph paths:")
    for row in rows[:2]:
        yield f"\n- {inert_links(str(row['path']))} [{label}: {row['section']}]"


def _row_label(row: Mapping[str, object]) -> str:
    """What a context row is about: an entity, a report title, a path, or a relation."""
    for key in ("entity", "title", "path"):
        if row.get(key):
            return str(row[key])
    return f"{row.get('source', '')} — {row.get('target', '')}"


# HiRAG's context sections by kind, for a Chinese answer (their titles are English labels).
_ZH_CONTEXT_TITLES = {
    "entities": "实体",
    "relations": "关系",
    "reports": "社区报告",
    "path": "桥接路径",
}


def _context_rows(sections: Sequence[ContextSection], language: Language) -> Iterator[str]:
    """The first row of each context section that names its passage (`found_in`: a heading
    path), cited, so an extractive answer cites the graph context it read (HiRAG's entities,
    relations, reports and path) and not only the passages."""
    cited = []
    for section in sections:
        row = next(
            (r for r in section.rows if r.get("found_in") and r.get("path") != "no path"), None
        )
        if row is not None:
            title = _ZH_CONTEXT_TITLES.get(section.kind, section.title)
            title = title if language == "zh" else section.title
            cited.append((title, _row_label(row), str(row["found_in"])))
    if not cited:
        return
    label = "来源" if language == "zh" else "Source"
    yield "\n\n" + ("图上下文:" if language == "zh" else "Graph context:")
    for title, what, passage in cited:
        yield f"\n- {title}: {inert_links(one_line(what))} [{label}: {passage}]"


def stream_llm_answer(
    client: LLMClient,
    question: str,
    hits: Sequence[RetrievedChunk],
    language: Language,
    model: str,
    sections: Sequence[ContextSection] = (),
    context_tokens: int | None = None,
) -> Iterator[str]:
    """Text deltas from the LLM; the caller reads `.usage` of the returned stream afterwards.

    Raises:
        LLMError: reason "context_too_small" when the prompt and reply exceed
        `context_tokens` (nothing is sent).
    """
    prompt = synthesis_prompt(question, hits, language, sections)
    if context_tokens is not None:
        check_fits(prompt, ANSWER_REPLY_TOKENS, context_tokens, "answer")
    return client.stream(prompt, model, max_tokens=ANSWER_REPLY_TOKENS)


def answer_fallbacks(trace: Trace) -> list[Fallback]:
    """The answer's fallbacks: those recorded, and an extractive answer written although the
    settings asked for an LLM that had no key (or endpoint) — the run made no LLM client, so
    nothing failed and nothing was recorded, yet the user asked for an LLM's answer — or
    with the LLM switched off (`llm_off`, e.g. `--mock`).

    Read from the trace (its settings and provider snapshot), so stored traces say it too.
    """
    recorded = [f for f in trace.fallbacks if f.stage == "synthesize"]
    wanted = bool(trace.settings.get("llm", {}).get("enabled"))
    if recorded or not trace.answer or trace.provider.get("llm"):
        return recorded
    if not wanted:  # by choice, but an extractive answer still says so (never silent)
        return [Fallback("synthesize", LLM_OFF, LLM_OFF_DETAIL)]
    return [
        Fallback(
            "synthesize",
            NO_LLM_ANSWER,
            f"no API key: {EXTRACTIVE_DETAIL}",
        )
    ]
