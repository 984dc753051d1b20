"""K-Type document summaries (seed 001): knowledge types with shares, core modules, use."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from treerag_core.base.errors import LLMError
from treerag_core.base.types import DocumentInfo, Language, TreeNode
from treerag_core.index.tokens import EN_STOPWORDS, ZH_STOPWORDS, load_jieba
from treerag_core.llm import LLMClient
from treerag_core.llm.prompts import first_json_object

KTYPE_VERSION = "ktype-1"  # part of the cache key: a new prompt or format invalidates it
TYPES = ("Procedure", "Reference", "Rule", "Concept")
TYPE_NAMES_ZH = {
    "Procedure": "操作步骤",
    "Reference": "参考资料",
    "Rule": "规则条文",
    "Concept": "原理说明",
}
_USE_EN = {
    "Procedure": "a how-to guide to follow step by step",
    "Reference": "a reference to look up values, options and facts",
    "Rule": "rules and obligations to check a case against",
    "Concept": "explanations of ideas, methods and reasons",
}
_USE_ZH = {
    "Procedure": "高实操性，适合作为操作指南使用",
    "Reference": "适合查阅参数、选项与事实",
    "Rule": "适合对照条文判断具体情形",
    "Concept": "适合理解概念、方法与原理",
}
MAX_MODULES = 8
MAX_TERMS = 8
LLM_BATCH = 5  # documents per call
OUTLINE_CHARS = 3000  # per document in the prompt

_ORDERED = re.compile(r"^\s*(?:\d{1,3}[.)]|第[一二三四五六七八九十\d]+步|step\s*\d+)", re.I | re.M)
_TABLE = re.compile(r"^\s*\|.*\|\s*$", re.M)
_FENCE = re.compile(r"^\s*(?:```|~~~)", re.M)
_ARTICLE = re.compile(r"第[一二三四五六七八九十百千零\d]+条")
_MODAL = re.compile(r"\b(?:must|shall|may not|required to|prohibited)\b", re.I)
_PROCEDURE_WORDS = re.compile(
    r"\b(?:how to|step|install|configure|set up|click)\b|步骤|如何|配置", re.I
)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


@dataclass(frozen=True)
class KTypeSummary:
    """One document's summary: what kinds of knowledge it holds, its modules, what it is for."""

    doc_id: str
    title: str
    language: Language
    types: tuple[tuple[str, float], ...]  # (type, share), largest first, shares sum to ~1
    modules: tuple[str, ...]
    use: str
    key_terms: tuple[str, ...] = ()
    method: str = "extractive"  # extractive | llm

    @property
    def text(self) -> str:
        """The summary as prose: what is embedded as the document vector and shown to users."""
        return render_ktype(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KTypeSummary:
        return cls(
            doc_id=str(data["doc_id"]),
            title=str(data["title"]),
            language="zh" if data.get("language") == "zh" else "en",
            types=tuple((str(t), float(s)) for t, s in data.get("types", ())),
            modules=tuple(str(m) for m in data.get("modules", ())),
            use=str(data.get("use", "")),
            key_terms=tuple(str(t) for t in data.get("key_terms", ())),
            method=str(data.get("method", "extractive")),
        )


# The lines after the types, in each wording: (form, separator) for modules, key terms, use.
_TAIL_FORMS = {
    "zh": (("核心知识模块：[{}]。", "、"), ("关键词：{}。", "、"), ("认知价值：{}。", "")),
    "en": (("Core modules: {}.", "; "), ("Key terms: {}.", ", "), ("Good for: {}.", "")),
}


def render_ktype(s: KTypeSummary) -> str:
    """Seed 001's wording: dominant type with share, then the others, modules, value."""
    if s.language == "zh":
        types = [f"{t}({TYPE_NAMES_ZH.get(t, t)})({share:.0%})" for t, share in s.types]
        lead = f"{s.title}。" + (f"本文档以 {types[0]} 为主导" if types else "")
        rest = f"，辅以 {'、'.join(types[1:])}" if len(types) > 1 else ""
        parts = [lead + rest + "。" if types else lead]
    else:
        types = [f"{t} ({share:.0%})" for t, share in s.types]
        parts = [f"{s.title}."]
        if types:
            rest = f", with {', '.join(types[1:])}" if len(types) > 1 else ""
            parts.append(f"Mostly {types[0]}{rest}.")
    tail = (s.modules, s.key_terms, (s.use,) if s.use else ())
    forms = _TAIL_FORMS["zh" if s.language == "zh" else "en"]
    parts += [
        form.format(sep.join(values))
        for values, (form, sep) in zip(tail, forms, strict=True)
        if values
    ]
    return ("" if s.language == "zh" else " ").join(parts)


def document_key(doc: DocumentInfo) -> str:
    """The cache key of a document's LLM summary: its content hash and the K-Type version."""
    return hashlib.sha256(f"{KTYPE_VERSION}\n{doc.sha256}".encode()).hexdigest()[:32]


# ---- extractive (offline) -----------------------------------------------------------------


def leaf_type(node: TreeNode) -> str:
    """A leaf's knowledge type from layout cues: numbered steps, tables/code, articles, modals."""
    text = f"{node.heading}\n{node.content}"
    if len(_ARTICLE.findall(text)) >= 1 or len(_MODAL.findall(text)) >= 3:
        return "Rule"
    if len(_ORDERED.findall(node.content)) >= 2 or _PROCEDURE_WORDS.search(node.heading):
        return "Procedure"
    if len(_TABLE.findall(node.content)) >= 2 or _FENCE.search(node.content):
        return "Reference"
    return "Concept"


def type_shares(leaves: Sequence[TreeNode]) -> tuple[tuple[str, float], ...]:
    """Each type's share of the document's leaf text (types under 5% are dropped)."""
    weight: Counter[str] = Counter()
    for leaf in leaves:
        weight[leaf_type(leaf)] += max(1, len(leaf.content))
    total = sum(weight.values())
    if not total:
        return ()
    shares = [(t, w / total) for t, w in weight.most_common() if w / total >= 0.05]
    norm = sum(s for _, s in shares)
    return tuple((t, round(s / norm, 2)) for t, s in shares)


def key_terms_zh(text: str, k: int = MAX_TERMS) -> tuple[str, ...]:
    """jieba's TF-IDF keywords (its bundled IDF table: offline)."""
    load_jieba()  # imported once, quietly, and initialised
    import jieba.analyse

    terms = jieba.analyse.extract_tags(text, topK=k * 2)
    return tuple(t for t in terms if t not in ZH_STOPWORDS and not t.isdigit())[:k]


def english_words(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _EN_WORD.findall(text)) if w not in EN_STOPWORDS]


