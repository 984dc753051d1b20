"""A strategy family: one folder that owns its strategies, its index part, options and view.

Each family folder's `__init__.py` declares `FAMILY = Family(...)`; the registry registers
it when it loads the folder (a plug-in calls `register_family` itself). The index builds,
saves and loads the family's part through index/parts.py; the explorer draws its evidence
view by name (ui/ask/views.py maps view names to renderers: the engine never draws).
"""

from __future__ import annotations

from dataclasses import dataclass

from treerag_core.index.parts import IndexPart, register_part, unregister_part


@dataclass(frozen=True)
class Family:
    """What one family adds to the engine beside its strategies' query-time code."""

    name: str  # the folder's name
    strategies: tuple[str, ...]  # the names of the strategies it registers
    part: IndexPart | None = None  # what it adds to a built index (None: nothing)
    options_type: type | None = None  # its strategies' own settings (QuerySettings.option)
    view: str | None = None  # the evidence view the Ask page draws under its runs

    def __post_init__(self) -> None:
        if not self.name or not self.strategies:
            raise ValueError(f"family {self.name!r} needs a name and at least one strategy")


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Register a family and its index part.

    Raises:
        ValueError: one of its strategies already belongs to another family.
    """
    for other in _FAMILIES.values():
        shared = set(other.strategies) & set(family.strategies)
        if other.name != family.name and shared:
            raise ValueError(
                f"family {family.name!r} claims {sorted(shared)}, which belong to {other.name!r}"
            )
    _FAMILIES[family.name] = family
    if family.part is not None:
        register_part(family.part)
    return family


def unregister_family(name: str) -> None:
    """Remove a family and its part (tests that register a temporary one clean up with this)."""
    family = _FAMILIES.pop(name, None)
    if family is not None and family.part is not None:
        unregister_part(family.part.key)


def registered_families() -> list[Family]:
    """The registered families by name (the registry loads the built-ins first)."""
    return [_FAMILIES[name] for name in sorted(_FAMILIES)]


def family_named(strategy: str) -> Family | None:
    """The family a strategy belongs to, None for a strategy registered without one."""
    for family in _FAMILIES.values():
        if strategy in family.strategies:
            return family
    return None
