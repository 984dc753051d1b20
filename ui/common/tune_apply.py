"""Apply a tune's settings to the sidebar, including those the sidebar has no widget for."""

from __future__ import annotations

from typing import Any

import streamlit as st

from treerag_core import option_types
from treerag_core.base.settings import QuerySettings
from ui.common import query_controls as qc

TUNED = "qs_tuned"  # the applied tune's settings the sidebar has no widget for
EXTRA_PATHS = ("retrieve.candidate_window", "rerank.read_path")


def apply(settings: QuerySettings, label: str) -> None:
    """The sidebar's widgets take `settings`; the rest (window, rerank reading, routing) is
    kept in the session and applied by `with_tuned` until cleared."""
    qc.apply_settings(settings.to_dict())
    st.session_state[TUNED] = {
        "label": label,
        "values": {p: qc.setting(settings, p) for p in EXTRA_PATHS},
        "options": settings.to_dict().get("options", {}),
    }


def with_tuned(settings: QuerySettings) -> QuerySettings:
    """`settings` with the applied tune's extra settings (none: unchanged)."""
    tuned: dict[str, Any] | None = st.session_state.get(TUNED)
    if not tuned:
        return settings
    for path, value in tuned["values"].items():
        settings = settings.set(path, value)
    kinds = option_types()
    for name, values in tuned.get("options", {}).items():
        if name in kinds and name == settings.strategy:
            settings = settings.with_option(name, kinds[name](**values))
    return settings


def sidebar_note(sb: Any) -> None:
    """Under the sidebar's settings: what a tune applied beyond the widgets, and a way back."""
    tuned = st.session_state.get(TUNED)
    if not tuned:
        return
    extras = ", ".join(f"{qc.label_of(p) if p in qc.SETTING_LABELS else p} = {v}"
                       for p, v in tuned["values"].items())  # fmt: skip
    sb.caption(f"Tuned settings applied ({tuned['label']}); beyond the sliders: {extras}.")
    sb.button("Forget the tuned extras", key="qs_tuned_clear",
              on_click=lambda: st.session_state.pop(TUNED, None))  # fmt: skip
