"""The LLM graph-extraction prompt (seed 002, section 6.1) and a tolerant parser of its reply."""

from __future__ import annotations

import re
from dataclasses import dataclass

from treerag_core.base.types import Language

PROMPT_VERSION = "graph-1"  # part of the LLM graph cache key: a new prompt re-extracts

ENTITY_TYPES = {
    "en": "person, organization, location, event, concept, method, dataset, metric, artifact",
    "zh": "人物, 组织, 地点, 事件, 概念, 方法, 法律术语, 权利义务, 条件, 期限, 金额",
}

_EN = """Extract entities and relationships from the text.

Entity types: {entity_types}

Output one tuple per line and nothing else:
("entity", "entity name", "entity type", "one-sentence description")
("relationship", "source entity", "target entity", "relation in 1-4 words",
 "one-sentence description", strength 1-10)

Rules: copy entity names exactly as they are written in the text; relationships only between
entities you listed; at most {max_entities} entities.

Text:
{input_text}
"""

_ZH = """从文本中提取实体和关系。

实体类型: {entity_types}

每行输出一个元组，不要输出其他内容:
("entity", "实体名称", "实体类型", "一句话实体描述")
("relationship", "源实体", "目标实体", "关系(1-6个字)", "一句话关系描述", 强度1-10)

规则：实体名称必须与原文写法完全一致；关系只能连接已列出的实体；最多 {max_entities} 个实体。

输入文本:
{input_text}
"""


def build_graph_prompt(text: str, language: Language, max_entities: int = 30) -> str:
    """The extraction prompt for one block of a leaf, in the text's language."""
    if not text.strip():
        raise ValueError("build_graph_prompt needs non-empty text")
    template = _ZH if language == "zh" else _EN
    return (
        template.replace("{entity_types}", ENTITY_TYPES["zh" if language == "zh" else "en"])
        .replace("{max_entities}", str(max_entities))
        .replace("{input_text}", text.strip())
    )


@dataclass(frozen=True)
class RawEntity:
    name: str
    kind: str
    description: str


@dataclass(frozen=True)
class RawRelation:
    source: str
    target: str
    label: str
    description: str
    strength: float


_QUOTED = r"[\"“”'‘’]([^\"“”]*?)[\"“”'‘’]"
_ENTITY = re.compile(
    rf"\(\s*[\"“]entity[\"”]\s*[,，]\s*{_QUOTED}\s*[,，]\s*{_QUOTED}\s*[,，]\s*{_QUOTED}\s*\)"
)
_RELATION = re.compile(
    rf"\(\s*[\"“]relationship[\"”]\s*[,，]\s*{_QUOTED}\s*[,，]\s*{_QUOTED}\s*[,，]\s*{_QUOTED}"
    rf"\s*[,，]\s*{_QUOTED}\s*(?:[,，]\s*([0-9]+(?:\.[0-9]+)?)\s*)?\)"
)


def parse_graph_response(text: str) -> tuple[list[RawEntity], list[RawRelation]]:
    """Entity and relationship tuples found in a reply; malformed lines are skipped."""
    entities = [
        RawEntity(n.strip(), k.strip(), d.strip()) for n, k, d in _ENTITY.findall(text) if n.strip()
    ]
    relations = [
        RawRelation(s.strip(), t.strip(), lab.strip(), d.strip(), float(w) if w else 1.0)
        for s, t, lab, d, w in _RELATION.findall(text)
        if s.strip() and t.strip()
    ]
    return entities, relations
