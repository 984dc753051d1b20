"""Query settings: saved settings of older versions still load."""

from __future__ import annotations

from treerag_core.base.settings import QuerySettings


def test_removed_locate_settings_in_old_saved_settings_are_ignored():
    """`locate.cutoff` and `locate.heading_weight` were removed (the local step 1 never read
    them); reports, traces and workspaces that saved them still load."""
    nested = QuerySettings().to_dict()
    nested["locate"] = {**nested["locate"], "cutoff": 0.9, "heading_weight": 0.7}
    assert QuerySettings.from_dict(nested) == QuerySettings()
    flat = {"locate_cutoff": 0.9, "heading_weight": 0.7, "max_leaves": 3}
    assert QuerySettings.from_dict(flat) == QuerySettings().set("locate.max_leaves", 3)
    assert "cutoff" not in QuerySettings().to_dict()["locate"]
