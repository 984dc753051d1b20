"""Step 1 helpers: leaf scores for the LLM locator, the LLM, keyword and manual picks."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from treerag_core.base.errors import LLMError, QueryError
from treerag_core.base.settings import LocateSettings, QuerySettings, RetrieveSettings
from treerag_core.base.types import Fallback, Language, LocatedLeaf, LocateResult, TreeNode
from treerag_core.index.corpus import CorpusIndex
from treerag_core.llm import LLMClient, structured_output_note
from treerag_core.llm.prompt_budget import LOCATE_REPLY_TOKENS, fit_blocks, locate_tree_budget
from treerag_core.llm.prompts import (
    build_locate_prompt,
    estimate_tokens,
    parse_locate_response,
    serialize_tree,
)
from treerag_core.search.fusion import fuse, minmax

Tokenize = Callable[[str], list[str]]

# Weight of a leaf's heading/summary match against its best chunk in `score_leaves` (the LLM
# locator's ordering of documents for the prompt budget and of a picked parent's leaves).
HEADING_WEIGHT = 0.2


@dataclass(frozen=True)
class LeafScores:
    """The local locator's view of every leaf in scope, best first."""

    leaf_ids: list[str]
    scores: np.ndarray  # combined score per leaf
    chunk_part: np.ndarray  # best fused chunk score in the leaf (min-max over the scope)
    heading_part: np.ndarray  # IDF-weighted share of question terms in heading path + summary


def score_leaves(
    index: CorpusIndex,
    question: str,
    query_vector: np.ndarray,
    tokenize: Tokenize,
    retrieve: RetrieveSettings,
    scope: Sequence[str] | None = None,
) -> LeafScores:
    """Score each non-empty leaf: its best chunk's hybrid score plus its heading/summary match.

    Chunk scores come from one flat hybrid pass over the scope (the same fusion settings as
    step 2), so a leaf is strong when it holds a passage that matches, by meaning or words.
    """
    rows, dense, bm25 = index.score_scope(scope, query_vector, tokenize(question))
    fused = fuse(dense, bm25, *retrieve.fusion_args).fused
    best: dict[str, float] = {}
    for row, value in zip(rows.tolist(), fused.tolist(), strict=True):
        leaf = index.chunks[row].source_node_id
        if value > best.get(leaf, -math.inf):
            best[leaf] = value
    leaf_ids = list(best)
    if not leaf_ids:
        empty = np.zeros(0)
        return LeafScores([], empty, empty, empty)
    chunk_part = minmax(np.asarray([best[i] for i in leaf_ids], dtype=np.float64))
    heading_part = _heading_match(index, leaf_ids, tokenize(question))
    w = HEADING_WEIGHT
    scores = (1.0 - w) * chunk_part + w * heading_part
    order = np.argsort(-scores, kind="stable")
    return LeafScores(
        [leaf_ids[i] for i in order], scores[order], chunk_part[order], heading_part[order]
    )


def _heading_match(index: CorpusIndex, leaf_ids: list[str], q_tokens: list[str]) -> np.ndarray:
    """Share of the question's terms (IDF-weighted over leaves) found in path + summary."""
    terms = set(q_tokens)
    if not terms:
        return np.zeros(len(leaf_ids))
    leaf_terms = [index.heading_terms(leaf_id) for leaf_id in leaf_ids]
    n = len(leaf_ids)
    idf = {t: math.log(1 + n / (1 + sum(t in lt for lt in leaf_terms))) for t in terms}
    total = sum(idf.values()) or 1.0
    return np.asarray([sum(idf[t] for t in terms & lt) / total for lt in leaf_terms])


def keyword_locate(
    index: CorpusIndex,
    question: str,
    tokenize: Tokenize,
    locate: LocateSettings,
    scope: Sequence[str] | None = None,
) -> LocateResult:
    """The seed's mock: question terms matched against each leaf's heading and summary, top 3."""
    started = time.perf_counter()
    terms = set(tokenize(question))
    candidates = [n for n in index.leaves() if scope is None or n.doc_id in scope]
    scored = []
    for order, node in enumerate(candidates):
        overlap = len(terms & set(tokenize(f"{node.heading} {node.summary}")))
        scored.append((-overlap, order, node))
    scored.sort(key=lambda item: (item[0], item[1]))
    keep = min(3, locate.max_leaves)
    picked = tuple(
        LocatedLeaf(node.node_id, node.heading_path, question, float(-neg), "keyword")
        for neg, _, node in scored[:keep]
    )
    thinking = "Keyword locator: question terms matched against leaf headings and summaries."
    return LocateResult(picked, thinking, "keyword", seconds=time.perf_counter() - started)


def manual_locate(
    index: CorpusIndex, question: str, leaf_ids: Sequence[str], source: str = "manual"
) -> LocateResult:
    """Use the caller's leaves (UI override, oracle sections); a non-leaf id is an error."""
    leaves = []
    for leaf_id in dict.fromkeys(leaf_ids):
        node = index.nodes.get(leaf_id)
        if node is None or not node.is_leaf:
            raise QueryError(f"{leaf_id!r} is not a leaf of this index")
        leaves.append(LocatedLeaf(leaf_id, node.heading_path, question, None, source))
    if not leaves:
        raise QueryError("pick at least one leaf")
    return LocateResult(tuple(leaves), f"Leaves chosen by the {source} override.", source)


