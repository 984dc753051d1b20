"""The drill-down components in a small Streamlit script, run with AppTest."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from treerag_core.base.types import ContextSection
from ui.ask.drilldown_view import LitIds, is_drilldown, lit_ids

SCRIPT = """
import streamlit as st
from treerag_core.strategies.drilldown.ktype import KTypeSummary
from treerag_core.base.types import ContextSection
from ui.ask.drilldown_view import layer_view
from ui.common.ktype_card import ktype_card

summary = KTypeSummary(
    "api.md", "API 集成指南", "zh", (("Procedure", 0.75), ("Concept", 0.25)),
    ("安装配置", "故障排查"), "高实操性", ("密钥",), "llm",
)
ktype_card(summary)
sections = (
    ContextSection("document", "文档摘要", summary.text, (
        {"id": "api.md", "label": "API 集成指南", "score": 0.9, "chosen": True},
        {"id": "faq.md", "label": "FAQ", "score": 0.2, "chosen": False},
    )),
    ContextSection("parent", "父块上下文", "配置 API 密钥是第一步", (
        {"id": "0007", "label": "API > 配置密钥", "score": 0.8, "chosen": True},
    )),
    ContextSection("passages", "相关段落", "步骤1：登录控制台", (
        {"id": "0007_chunk_00", "parent": "0007", "label": "API > 配置密钥", "score": 1.0,
         "chosen": True},
    ), ("0007_chunk_00",)),
)
st.session_state["lit"] = layer_view(sections)
"""


def test_components_render_each_layer_and_the_ktype_card():
    app = AppTest.from_string(SCRIPT, default_timeout=30).run()
    assert not app.exception
    assert app.metric[0].label.startswith("Procedure") and app.metric[0].value == "75%"
    text = " ".join(m.value for m in app.markdown)
    assert "安装配置 · 故障排查" in text and "高实操性" in text
    assert "1. 文档摘要" in text and "1 of 2 chosen" in text and "3. 相关段落" in text
    assert len(app.dataframe) == 3  # one per layer
    assert app.session_state["lit"] == LitIds(("api.md",), ("0007",), ("0007_chunk_00",), ("0007",))


def test_lit_ids_of_other_strategies_are_empty():
    other = (ContextSection("graph", "Paths", "a -> b"),)
    assert not is_drilldown(other)
    assert lit_ids(other) == LitIds((), (), (), ())
