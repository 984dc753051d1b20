"""LLM prompts (tree text, locate, synthesis, summaries) and robust parsing of the replies."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from treerag_core.base.errors import LLMError
from treerag_core.base.text_rules import one_line, preview, token_dense_count
from treerag_core.base.types import Language, TreeNode

# ---------------------------------------------------------------------------------------------
# Tree serialization (seed format)
# ---------------------------------------------------------------------------------------------

_LEAF_MARK = {"zh": "(叶子节点)", "en": "(leaf)"}
_SUMMARY_LABEL = {"zh": "摘要: ", "en": "Summary: "}


def serialize_tree(nodes: Sequence[TreeNode], language: Language) -> str:
    """The seed's compact tree text: ids, headings, leaf marks and summaries, never content.

    Nodes come in document order (one or more documents). Depth is taken from the parent
    chain inside `nodes`, not from `level`, so skipped heading levels never add indentation
    and a node whose parent is absent starts a new top level. Each level indents 2 spaces,
    the summary line 2 more; a blank line separates nodes; an empty summary has no line.
    """
    depth: dict[str, int] = {}
    blocks: list[str] = []
    for node in nodes:
        d = depth[node.parent_id] + 1 if node.parent_id in depth else 0
        depth[node.node_id] = d
        pad = "  " * d
        line = f"{pad}[{node.node_id}] {one_line(node.heading)}"
        if node.is_leaf:
            line += f" {_LEAF_MARK[language]}"
        summary = one_line(node.summary)
        if summary:
            line += f"\n{pad}  {_SUMMARY_LABEL[language]}{summary}"
        blocks.append(line)
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------------------------------
# Step 1: node locating
# ---------------------------------------------------------------------------------------------

# Templates are line lists (joined with "\n") so long prompt lines stay within the line limit.
_LOCATE_HEAD_ZH = "\n".join(
    [
        "你是一个文档检索专家。给定用户问题和文档的树状结构，请找出最可能包含答案的叶子节点。",
        "",
        "规则:",
        '1. 只返回叶子节点（标记为"叶子节点"的节点）',
        "2. {count_rule}，不要过多",
        "3. 为每个节点生成一个精化的 sub_query，描述你期望从该节点中找到什么信息",
        "",
        "文档结构:",
        "{serialized_tree}",
        "",
        "",
    ]
)

_LOCATE_TAIL_ZH = "\n".join(
    [
        "用户问题: {query}",
        "",
        "输出严格 JSON 格式:",
        "{",
        '  "thinking": "简要分析问题需要哪些信息，以及这些信息可能在哪些章节",',
        '  "results": [',
        '    {"node_id": "0007", "sub_query": "contextual bandit路由算法的具体设计"},',
        '    {"node_id": "0009", "sub_query": "EUR/USD上的准确率数据和对比结果"}',
        "  ]",
        "}",
    ]
)

_LOCATE_HEAD_EN = "\n".join(
    [
        "You are a document retrieval expert. Given a user question and the tree structure of "
        "the documents, find the leaf nodes most likely to contain the answer.",
        "",
        "Rules:",
        '1. Return only leaf nodes (nodes marked "leaf")',
        "2. {count_rule}, not too many",
        "3. For each node, write a refined sub_query describing what information you expect "
        "to find in that node",
        "",
        "Document structure:",
        "{serialized_tree}",
        "",
        "",
    ]
)

_LOCATE_TAIL_EN = "\n".join(
    [
        "User question: {query}",
        "",
        "Output strictly in JSON format:",
        "{",
        '  "thinking": "Briefly analyse what information the question needs '
        'and which sections it is likely in",',
        '  "results": [',
        '    {"node_id": "0007", "sub_query": '
        '"the specific design of the contextual bandit routing algorithm"},',
        '    {"node_id": "0009", "sub_query": '
        '"accuracy figures on EUR/USD and comparison results"}',
        "  ]",
        "}",
    ]
)


def _count_rule(language: Language, max_leaves: int) -> str:
    if language == "zh":
        return "返回 1 个最相关的节点" if max_leaves == 1 else f"返回 1-{max_leaves} 个最相关的节点"
    if max_leaves == 1:
        return "Return the 1 most relevant node"
    return f"Return 1-{max_leaves} of the most relevant nodes"


def build_locate_prompt(
    question: str, serialized_tree: str, language: Language, max_leaves: int = 5
) -> tuple[str, str]:
    """The seed's NODE LOCATE prompt split as (cacheable_prefix, question_part).

    The prefix holds the instructions and the tree, identical for every question on the
    same index, so it can be sent as a prompt-cached block; the question and the JSON
    schema follow it. `prefix + question_part` is the whole prompt. Compared with the seed
    only the order changed (the question moved after the tree, for caching).
    """
    if max_leaves < 1:
        raise ValueError(f"max_leaves must be >= 1, but got {max_leaves}")
    if language == "zh":
        head, tail = _LOCATE_HEAD_ZH, _LOCATE_TAIL_ZH
    else:
        head, tail = _LOCATE_HEAD_EN, _LOCATE_TAIL_EN
    # str.replace, not str.format: the tree, the question and the JSON braces stay literal.
    prefix = head.replace("{count_rule}", _count_rule(language, max_leaves)).replace(
        "{serialized_tree}", serialized_tree
    )
    return prefix, tail.replace("{query}", question.strip())


# ---------------------------------------------------------------------------------------------
# Step 3: synthesis
# ---------------------------------------------------------------------------------------------

_SYNTHESIS_ZH = "\n".join(
    [
        "基于以下从文档中检索到的证据，回答用户的问题。",
        "",
        "规则:",
        "1. 只基于提供的证据回答，不要编造信息",
        "2. 回答时在关键信息后标注来源，格式为 [来源: 章节路径]",
        "3. 如果证据不足以完整回答，明确说明",
        "4. 回答要简洁准确",
        "",
        "用户问题: {query}",
        "",
        "检索到的证据:",
        "{context}",
        "",
        "请回答:",
    ]
)

_SYNTHESIS_EN = "\n".join(
    [
        "Answer the user's question based on the following evidence retrieved from the documents.",
        "",
        "Rules:",
        "1. Answer only from the evidence provided; do not make up information",
        "2. After key information, cite its source in the format [Source: section path]",
        "3. If the evidence is not enough for a complete answer, say so clearly",
        "4. Keep the answer concise and accurate",
        "",
        "User question: {query}",
        "",
        "Retrieved evidence:",
        "{context}",
        "",
        "Answer:",
    ]
)

_NO_EVIDENCE = {"zh": "（无）", "en": "(none)"}


def build_context(evidence: Sequence[tuple[str, str]], language: Language) -> str:
    """The seed's context: `[证据1] 来源: path` / `[Evidence 1] Source: path`, then the text."""
    if language == "zh":
        parts = [f"[证据{i}] 来源: {path}\n{text}" for i, (path, text) in enumerate(evidence, 1)]
    else:
        parts = [
            f"[Evidence {i}] Source: {path}\n{text}" for i, (path, text) in enumerate(evidence, 1)
        ]
    return "\n\n".join(parts) if parts else _NO_EVIDENCE[language]


