"""A manual override of step 1: kept sub-queries, added leaves, named errors."""

from __future__ import annotations

import pytest

from treerag_core.base.config import IndexSettings
from treerag_core.base.errors import QueryError
from treerag_core.base.types import LocatedLeaf, LocateResult
from treerag_core.index.corpus import SourceDocument, build_index
from treerag_core.index.embedders import get_embedder
from treerag_core.search.override import override_locate


@pytest.fixture(scope="module")
def big_index():
    text = "# Doc\n\n" + "\n".join(f"## S{i}\n\nSection {i} text here.\n" for i in range(6))
    return build_index(
        [SourceDocument("doc.md", text)], IndexSettings(embedder="hashing"), get_embedder("hashing")
    )


def test_override_keeps_sub_queries_and_rejects_non_leaves(big_index):
    leaves = [n for n in big_index.leaves()][:3]
    previous = LocateResult(
        (LocatedLeaf(leaves[0].node_id, leaves[0].heading_path, "refined", 0.9, "llm"),),
        "because",
        "llm",
    )
    new = override_locate(big_index, previous, "question", [leaves[0].node_id, leaves[1].node_id])
    assert [leaf.sub_query for leaf in new.leaves] == ["refined", "question"]
    assert [leaf.source for leaf in new.leaves] == ["llm", "manual"]
    assert new.locator == "llm+manual" and new.usage.input_tokens == 0
    assert f"added {leaves[1].node_id}" in new.thinking
    root = next(n for n in big_index.nodes.values() if n.is_root)
    with pytest.raises(QueryError, match="not a leaf"):
        override_locate(big_index, previous, "q", [root.node_id])
    with pytest.raises(QueryError, match="at least one"):
        override_locate(big_index, previous, "q", [])
