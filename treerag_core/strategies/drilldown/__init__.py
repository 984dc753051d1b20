"""The drill-down family (seed 001): document by K-Type summary, parent section, passages."""

from treerag_core.strategies.drilldown.part import LayersPart
from treerag_core.strategies.drilldown.search import DrilldownOptions
from treerag_core.strategies.drilldown.strategy import Drilldown
from treerag_core.strategies.family import Family

FAMILY = Family(
    name="drilldown",
    strategies=(Drilldown.name,),
    part=LayersPart(),
    options_type=DrilldownOptions,
    view="drilldown-layers",  # the K-Type cards and the three layers' tables
)