def build_synthesis_prompt(
    question: str, evidence: Sequence[tuple[str, str]], language: Language
) -> str:
    """The seed's SYNTHESIS prompt; `evidence` is (heading_path, text) in rank order."""
    template = _SYNTHESIS_ZH if language == "zh" else _SYNTHESIS_EN
    return template.replace("{query}", question.strip()).replace(
        "{context}", build_context(evidence, language)
    )


# ---------------------------------------------------------------------------------------------
# Optional LLM summaries at index time
# ---------------------------------------------------------------------------------------------

_SUMMARY_ZH = "\n".join(
    [
        "请为下面每个文档章节写一句话摘要（不超过 60 个字），概括该章节的主要内容。",
        "",
        "输出严格 JSON 格式，键为章节编号，值为摘要:",
        "{example}",
        "",
        "章节:",
        "{sections}",
    ]
)

_SUMMARY_EN = "\n".join(
    [
        "Write a one-sentence summary (at most 30 words) of each document section below, "
        "stating what the section is about.",
        "",
        "Output strictly in JSON format, with the section id as key and the summary as value:",
        "{example}",
        "",
        "Sections:",
        "{sections}",
    ]
)


def build_summary_prompt(items: Sequence[tuple[str, str]], language: Language) -> str:
    """One prompt asking for a one-sentence summary of each (key, text) section, as JSON."""
    if not items:
        raise ValueError("build_summary_prompt needs at least one (key, text) item")
    filler = "一句话摘要" if language == "zh" else "one-sentence summary"
    example = json.dumps({key: filler for key, _ in items[:2]}, ensure_ascii=False)
    sections = "\n\n".join(f"[{key}]\n{text.strip()}" for key, text in items)
    template = _SUMMARY_ZH if language == "zh" else _SUMMARY_EN
    return template.replace("{example}", example).replace("{sections}", sections)


