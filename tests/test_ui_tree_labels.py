"""Tree-graph labels: wrapped once, words whole, CJK broken at sensible points."""

from __future__ import annotations

from ui.common import tree_graph
from ui.common.tree_labels import LABEL_LINE_UNITS, LABEL_LINES, wrap_label

ID_PREFIX = len("0062 · ")  # the node id and its dot share the first line


def _units(line: str) -> int:
    return sum(2 if "\u4e00" <= c <= "\u9fff" or c in "（），。、" else 1 for c in line)


def test_chinese_numbering_keeps_its_line_and_short_titles_stay_whole():
    assert wrap_label("第一章 总则", ID_PREFIX) == "第一章\n总则"
    assert wrap_label("第五章 特别规定", ID_PREFIX) == "第五章\n特别规定"
    assert wrap_label("第二章 劳动合同的订立", ID_PREFIX) == "第二章\n劳动合同的订立"
    assert wrap_label("前言", ID_PREFIX) == "前言"


def test_a_long_chinese_title_splits_evenly_and_never_leaves_one_character():
    assert wrap_label("第三章 劳动合同的履行和变更", ID_PREFIX) == "第三章\n劳动合同的\n履行和变更"
    assert wrap_label("中华人民共和国劳动合同法") == "中华人民共和国\n劳动合同法"  # between words
    for text in ("劳动合同的履行和变更了", "网约车司机与平台之间的劳动关系认定", "第七章 法律责任"):
        for used in (0, 3, ID_PREFIX, 11):
            lines = wrap_label(text, used).split("\n")
            assert all(len(line.strip("…")) >= 2 for line in lines), (text, used, lines)


def test_long_chinese_headings_are_cut_with_an_ellipsis_within_the_width():
    label = wrap_label("第二章 有限责任公司的设立和组织机构以及股东会的职权与议事规则")
    lines = label.split("\n")
    assert len(lines) == LABEL_LINES and lines[-1].endswith("…")
    assert all(_units(line) <= LABEL_LINE_UNITS for line in lines)


def test_punctuation_stays_with_its_characters():
    lines = wrap_label("用人单位应当依法建立和完善劳动规章制度（试行）", ID_PREFIX).split("\n")
    assert not any(line[0] in "）。，" for line in lines)
    assert not any(line.rstrip("…")[-1] == "（" for line in lines)


def test_english_breaks_between_words_and_long_names_at_their_separators():
    assert wrap_label("3.3 Training Procedure") == "3.3 Training\nProcedure"
    assert wrap_label("3.2 Model Architecture", ID_PREFIX) == "3.2 Model\nArchitecture"
    assert wrap_label("PEPSICO_2023_8K_dated-2023-05-05") == "PEPSICO_2023_8K_\ndated-2023-05-05"
    cut = wrap_label("Item 5.07. Submission of Matters to a Vote of Security Holders.", 7)
    assert cut.endswith("to…") and all(len(x) <= LABEL_LINE_UNITS for x in cut.split("\n"))


def test_vis_network_is_never_asked_to_wrap_again():
    constraint = tree_graph.graph_config(400)["nodes"]["widthConstraint"]
    assert "maximum" not in constraint


def test_graph_labels_of_the_chinese_sample_fit_the_width_with_the_cited_mark(hashing_index):
    chapter = next(n for n in hashing_index.nodes.values() if n.heading.startswith("第三章"))
    law = chapter.doc_id
    marks = tree_graph.GraphMarks(cited=frozenset({chapter.node_id}))
    view = tree_graph.graph_view(hashing_index, [law], marks, full=True)
    labels = {n["id"]: n["label"] for n in view.nodes}
    assert labels[chapter.node_id].startswith(f"✓ {chapter.node_id} · 第三章\n")
    for label in labels.values():
        lines = label.split("  (+")[0].split("\n")
        assert all(_units(line) <= LABEL_LINE_UNITS + 1 for line in lines), lines
        assert all(len(line.strip("…✓ ")) >= 2 for line in lines), lines


def test_chinese_lines_break_between_words_not_inside_one():
    # The walkthrough saw 中华人民共和 / 国劳动合同法 and 安装与部 / 署（….
    assert wrap_label("第二章 安装与部署（引言）", ID_PREFIX) == "第二章\n安装与部署\n（引言）"
    assert wrap_label("劳动合同的履行和变更了") == "劳动合同的\n履行和变更了"
    for text in ("中华人民共和国劳动合同法", "第四章 维护与故障排除", "（一）导航类故障"):
        for used in (0, ID_PREFIX):
            lines = wrap_label(text, used).split("\n")
            for word in ("中华人民共和国", "部署", "故障", "导航"):
                if word in text:
                    assert any(word in line for line in lines), (text, used, lines)


def test_an_inferred_chip_name_is_cut_before_its_mark_so_a_chip_never_hides_it():
    from ui.common.tree_labels import INFERRED_CHIP_CHARS, inferred_name

    long = "Positive - When a positive word was mentioned in the input sentence"
    assert inferred_name(long) == "~Positive - When a positive word was… (inferred)"
    assert inferred_name("Railway engines pull…") == "~Railway engines pull… (inferred)"
    assert inferred_name("Short name") == "~Short name (inferred)"
    # A Han character counts twice: the Chinese name keeps half as many characters.
    zh = inferred_name("中文的一个很长的推断小节名称，由它的第一行组成，非常长的一句话", "zh")
    assert zh.endswith("…（推断）") and len(zh) - len("~…（推断）") == INFERRED_CHIP_CHARS // 2
