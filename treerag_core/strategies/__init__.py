"""The strategy registry: the one list the CLI, the explorer, the harness and benchmarks read.

Every family folder in this package is imported on first use: its `FAMILY` declaration
(family.py: its index part, options and view) is registered, and its strategy modules
register their strategies with `@register`. A plug-in outside the package calls
`register_family` and `register` itself.
"""

from __future__ import annotations

import importlib
import pkgutil

from treerag_core.base.lazy import run_once
from treerag_core.strategies.base import QueryContext, Retrieval, Strategy
from treerag_core.strategies.family import (
    Family,
    family_named,
    register_family,
    registered_families,
    unregister_family,
)

__all__ = [
    "Family",
    "QueryContext",
    "Retrieval",
    "Strategy",
    "all_strategies",
    "families",
    "family_of",
    "get_strategy",
    "load_families",
    "option_types",
    "register",
    "register_family",
    "strategy_names",
    "unregister",
    "unregister_family",
]

_REGISTRY: dict[str, Strategy] = {}
_NOT_STRATEGIES = {"base", "common", "family"}  # helper modules of this package
# A family folder registers its strategies in these modules (a family may list more in its
# own STRATEGY_MODULES).
STRATEGY_MODULES = ("strategy",)


# What a strategy class must define (strategies/base.py), checked when it registers: a
# plug-in missing one fails here with its name, not later deep in a front end.
_FLAGS = (
    "reads_structure",
    "locates",
    "needs_gold_leaves",
    "searches_each_leaf",
    "uses_locator",
)
_METHODS = ("effective_settings", "locate_inputs", "locate", "retrieve")


def register(cls: type) -> type:
    """Class decorator: register one instance of a strategy class under its `name`.

    Raises:
        ValueError: a member of the `Strategy` protocol is missing or of the wrong kind.
    """
    name = getattr(cls, "name", "")
    if not name or not isinstance(name, str):
        raise ValueError(f"{cls.__name__} has no strategy name")
    missing = [f for f in _FLAGS if not isinstance(getattr(cls, f, None), bool)]
    missing += [m for m in _METHODS if not callable(getattr(cls, m, None))]
    if not isinstance(getattr(cls, "label", None), str):
        missing.append("label")
    if not hasattr(cls, "options_type"):
        missing.append("options_type")
    if missing:
        raise ValueError(f"strategy {name!r} ({cls.__name__}) lacks {', '.join(missing)}")
    _REGISTRY[name] = cls()
    return cls


def unregister(name: str) -> None:
    """Remove a strategy (tests that register a temporary one clean up with this)."""
    _REGISTRY.pop(name, None)


@run_once
def _load_builtins() -> None:
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name in _NOT_STRATEGIES:
            continue
        if module.ispkg:  # a family folder
            family = importlib.import_module(f"{__name__}.{module.name}")
            for name in getattr(family, "STRATEGY_MODULES", STRATEGY_MODULES):
                importlib.import_module(f"{family.__name__}.{name}")
            if isinstance(getattr(family, "FAMILY", None), Family):
                register_family(family.FAMILY)
        else:
            importlib.import_module(f"{__name__}.{module.name}")


def all_strategies() -> list[Strategy]:
    """Every registered strategy, built-ins first in a fixed order, then plug-ins by name."""
    _load_builtins()
    from treerag_core.strategies.common import BUILTIN_ORDER

    def key(s: Strategy) -> tuple[int, str]:
        rank = BUILTIN_ORDER.index(s.name) if s.name in BUILTIN_ORDER else len(BUILTIN_ORDER)
        return rank, s.name

    return sorted(_REGISTRY.values(), key=key)


def strategy_names(*, runnable: bool = False) -> list[str]:
    """Registered names; `runnable=True` leaves out those that need gold leaves (oracle)."""
    return [s.name for s in all_strategies() if not (runnable and s.needs_gold_leaves)]


def get_strategy(name: str) -> Strategy:
    """The strategy registered as `name`, or ValueError listing the valid names."""
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; choose one of {', '.join(strategy_names())}"
        ) from None


def option_types() -> dict[str, type]:
    """Each strategy's own settings class, for QuerySettings.from_dict."""
    return {s.name: s.options_type for s in all_strategies() if s.options_type is not None}


def load_families() -> list[Family]:
    """Load the built-in families (their parts, options and views) and list every family."""
    _load_builtins()
    return registered_families()


def families() -> list[Family]:
    """Every registered family, by name."""
    return load_families()


def family_of(strategy: str) -> Family | None:
    """The family of a registered strategy (None: a plug-in registered without a family)."""
    _load_builtins()
    return family_named(strategy)