def parse_summary_response(text: str, keys: Sequence[str]) -> dict[str, str]:
    """The summaries for the requested keys found in the reply; missing or empty ones omitted.

    Raises:
        LLMError: reason "invalid_json" when the reply holds no JSON object.
    """
    obj = first_json_object(text, accept=lambda o: bool(o))
    if obj is None:
        raise LLMError(f"Summary reply has no JSON object: {_preview(text)}", reason="invalid_json")
    wanted = {_normalize_id(k) or k: k for k in keys}
    out: dict[str, str] = {}
    for raw_key, value in obj.items():
        key = wanted.get(_normalize_id(raw_key) or str(raw_key))
        if key is not None and isinstance(value, str) and one_line(value):
            out[key] = one_line(value)
    return out


# ---------------------------------------------------------------------------------------------
# Robust JSON extraction from an LLM reply
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _balanced_objects(text: str) -> Iterator[str]:
    """Each balanced `{...}` span, one per opening `{`, in order, string-literal aware."""
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        level = 0
        in_string = False
        escaped = False
        for j in range(start, len(text)):
            ch = text[j]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                level += 1
            elif ch == "}":
                level -= 1
                if level == 0:
                    yield text[start : j + 1]
                    break


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except json.JSONDecodeError:
        pass
    try:  # models sometimes leave a trailing comma before } or ]
        return json.loads(_TRAILING_COMMA.sub(r"\1", candidate))
    except json.JSONDecodeError:
        return None


def first_json_object(text: str, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The first JSON object (fenced blocks first, then the whole text) that `accept` likes."""
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        for candidate in _balanced_objects(source):
            obj = _loads(candidate)
            if isinstance(obj, dict) and accept(obj):
                return obj
    return None


def _preview(text: str, limit: int = 200) -> str:
    flat = preview(text, limit)
    return repr(flat) if flat else "(empty reply)"


def _normalize_id(value: Any) -> str | None:
    """7, "7", "[0007]", " 0007 " -> "0007"; other strings kept as written; junk -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"{value:04d}" if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return f"{int(value):04d}"
    if not isinstance(value, str):
        return None
    cleaned = value.strip().strip("[]【】()").strip()
    if not cleaned:
        return None
    return cleaned.zfill(4) if cleaned.isdigit() else cleaned


_RESULT_KEYS = ("results", "node_list", "nodes")


def parse_locate_response(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(thinking, [(node_id, sub_query)]) from the locator's reply, however it was wrapped.

    Accepts ```json fences, prose around the object, trailing commas, ids as ints, "7" or
    "[0007]" (normalised to 4 digits), and PageIndex-style `node_list` of bare ids. Duplicate
    ids keep their first sub-query; a missing sub_query is "" (the caller substitutes the
    question). Ids are not checked against the tree here: the locator does that.

    Raises:
        LLMError: reason "invalid_json" when no JSON object with a results list is found,
            reason "empty_results" when the list names no node.
    """
    obj = first_json_object(
        text, accept=lambda o: any(isinstance(o.get(k), list) for k in _RESULT_KEYS)
    )
    if obj is None:
        raise LLMError(
            f"Locator reply has no JSON object with a 'results' list: {_preview(text)}",
            reason="invalid_json",
        )
    items = next(obj[k] for k in _RESULT_KEYS if isinstance(obj.get(k), list))
    results: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, dict):
            node_id = _normalize_id(item.get("node_id", item.get("id")))
            sub_query = item.get("sub_query", "")
            sub_query = one_line(sub_query) if isinstance(sub_query, str) else ""
        else:
            node_id, sub_query = _normalize_id(item), ""
        if node_id is not None and node_id not in seen:
            seen.add(node_id)
            results.append((node_id, sub_query))
    if not results:
        raise LLMError(
            f"Locator reply picked no node: {_preview(text)}",
            reason="empty_results",
        )
    thinking = obj.get("thinking", "")
    return (thinking.strip() if isinstance(thinking, str) else ""), results


# ---------------------------------------------------------------------------------------------
# Token estimate for the prompt budget
# ---------------------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """Cheap token estimate: each CJK character ~1 token, other text ~4 characters per token."""
    cjk = token_dense_count(text)
    return cjk + math.ceil((len(text) - cjk) / 4)
