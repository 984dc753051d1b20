"""Community reports (title, summary, findings): extractive offline, the LLM with a key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from treerag_core.base.artifacts import typed_row
from treerag_core.base.errors import LLMError
from treerag_core.base.text_rules import detect_language
from treerag_core.base.types import Language, Usage
from treerag_core.llm import LLMClient
from treerag_core.strategies.hirag.communities import Community
from treerag_core.strategies.hirag.corpus_graph import CorpusGraph, Entity, Relation

MAX_FINDINGS = 5
PROMPT_ENTITIES = 30  # per community in the LLM prompt: bounds its size
PROMPT_RELATIONS = 40
BATCH_SIZE = 8


@dataclass(frozen=True)
class CommunityReport:
    """What a community is about. `source` is "extractive" or "llm"; `content_key` is the
    hash of the entities and relations it was written from (its cache key)."""

    community_id: str
    title: str
    summary: str
    findings: tuple[str, ...]
    source: str
    content_key: str

    def text(self) -> str:
        lines = [f"# {self.title}", self.summary, *(f"- {f}" for f in self.findings)]
        return "\n".join(line for line in lines if line)

    def to_dict(self) -> dict[str, Any]:
        return {
            "community_id": self.community_id,
            "title": self.title,
            "summary": self.summary,
            "findings": list(self.findings),
            "source": self.source,
            "content_key": self.content_key,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "report", hint: str = "") -> CommunityReport:
        """Types checked, not coerced (`artifacts.typed_row`): reports.json may come from anyone.

        Raises:
            IndexFormatError: a field of the wrong JSON type (or missing), naming `where`.
        """
        return typed_row(cls, data, where, hint)


@dataclass(frozen=True)
class ReportBuild:
    """The reports of one build, the tokens the LLM spent and why any fell back to extractive."""

    reports: dict[str, CommunityReport]
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cached: int = 0
    notes: tuple[str, ...] = ()


def _members(
    community: Community,
    entities: Mapping[str, Entity],
    touching: Mapping[str, list[Relation]],
) -> tuple[list[Entity], list[Relation]]:
    """The community's entities by degree inside it (then key), its relations by weight."""
    keys = set(community.entity_keys)
    rels = list(
        {
            (r.source, r.target): r
            for k in community.entity_keys
            for r in touching.get(k, ())
            if r.source in keys and r.target in keys
        }.values()
    )
    degree: dict[str, int] = {}
    for r in rels:
        degree[r.source] = degree.get(r.source, 0) + 1
        degree[r.target] = degree.get(r.target, 0) + 1
    ents = sorted((entities[k] for k in keys), key=lambda e: (-degree.get(e.key, 0), e.key))
    rels.sort(key=lambda r: (-r.weight, r.source, r.target))
    return ents, rels


def content_key(community: Community, ents: Sequence[Entity], rels: Sequence[Relation]) -> str:
    """Hash of what a report is written from: unchanged content is never sent again."""
    payload = {
        "entities": [[e.name, e.description] for e in sorted(ents, key=lambda e: e.key)],
        "relations": [[r.source, r.target, r.description] for r in rels],
    }
    raw = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()[:24]


def _first_sentence(text: str, limit: int = 160) -> str:
    first = text.split(" | ")[0]
    for end in (". ", "。", "；", "; "):
        cut = first.find(end)
        if 0 < cut < limit:
            return first[: cut + len(end)].strip()
    return first[:limit].strip()


def extractive_report(
    community: Community, ents: Sequence[Entity], rels: Sequence[Relation], language: Language
) -> CommunityReport:
    """A report made of the community's own words: central entities, strongest relations."""
    names = [e.name for e in ents[:3]]
    joiner = "、" if language == "zh" else ", "
    title = joiner.join(names) or community.community_id
    if language == "zh":
        summary = (
            f"第{community.level}层社区，{len(ents)}个实体、{len(rels)}条关系，"
            f"涉及{len(community.chunk_ids)}个段落。核心实体：{joiner.join(names)}。"
        )
    else:
        summary = (
            f"Level {community.level} community of {len(ents)} entities and {len(rels)} "
            f"relations from {len(community.chunk_ids)} passages; central: {', '.join(names)}."
        )
    findings: list[str] = []
    name = {e.key: e.name for e in ents}
    for r in rels:
        if len(findings) >= MAX_FINDINGS:
            break
        if r.description:
            ends = f"{name.get(r.source, r.source)} — {name.get(r.target, r.target)}"
            findings.append(f"{ends}: {_first_sentence(r.description)}")
    for e in ents:
        if len(findings) >= MAX_FINDINGS:
            break
        if e.description:
            findings.append(f"{e.name}: {_first_sentence(e.description)}")
    key = content_key(community, ents, rels)
    return CommunityReport(
        community.community_id, title, summary, tuple(findings), "extractive", key
    )


# ---- LLM reports (seed 002 §6.2) ------------------------------------------------------


