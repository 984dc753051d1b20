"""Step 1 with the user's leaf set: a manual override that keeps what still holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from treerag_core.base.types import LocateResult
from treerag_core.index.corpus import CorpusIndex
from treerag_core.search.locators import manual_locate

MANUAL = "manual"


def override_locate(
    index: CorpusIndex, previous: LocateResult, question: str, leaf_ids: Sequence[str]
) -> LocateResult:
    """`manual_locate` on `leaf_ids`, keeping the sub-queries and scores of leaves that stay.

    The usage stays zero: the step-1 call (if any) was paid and logged by the earlier run.

    Raises:
        QueryError: an unknown or non-leaf id, or an empty set.
    """
    manual = manual_locate(index, question, leaf_ids, MANUAL)
    old = {leaf.node_id: leaf for leaf in previous.leaves}
    leaves = tuple(old.get(leaf.node_id, leaf) for leaf in manual.leaves)
    picked = [leaf.node_id for leaf in leaves]
    added = [i for i in picked if i not in old]
    removed = [i for i in old if i not in picked]
    change = "; ".join(
        part
        for part in (
            f"added {', '.join(added)}" if added else "",
            f"removed {', '.join(removed)}" if removed else "",
        )
        if part
    )
    thinking = (previous.thinking + "\n\n" if previous.thinking else "") + (
        f"Manual override ({change or 'no change'}): steps 2-3 rerun on these leaves; "
        "no new step-1 call."
    )
    suffix = f"+{MANUAL}"
    locator = previous.locator if previous.locator.endswith(suffix) else previous.locator + suffix
    return replace(manual, leaves=leaves, thinking=thinking, locator=locator, notes=previous.notes)
