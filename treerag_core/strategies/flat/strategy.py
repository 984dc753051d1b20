"""The flat baselines: hybrid, dense-only and BM25-only search over every chunk in scope."""

from __future__ import annotations

from treerag_core.base.names import StrategyName
from treerag_core.strategies import register
from treerag_core.strategies.common import FlatSearch


@register
class FlatHybrid(FlatSearch):
    name = StrategyName.FLAT_HYBRID.value
    label = "Dense + BM25 over every chunk, fused, then the cross-encoder (no headings)"


@register
class FlatDense(FlatSearch):
    name = StrategyName.FLAT_DENSE.value
    label = "Dense vectors only over every chunk, no rerank"
    single_retriever_weight = 1.0


@register
class FlatBM25(FlatSearch):
    name = StrategyName.FLAT_BM25.value
    label = "BM25 only over every chunk, no rerank"
    single_retriever_weight = 0.0