def key_terms_en(
    text: str, doc_freq: Mapping[str, int], n_docs: int, k: int = MAX_TERMS
) -> tuple[str, ...]:
    """TF-IDF keywords against the corpus's document frequencies (surface words, readable)."""
    counts = Counter(english_words(text))
    scored = {
        w: (1 + math.log(c)) * math.log(1 + n_docs / (1 + doc_freq.get(w, 0)))
        for w, c in counts.items()
    }
    return tuple(sorted(scored, key=lambda w: (-scored[w], w))[:k])


def top_modules(nodes: Sequence[TreeNode], root: TreeNode) -> tuple[str, ...]:
    """The document's top-level headings (its core modules), at most MAX_MODULES."""
    by_id = {n.node_id: n for n in nodes}
    names = [by_id[c].heading for c in root.children if c in by_id and not by_id[c].synthetic]
    return tuple(" ".join(h.split()) for h in names[:MAX_MODULES])


def extractive_ktype(
    doc: DocumentInfo,
    nodes: Sequence[TreeNode],
    text: str,
    doc_freq: Mapping[str, int],
    n_docs: int,
) -> KTypeSummary:
    """The offline K-Type: title, top-level headings, key terms, type shares from layout cues."""
    root = next(n for n in nodes if n.node_id == doc.root_id)
    types = type_shares([n for n in nodes if n.is_leaf])
    if doc.language == "zh":
        terms = key_terms_zh(text)
        use = _USE_ZH[types[0][0]] if types else ""
    else:
        terms = key_terms_en(text, doc_freq, n_docs)
        use = _USE_EN[types[0][0]] if types else ""
    return KTypeSummary(
        doc_id=doc.doc_id,
        title=doc.title,
        language=doc.language,
        types=types,
        modules=top_modules(nodes, root),
        use=use,
        key_terms=terms,
        method="extractive",
    )


# ---- LLM (batched, cached by content hash) -----------------------------------------------


