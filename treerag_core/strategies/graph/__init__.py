"""Leaf-local knowledge graphs: types, extractors, JSON storage, graph search and treerag-kg."""

from treerag_core.strategies.family import Family
from treerag_core.strategies.graph.part import GraphPart
from treerag_core.strategies.graph.search import GraphSearchOptions
from treerag_core.strategies.graph.strategy import TreeRAGKG
from treerag_core.strategies.graph.types import Concept, ConceptRelation, LeafGraph, Span

__all__ = ["FAMILY", "Concept", "ConceptRelation", "LeafGraph", "Span"]

FAMILY = Family(
    name="graph",
    strategies=(TreeRAGKG.name,),
    part=GraphPart(),
    options_type=GraphSearchOptions,
    view="leaf-graphs",  # each searched leaf graph, lit for the question
)
