"""Leaf-local knowledge graphs: types, extractors, JSON storage and graph search."""

from treerag_core.strategies.graph.types import Concept, ConceptRelation, LeafGraph, Span

__all__ = ["Concept", "ConceptRelation", "LeafGraph", "Span"]
