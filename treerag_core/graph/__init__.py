"""Leaf-local knowledge graphs: types, extractors, JSON storage and graph search."""

from treerag_core.graph.types import Concept, LeafGraph, Relation, Span

__all__ = ["Concept", "LeafGraph", "Relation", "Span"]