def outline(nodes: Sequence[TreeNode], max_chars: int = OUTLINE_CHARS) -> str:
    """Headings (indented by level) with their summaries: what the LLM reads of a document."""
    lines = []
    for node in nodes:
        if node.is_root:
            continue
        line = f"{'  ' * (node.level - 1)}- {node.heading}"
        if node.summary:
            line += f": {node.summary}"
        lines.append(line)
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def build_ktype_prompt(items: Sequence[tuple[str, str, str]], language: Language) -> str:
    """One prompt for several documents, each (key, title, outline); the reply is JSON by key."""
    if not items:
        raise ValueError("build_ktype_prompt needs at least one document")
    types = ", ".join(TYPES)
    example = json.dumps(
        {
            items[0][0]: {
                "types": {"Procedure": 0.75, "Concept": 0.25},
                "modules": ["...", "..."],
                "use": "...",
            }
        },
        ensure_ascii=False,
    )
    docs = "\n\n".join(f"[{key}] {title}\n{body}" for key, title, body in items)
    if language == "zh":
        head = (
            f"为下面每个文档写一份 K-Type 认知摘要：知识类型（从 {types} 中选）及其占比（和为 1），"
            "3-6 个核心知识模块，以及一句话的认知价值（适合谁、做什么用）。"
            "输出严格 JSON，键为文档编号："
        )
        return f"{head}\n{example}\n\n文档:\n{docs}"
    head = (
        "For each document below write a K-Type summary: its knowledge types (from "
        f"{types}) with shares summing to 1, its 3-6 core knowledge modules, and one sentence "
        "on what the document is good for (who would use it, for what). "
        "Output strictly JSON, keyed by document id:"
    )
    return f"{head}\n{example}\n\nDocuments:\n{docs}"


def parse_ktype_response(text: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """{key: {"types": [[type, share]], "modules": [...], "use": str}} (JSON-ready) per entry.

    Raises:
        LLMError: reason "invalid_json" when the reply holds no JSON object.
    """
    obj = first_json_object(text, accept=lambda o: bool(o))
    if obj is None:
        raise LLMError(f"K-Type reply has no JSON object: {text[:120]!r}", reason="invalid_json")
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        entry = obj.get(key)
        if not isinstance(entry, dict):
            continue
        raw = entry.get("types")
        pairs = []
        if isinstance(raw, dict):
            for name, share in raw.items():
                try:
                    pairs.append((str(name).strip(), float(share)))
                except (TypeError, ValueError):
                    continue
        total = sum(s for _, s in pairs if s > 0)
        types = (
            sorted(([t, round(s / total, 2)] for t, s in pairs if s > 0 and t), key=lambda p: -p[1])
            if total > 0
            else []
        )
        modules = [str(m).strip() for m in entry.get("modules", []) if str(m).strip()]
        use = str(entry.get("use", "")).strip()
        if types or modules or use:
            out[key] = {"types": types, "modules": modules[:MAX_MODULES], "use": use}
    return out


KTypeLLM = Callable[[Sequence[tuple[DocumentInfo, Sequence[TreeNode]]]], dict[str, dict[str, Any]]]


def make_ktype_summarizer(
    client: LLMClient, model: str, cache: Mapping[str, dict[str, Any]], batch_size: int = LLM_BATCH
) -> KTypeLLM:
    """{document_key: parsed K-Type} for documents, LLM_BATCH per call; cached ones never resent.

    `client.complete(prefix, rest, model, max_tokens) -> (text, Usage)`. An LLMError
    propagates: the caller keeps the extractive summaries and records why.
    """
    known = dict(cache)

    def summarize(docs: Sequence[tuple[DocumentInfo, Sequence[TreeNode]]]) -> dict[str, dict]:
        todo = [(d, n) for d, n in docs if document_key(d) not in known]
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            zh = sum(d.language == "zh" for d, _ in batch) > len(batch) / 2
            items = [(document_key(d), d.title, outline(n)) for d, n in batch]
            prompt = build_ktype_prompt(items, "zh" if zh else "en")
            text, _usage = client.complete("", prompt, model, 250 * len(batch) + 100)
            known.update(parse_ktype_response(text, [key for key, _, _ in items]))
        return {
            document_key(d): known[document_key(d)] for d, _ in docs if document_key(d) in known
        }

    return summarize


def llm_ktype(base: KTypeSummary, parsed: Mapping[str, Any]) -> KTypeSummary:
    """The extractive summary with the LLM's types, modules and use in place (terms kept)."""
    return KTypeSummary(
        doc_id=base.doc_id,
        title=base.title,
        language=base.language,
        types=tuple((str(t), float(s)) for t, s in parsed.get("types", ())) or base.types,
        modules=tuple(parsed.get("modules", ())) or base.modules,
        use=str(parsed.get("use", "")) or base.use,
        key_terms=base.key_terms,
        method="llm",
    )
