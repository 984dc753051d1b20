"""HiRAG: a corpus entity graph, hierarchical communities, reports and five retrieval modes."""

from treerag_core.strategies.family import Family
from treerag_core.strategies.hirag.part import HiragPart
from treerag_core.strategies.hirag.retriever import HiragOptions
from treerag_core.strategies.hirag.strategy import MODES

FAMILY = Family(
    name="hirag",
    strategies=tuple(mode.name for mode in MODES),
    part=HiragPart(),
    options_type=HiragOptions,
    view="hirag-neighbourhood",  # the traced entities' neighbourhood in the corpus graph
)
