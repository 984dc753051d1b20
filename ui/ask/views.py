"""The Ask page's evidence views: a family names its view (`Family.view`), this module maps
the name to the renderer drawn under the step panels. The engine never draws; a new family's
view is one entry in VIEWS (or `register_view` from a plug-in)."""

from __future__ import annotations

from collections.abc import Callable

from treerag_core import DRILLDOWN_FAMILY as DRILLDOWN
from treerag_core import GRAPH_FAMILY as GRAPH
from treerag_core import HIRAG_FAMILY as HIRAG
from treerag_core import Engine, family_of
from treerag_core.base.types import Trace

Renderer = Callable[[Trace, Engine], None]


# The renderers import their modules when first drawn: the Ask page loads none it does not use.
def _drilldown_layers(trace: Trace, engine: Engine) -> None:
    from ui.ask.drilldown_view import drilldown_layers

    drilldown_layers(trace, engine)


def _leaf_graphs(trace: Trace, engine: Engine) -> None:
    from ui.ask.leaf_graph_view import leaf_graphs

    leaf_graphs(trace, engine)


def _hirag_neighbourhood(trace: Trace, engine: Engine) -> None:
    from ui.ask.hirag_view import hirag_neighbourhood

    hirag_neighbourhood(trace, engine)


VIEWS: dict[str, Renderer] = {
    str(DRILLDOWN.view): _drilldown_layers,
    str(GRAPH.view): _leaf_graphs,
    str(HIRAG.view): _hirag_neighbourhood,
}


def register_view(name: str, renderer: Renderer) -> None:
    """Draw `renderer` for every family whose view is `name` (a plug-in family's view)."""
    VIEWS[name] = renderer


def unregister_view(name: str) -> None:
    VIEWS.pop(name, None)


def view_for(strategy: str) -> Renderer | None:
    """The renderer of the strategy's family view; None when it has none (or none is known)."""
    family = family_of(strategy)
    if family is None or family.view is None:
        return None
    return VIEWS.get(family.view)


def draw(trace: Trace, engine: Engine) -> bool:
    """Draw the view of the trace's strategy; False when its family has none."""
    renderer = view_for(trace.strategy)
    if renderer is None:
        return False
    renderer(trace, engine)
    return True
