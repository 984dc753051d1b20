"""Step 3: the answer. Streamed from the LLM with cited sections, or a cited extractive answer."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from treerag_core.pagemap import format_pages
from treerag_core.prompt_budget import ANSWER_REPLY_TOKENS, check_fits
from treerag_core.prompts import build_synthesis_prompt
from treerag_core.text_rules import sentence_spans
from treerag_core.types import ContextSection, Language, RetrievedChunk

EmbedMany = Callable[[Sequence[str]], np.ndarray]

NO_EVIDENCE = {
    "en": "No evidence was retrieved for this question, so there is nothing to answer from.",
    "zh": "没有检索到与该问题相关的证据，无法作答。",
}


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


def extractive_answer(
    question_vector: np.ndarray,
    hits: Sequence[RetrievedChunk],
    language: Language,
    embed_many: EmbedMany,
    max_sentences: int = 3,
) -> str:
    """The most relevant sentences of the top chunks, each with its source path.

    Sentences are ranked by cosine with the question (the embedder is multilingual, so a
    Chinese question still picks the right English sentence) and shown in document order of
    their rank; the frame text follows the question's language.
    """
    if not hits:
        return NO_EVIDENCE[language]
    candidates: list[tuple[str, str]] = []
    for hit in hits[:3]:
        text = hit.chunk.text
        for start, end in sentence_spans(text) or [(0, len(text))]:
            sentence = text[start:end].strip()
            if len(sentence) >= 12:
                candidates.append((sentence, _label(hit)))
    if not candidates:
        candidates = [(hit.chunk.text.strip(), _label(hit)) for hit in hits[:3]]
    vectors = embed_many([sentence for sentence, _ in candidates])
    sims = vectors @ question_vector.astype(np.float32)
    order = sorted(range(len(candidates)), key=lambda i: -float(sims[i]))[:max_sentences]
    header = "根据检索结果:" if language == "zh" else "From the retrieved evidence:"
    label = "来源" if language == "zh" else "Source"
    lines = [header]
    for n, i in enumerate(order, start=1):
        sentence, path = candidates[i]
        lines.append(f'[{n}] "{inert_links(sentence)}" [{label}: {path}]')
    return "\n".join(lines)


def stream_llm_answer(
    client,
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