def build_report_prompt(
    items: Sequence[tuple[str, Sequence[Entity], Sequence[Relation]]], language: Language
) -> str:
    """One prompt asking for a report per community, as one JSON object keyed by id."""
    if not items:
        raise ValueError("build_report_prompt needs at least one community")
    head = (
        "基于以下每个社区的信息生成报告。每个报告包含：title（社区标题）、summary（社区摘要）、"
        "findings（关键发现列表，最多5条）。只输出一个JSON对象，键为社区id。"
        if language == "zh"
        else "Write a report for each community below from its entities and relations. "
        "Each report has: title (a short community title), summary (2-3 sentences), "
        "findings (a list of at most 5 key findings). Output only one JSON object keyed by "
        'community id: {"<id>": {"title": "...", "summary": "...", "findings": ["..."]}}'
    )
    blocks = [head]
    for cid, ents, rels in items:
        lines = [f"## {cid}", "Entities:" if language != "zh" else "实体:"]
        lines += [f"- {e.name}: {e.description[:200]}" for e in ents[:PROMPT_ENTITIES]]
        lines.append("Relations:" if language != "zh" else "关系:")
        name = {e.key: e.name for e in ents}
        lines += [
            f"- {name.get(r.source, r.source)} -> {name.get(r.target, r.target)}: "
            f"{r.description[:200]}"
            for r in rels[:PROMPT_RELATIONS]
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def parse_report_response(text: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The reports for the requested ids found in the reply; malformed ones are left out.

    Raises:
        LLMError: reason "invalid_json" when the reply holds no JSON object at all.
    """
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise LLMError("the report reply holds no JSON object", reason="invalid_json")
    out = {}
    for cid in ids:
        item = data.get(cid)
        if isinstance(item, dict) and str(item.get("title", "")).strip():
            findings = item.get("findings") or []
            if not isinstance(findings, list):
                findings = [findings]
            out[cid] = {
                "title": str(item["title"]).strip(),
                "summary": str(item.get("summary", "")).strip(),
                "findings": [str(f).strip() for f in findings if str(f).strip()][:MAX_FINDINGS],
            }
    return out


def build_reports(
    communities: Sequence[Community],
    graph: CorpusGraph,
    language: Language | None = None,
    *,
    client: LLMClient | None = None,
    model: str = "",
    cache: Mapping[str, CommunityReport] | None = None,
    batch_size: int = BATCH_SIZE,
    on_batch: Callable[[dict[str, CommunityReport]], None] | None = None,
) -> ReportBuild:
    """A report per community; with a client, LLM reports in batches, cached by content key.

    `cache` maps content keys to LLM reports of an earlier (possibly interrupted) build;
    `language` None picks each community's language from its entity names.
    `on_batch` receives the reports so far after each LLM batch, so a caller can save them
    and resume. An LLMError keeps the extractive report for the rest and is noted, not raised.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, but got {batch_size}")
    entities = graph.entity_map()
    touching: dict[str, list[Relation]] = {}
    for r in graph.relations:
        touching.setdefault(r.source, []).append(r)
        touching.setdefault(r.target, []).append(r)
    reports: dict[str, CommunityReport] = {}
    todo: list[tuple[Community, list[Entity], list[Relation]]] = []
    cached = 0
    known = {k: v for k, v in (cache or {}).items() if v.source == "llm"}
    # Finest levels first (seed 002 §3.4: reports go from the lowest level up).
    for community in sorted(communities, key=lambda c: (-c.level, c.community_id)):
        ents, rels = _members(community, entities, touching)
        lang = language or detect_language(" ".join(e.name for e in ents[:5]))
        base = extractive_report(community, ents, rels, lang)
        hit = known.get(base.content_key)
        if hit is not None:
            reports[community.community_id] = replace(hit, community_id=community.community_id)
            cached += 1
            continue
        reports[community.community_id] = base
        if client is not None:
            todo.append((community, ents, rels))
    usage, calls, notes = Usage(), 0, []
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        lang = language or detect_language(" ".join(e[0].name for _, e, _ in batch if e))
        prompt = build_report_prompt([(c.community_id, e, r) for c, e, r in batch], lang)
        try:
            text, spent = client.complete("", prompt, model, min(8192, 300 + 400 * len(batch)))
            usage, calls = usage + spent, calls + 1
            got = parse_report_response(text, [c.community_id for c, _, _ in batch])
        except LLMError as exc:
            notes.append(f"LLM reports stopped ({exc.reason}): {exc}; the rest stay extractive")
            break
        for community, _, _ in batch:
            item = got.get(community.community_id)
            base = reports[community.community_id]
            if item is None:
                notes.append(f"{community.community_id}: no report in the reply; extractive kept")
                continue
            reports[community.community_id] = CommunityReport(
                community.community_id,
                item["title"],
                item["summary"],
                tuple(item["findings"]),
                "llm",
                base.content_key,
            )
        if on_batch is not None:
            on_batch(dict(reports))
    return ReportBuild(reports, usage, calls, cached, tuple(notes))