def tree_for_prompt(
    index: CorpusIndex,
    scope: Sequence[str] | None,
    budget_tokens: int,
    ranked_docs: Sequence[str],
    language: Language,
) -> tuple[str, list[str]]:
    """Serialize the scope's forest; past the token budget keep the most relevant documents.

    Returns the text and the names of documents cut. At least one document is always sent
    (`cut_to_budget` then trims its tree).
    """
    docs = [d.doc_id for d in index.documents if scope is None or d.doc_id in scope]
    order = [d for d in ranked_docs if d in docs] + [d for d in docs if d not in ranked_docs]
    kept: list[str] = []
    text = ""
    for doc_id in order:
        trial = [*kept, doc_id]
        candidate = serialize_tree(_nodes_of(index, trial), language)
        if kept and estimate_tokens(candidate) > budget_tokens:
            continue
        kept, text = trial, candidate
    cut = [d for d in docs if d not in kept]
    return text, cut


def cut_to_budget(text: str, budget_tokens: int) -> tuple[str, str]:
    """A tree text still over budget (one big document) cut after its last whole node block.

    Returns the text and a note for the trace ("" when nothing was cut).
    """
    if estimate_tokens(text) <= budget_tokens:
        return text, ""
    kept_text, kept, total = fit_blocks(text, budget_tokens)
    return kept_text, f"prompt budget: the tree was cut after {kept} of {total} nodes"


def _nodes_of(index: CorpusIndex, doc_ids: Sequence[str]) -> list[TreeNode]:
    wanted = set(doc_ids)
    return [n for n in index.nodes.values() if n.doc_id in wanted]


def llm_locate(
    index: CorpusIndex,
    question: str,
    client: LLMClient,
    settings: QuerySettings,
    language: Language,
    local: LeafScores,
    scope: Sequence[str] | None = None,
) -> LocateResult:
    """Ask the LLM to pick leaves on the serialized tree; raises LLMError on any failure.

    A picked parent is expanded to its best-scoring leaves (by the local scores) rather than
    dropped, since the model clearly meant that part of the document; unknown ids are dropped
    and noted. No valid id at all raises LLMError(reason="no_valid_ids").
    """
    started = time.perf_counter()
    ranked_docs = list(dict.fromkeys(index.nodes[i].doc_id for i in local.leaf_ids))
    frame = estimate_tokens(
        "".join(build_locate_prompt(question, "", language, settings.locate.max_leaves))
    )
    budget = locate_tree_budget(settings.locate.budget_tokens, settings.llm.context_tokens, frame)
    tree_text, cut = tree_for_prompt(index, scope, budget.tokens, ranked_docs, language)
    tree_text, trimmed = cut_to_budget(tree_text, budget.tokens)
    prefix, rest = build_locate_prompt(question, tree_text, language, settings.locate.max_leaves)
    notes = [budget.why]
    if cut:
        notes.append(f"prompt budget: left out {len(cut)} document(s): {', '.join(cut)}")
    if trimmed:
        notes.append(trimmed)
    text, usage = client.complete(
        prefix, rest, settings.llm.locate_model, max_tokens=LOCATE_REPLY_TOKENS, json_mode=True
    )
    structured = structured_output_note(client, settings.llm.locate_model)
    if structured:
        notes.append(f"structured output: {structured}")
    thinking, picks = parse_locate_response(text)
    allowed = {d.doc_id for d in index.documents if scope is None or d.doc_id in scope}
    local_rank = {leaf: i for i, leaf in enumerate(local.leaf_ids)}
    leaves: dict[str, LocatedLeaf] = {}
    for node_id, sub_query in picks:
        node = index.nodes.get(node_id)
        if node is None or node.doc_id not in allowed:
            notes.append(f"dropped unknown id {node_id}")
            continue
        targets = [node_id]
        if not node.is_leaf:
            below = [leaf_id for leaf_id in local.leaf_ids if node_id in index.ancestors(leaf_id)]
            targets = sorted(below, key=lambda i: local_rank[i])[:2]
            notes.append(f"expanded parent {node_id} to leaves {', '.join(targets) or 'none'}")
        for leaf_id in targets:
            if leaf_id not in leaves and len(leaves) < settings.locate.max_leaves:
                path = index.nodes[leaf_id].heading_path
                leaves[leaf_id] = LocatedLeaf(leaf_id, path, sub_query or question, None, "llm")
    if not leaves:
        raise LLMError("the LLM picked no valid leaf id", reason="no_valid_ids")
    return LocateResult(
        tuple(leaves.values()),
        thinking,
        "llm",
        usage=usage,
        seconds=time.perf_counter() - started,
        notes=tuple(notes),
    )


def fallback_reason(exc: LLMError) -> Fallback:
    return Fallback("locate", exc.reason, f"{str(exc).rstrip('.')}; used the local locator")
