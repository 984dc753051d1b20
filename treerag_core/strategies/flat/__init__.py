"""The flat family: structure-blind baselines (hybrid, dense, BM25) over the whole scope."""

from treerag_core.strategies.family import Family
from treerag_core.strategies.flat.strategy import FlatBM25, FlatDense, FlatHybrid

# No index part and no view: the yardstick reads only the core index.
FAMILY = Family(name="flat", strategies=(FlatHybrid.name, FlatDense.name, FlatBM25.name))
