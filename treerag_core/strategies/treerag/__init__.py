"""The TreeRAG family: locate leaves, then retrieve inside them; its flat and oracle kin."""

from treerag_core.strategies.family import Family
from treerag_core.strategies.treerag.oracle import OracleSections
from treerag_core.strategies.treerag.strategy import TreeRAG
from treerag_core.strategies.treerag.structured import FlatStructured

STRATEGY_MODULES = ("strategy", "oracle")  # oracle-sections: the routing ceiling (evaluation)

# No index part (it reads the core index: tree, chunks, vectors, BM25) and no view of its
# own (the step panels show everything it does).
FAMILY = Family(
    name="treerag",
    strategies=(TreeRAG.name, FlatStructured.name, OracleSections.name),
)
