"""The keyless answer: whole sentences, scored by meaning and terms, deduplicated, cited, and
"not answered" when the evidence is weak."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from markdown_it import MarkdownIt

from treerag_core.answer.flags import WEAK_RERANK_LOGIT, Verdict
from treerag_core.answer.synthesis import (
    NOT_ANSWERED,
    Extract,
    Sentence,
    choose_sentences,
    extract,
    extractive,
    inert_links,
    score_sentences,
    speaking_hits,
    whole_sentences,
)
from treerag_core.base.types import Chunk, RetrievedChunk
from treerag_core.index.embedders import get_embedder

DOC = (
    "# Paper\n\n## Training\n\n"
    "The router was trained for 50 epochs with early stopping. "
    "Training used a batch size of 32 on one GPU. "
    "The learning rate was 0.001 throughout.\n\n"
    "## Results\n\n"
    "Accuracy on EUR/USD reached 71.3 percent. The Sharpe ratio was 1.84 with AdaRouter.\n"
)


def hit(text: str, path: str, rank: int) -> RetrievedChunk:
    start = DOC.index(text)
    chunk = Chunk(f"c{rank}", text, f"n{rank}", path, "paper.md", start, start + len(text))
    return RetrievedChunk(chunk, 0.5, 1.0, 0.5, 0.5, 0.5, rank + 1, final_rank=rank + 1)


@pytest.fixture(scope="module")
def embedder():
    return get_embedder("hashing")


def embed_many(embedder):
    return lambda texts: embedder.embed(list(texts))


def test_a_passage_cut_mid_sentence_gives_whole_sentences():
    cut = hit("for 50 epochs with early stopping. Training used a batch", "Paper > Training", 0)
    found = whole_sentences([cut], {"paper.md": DOC})
    texts = [s.text for s in found]
    assert texts == [
        "The router was trained for 50 epochs with early stopping.",
        "Training used a batch size of 32 on one GPU.",
    ]
    assert all(DOC[s.start : s.end] == s.text for s in found)
    # Without the document text, only the passage's own sentences (never across a heading).
    assert whole_sentences([cut], {})[0].text.startswith("for 50 epochs")


def test_the_answer_cites_every_sentence_and_streams_one_at_a_time(embedder):
    hits = [
        hit("Accuracy on EUR/USD reached 71.3 percent. The Sharpe ratio", "Paper > Results", 0),
        hit("The router was trained for 50 epochs with early stopping.", "Paper > Training", 1),
    ]
    question = "What accuracy did the router reach on EUR/USD?"
    deltas = list(
        extractive(
            question, embedder.embed_query(question), hits, "en", embed_many(embedder),
            {"paper.md": DOC}, threshold=0.1,
        )[1]
    )  # fmt: skip
    assert deltas[0].startswith("Accuracy on EUR/USD reached 71.3 percent.")
    assert all("[Source: Paper > " in d for d in deltas)
    assert len(deltas) == len("".join(deltas).splitlines())


def test_an_off_topic_question_is_not_answered_and_cites_nothing_when_both_readers_agree(
    embedder,
):
    # The cross-encoder scored the only passage far below its line, and no sentence of it
    # matches the question: both readers doubt it, so the answer refuses (naming the passage).
    weak = replace(
        hit("The learning rate was 0.001 throughout.", "Paper > Training", 0), rerank=-9.0
    )
    question = "What is the capital of France?"
    verdict, text = extractive(
        question, embedder.embed_query(question), [weak], "en", embed_many(embedder),
        {"paper.md": DOC},
    )  # fmt: skip
    assert "".join(text) == NOT_ANSWERED["en"].format(path="Paper > Training")
    assert verdict.verdict == Verdict.NOT_ANSWERED
    assert verdict.label().startswith("Not answered: the best passage scores −9.00 and ")


def test_one_doubting_reader_labels_the_answer_and_never_hides_the_top_passage(embedder):
    # A financial passage the web-trained cross-encoder scores low (−2.8), whose sentence
    # matches the question well: the answer leads with it, cited, labelled "weak match".
    top = replace(
        hit("The learning rate was 0.001 throughout.", "Paper > Training", 0), rerank=-2.8
    )
    question = "What was the learning rate?"
    verdict, text = extractive(
        question, embedder.embed_query(question), [top], "en", embed_many(embedder),
        {"paper.md": DOC}, threshold=0.1,
    )  # fmt: skip
    answer = "".join(text)
    assert answer.startswith("The learning rate was 0.001 throughout. [Source: Paper > Training]")
    assert verdict.verdict == Verdict.WEAK and verdict.passage_weak and not verdict.sentence_weak
    assert verdict.label() == (
        "Weak match: the best passage scores −2.80; check the evidence below."
    )
    # The other way round: the passage reader agrees, the sentence is below the bar.
    sure = replace(top, rerank=4.0)
    verdict, text = extractive(
        "What is the capital of France?", embedder.embed_query("What is the capital of France?"),
        [sure], "en", embed_many(embedder), {"paper.md": DOC},
    )  # fmt: skip
    assert "".join(text).startswith("The learning rate was 0.001 throughout. [Source:")
    assert verdict.verdict == Verdict.WEAK and verdict.sentence_weak
    # Both agree it is on topic: no label at all.
    verdict, _ = extractive(
        question, embedder.embed_query(question), [sure], "en", embed_many(embedder),
        {"paper.md": DOC}, threshold=0.1,
    )  # fmt: skip
    assert verdict.verdict == Verdict.ANSWERED and verdict.label() == ""


def test_a_sentence_in_another_language_is_judged_by_meaning_alone():
    # Every sentence is equally close in meaning (cosine 0.5); none shares a question term.
    # The Chinese sentence could share words with the question and does not: a miss. The
    # English one cannot (another language), so its score is its meaning alone.
    question_vector = np.array([1.0, 0.0], dtype=np.float32)
    sentences = [
        Sentence("模型训练了五十轮，使用早停。", "Paper > 训练", "d", 0, 14, 0),
        Sentence("The router was trained for 50 epochs.", "Paper > Training", "d", 20, 57, 1),
    ]
    same_meaning = lambda texts: np.tile(np.array([0.5, 0.866], np.float32), (len(texts), 1))  # noqa: E731
    scored = {
        s.text[:3]: s for s in score_sentences("用了多少", question_vector, sentences, same_meaning)
    }
    assert scored["The"].score == pytest.approx(0.5)
    assert scored["模型训"].score == pytest.approx(0.6 * 0.5)


def test_a_sentence_shares_the_question_terms_its_section_title_has():
    # Same meaning, same words; only the section title differs. The sentence under the
    # heading that names what is asked ("导航类故障") counts those terms as its own.
    question_vector = np.array([1.0, 0.0], dtype=np.float32)
    text = "故障代码 E101 表示激光雷达通信中断，重新插紧后重启即可恢复。"
    sentences = [
        Sentence(text, "4.2 > （一）导航类故障", "d", 0, 30, 0, heading="4.2 > （一）导航类故障"),
        Sentence(text, "4.2 > （二）机构类故障", "d", 40, 70, 1, heading="4.2 > （二）机构类故障"),
    ]
    same_meaning = lambda texts: np.tile(np.array([0.5, 0.866], np.float32), (len(texts), 1))  # noqa: E731
    scored = score_sentences("导航类故障怎么排除？", question_vector, sentences, same_meaning)
    assert scored[0].heading.endswith("导航类故障")
    assert scored[0].overlap > scored[1].overlap > 0.0
    # A title shared by every candidate never makes its terms look common (lowering the
    # score of the sentences it names): the weights come from the sentences' own words.
    question = "How many epochs was the model trained for?"
    own = [
        Sentence("We train the encoder for 50 epochs.", "3.3", "d", 0, 35, 0),
        Sentence("Early stopping with a patience of 5 epochs.", "3.3", "d", 36, 80, 0),
    ]
    titled = [replace(s, heading="3 Methods > 3.3 Training Procedure") for s in own]
    plain = score_sentences(question, question_vector, own, same_meaning)
    under = score_sentences(question, question_vector, titled, same_meaning)
    assert under[0].text == plain[0].text and under[0].overlap >= plain[0].overlap


def _s(text: str, start: int, score: float, rank: int = 0, path: str = "A") -> Sentence:
    return Sentence(text, path, "d", start, start + len(text), rank, score=score)


SCORED = [
    _s("passage two sentence about epochs", 500, 0.9, rank=1, path="B"),
    _s("passage one best sentence on training", 100, 0.6),
    _s("Passage one best sentence on training!", 300, 0.58),  # a near-duplicate
    _s("passage one earlier sentence on loss", 10, 0.5),
    _s("passage one weak sentence", 200, 0.2),
    _s("passage three sentence on rates", 900, 0.55, rank=2, path="C"),
]


def test_the_top_passage_leads_then_passages_take_turns():
    # Step 2 ranked passage 0 first: its best sentence leads although passage 1's scores more.
    result = choose_sentences(SCORED, threshold=0.3)
    assert [x.start for x in result.sentences] == [100, 500, 900]
    assert result.answered and result.best.start == 500


def test_a_section_leads_with_its_best_then_reads_in_document_order_without_repeats():
    result = choose_sentences(SCORED, threshold=0.3, max_sentences=6)
    # 300 repeats 100; 200 is below the bar: neither is said.
    assert [(x.path, x.start) for x in result.sentences] == [
        ("A", 100), ("A", 10), ("B", 500), ("C", 900)
    ]  # fmt: skip
    # Below the bar, the top passage's best sentence still leads (the verdict labels it).
    assert [x.start for x in choose_sentences(SCORED, threshold=0.95).sentences] == [100]
    assert choose_sentences([], threshold=0.0) == Extract((), False, None)


def test_extract_keeps_only_sentences_near_the_best(embedder):
    hits = [hit("The learning rate was 0.001 throughout.", "Paper > Training", 0)]
    question = "What was the learning rate?"
    result = extract(
        question, embedder.embed_query(question), hits, embed_many(embedder), {"paper.md": DOC}, 0.1
    )
    assert result.answered and result.sentences[0].text == "The learning rate was 0.001 throughout."


def test_a_passage_the_cross_encoder_judged_off_topic_does_not_speak(embedder):
    question = "How many epochs was the router trained for, and what batch size?"
    top = replace(hit("The router was trained for 50 epochs", "Paper > Training", 0), rerank=3.0)
    batch = hit("Training used a batch size of 32 on one GPU.", "Paper > Training", 1)
    args = (question, embedder.embed_query(question))
    rest = (embed_many(embedder), {"paper.md": DOC}, 0.05)
    # Judged relevant (or not judged at all), the second passage adds its sentence ...
    for rerank in (None, WEAK_RERANK_LOGIT, 1.0):
        said = extract(*args, [top, replace(batch, rerank=rerank)], *rest).sentences
        assert any("batch size" in s.text for s in said), rerank
    # ... judged off-topic, it does not, however many words it shares with the question.
    off = replace(batch, rerank=-7.9)
    said = extract(*args, [top, off], *rest).sentences
    assert [s.text for s in said] == ["The router was trained for 50 epochs with early stopping."]
    # The top passage always stays: it carries the "not answered" verdict.
    weak_top = replace(top, rerank=-9.0)
    assert speaking_hits([weak_top, off]) == [weak_top]


EVIL = (
    "The router is described [here](http://evil.example/x) with ![pixel](https://t.example/p)"
    " and <a href='http://x.example'>this</a>, <http://auto.example> and www.bare.example."
)


def test_inert_links_render_as_plain_text():
    html = MarkdownIt("commonmark").render(inert_links(EVIL))
    assert "<a " not in html and "<img" not in html
    assert "[here](http:" in html  # the text is still all there, shown literally


def test_extractive_answer_never_renders_document_links_as_live_links():
    chunk = Chunk("c1", EVIL, "0002", "Paper > Router", "paper.md", 0, len(EVIL))
    hit = RetrievedChunk(chunk, 0.9, 1.0, 1.0, 1.0, 1.0, 1)
    answer = "".join(
        extractive(
            "router", np.ones(4, dtype=np.float32), [hit], "en",
            lambda texts: np.ones((len(texts), 4), dtype=np.float32), threshold=0.0,
        )[1]
    )  # fmt: skip
    html = MarkdownIt("commonmark").render(answer)
    assert "<a " not in html and "<img" not in html
    assert "[Source: Paper > Router]" in answer  # the citation marker itself stays parseable


def test_an_extractive_answer_to_an_llm_request_without_a_key_is_a_fallback():
    from treerag_core.answer.synthesis import LLM_OFF, NO_LLM_ANSWER, answer_fallbacks
    from treerag_core.base.types import Fallback, Trace

    def trace(enabled: bool, client: bool, answer: str = "Fifty [Source: 3 Methods].") -> Trace:
        return Trace("q", "treerag", {"llm": {"enabled": enabled}}, {"llm": client}, answer=answer)

    [fb] = answer_fallbacks(trace(enabled=True, client=False))
    assert (fb.stage, fb.reason) == ("synthesize", NO_LLM_ANSWER)
    assert "extractive answer" in fb.detail
    [off] = answer_fallbacks(trace(enabled=False, client=False))  # LLM off: by choice, but said
    assert (off.stage, off.reason) == ("synthesize", LLM_OFF) and "extractive" in off.detail
    assert answer_fallbacks(trace(enabled=True, client=True)) == []  # the LLM wrote it
    assert answer_fallbacks(trace(enabled=True, client=False, answer="")) == []  # no answer
    failed = trace(enabled=True, client=True)
    failed.fallbacks.append(Fallback("synthesize", "auth", "401; extractive answer instead"))
    assert answer_fallbacks(failed) == failed.fallbacks  # recorded: said once, as recorded


LAW = (
    "## 第四章 劳动合同的解除和终止\n\n"
    "第三十八条 用人单位有下列情形之一的，劳动者可以解除劳动合同：\n\n"
    "（一）未按照劳动合同约定提供劳动保护或者劳动条件的；\n\n"
    "（二）未及时足额支付劳动报酬的；\n\n"
    "（六）法律、行政法规规定劳动者可以解除劳动合同的其他情形。\n\n"
    "第三十九条 劳动者在试用期间被证明不符合录用条件的，用人单位可以解除劳动合同。\n"
)


def test_a_list_item_finds_the_line_that_opens_its_list() -> None:
    from treerag_core.answer.synthesis import lead_in
    from treerag_core.base.text_rules import opens_list_item

    item = LAW.index("（六）")
    assert opens_list_item(LAW[item:]) and not opens_list_item("第三十九条 劳动者在试用期间")
    # Its earlier siblings are skipped; the article's opening line ends with a colon.
    assert lead_in(LAW, item) == "第三十八条 用人单位有下列情形之一的，劳动者可以解除劳动合同："
    # No list above: a paragraph without a colon, or a heading, ends the walk.
    plain = "第三十九条 不是列表。\n\n（一）孤立的一项。"
    assert lead_in(plain, plain.index("（一）")) == ""
    headed = "## 标题\n\n（一）孤立的一项。"
    assert lead_in(headed, headed.index("（一）")) == ""
    # A long opening paragraph gives only its last sentence.
    long_lead = "前文。" * 80 + "有下列情形之一的：\n\n(1) an item"
    assert lead_in(long_lead, long_lead.index("(1)")) == "有下列情形之一的："


def test_the_extractive_answer_quotes_a_list_item_with_its_lead_in() -> None:
    from treerag_core.answer.synthesis import Extract, Sentence, render_extract, with_lead_ins

    start = LAW.index("（六）")
    end = LAW.index("\n", start)
    item = Sentence(LAW[start:end], "第四章", "law.md", start, end, 0, score=1.0)
    done = with_lead_ins(Extract((item,), True, item), {"law.md": LAW})
    text = "".join(render_extract(done, "zh"))
    assert text.startswith("第三十八条 用人单位有下列情形之一的，劳动者可以解除劳动合同：…（六）")
    assert text.endswith("[来源: 第四章]")
    # When the answer already says the lead-in, it is not repeated.
    lead_at = LAW.index("第三十八条")
    lead = Sentence(LAW[lead_at : LAW.index("\n", lead_at)], "第四章", "law.md", lead_at, 0, 0)
    both = with_lead_ins(Extract((lead, item), True, lead), {"law.md": LAW})
    assert [s.lead_in for s in both.sentences] == ["", ""]


def test_a_line_that_opens_a_list_is_quoted_with_its_first_items() -> None:
    from treerag_core.answer.synthesis import (
        ITEMS_MAX,
        Extract,
        Sentence,
        list_items,
        render_extract,
        with_lead_ins,
    )

    lead_at = LAW.index("第三十八条")
    lead_end = LAW.index("\n", lead_at)
    items = list_items(LAW, lead_end)
    # The items up to the next non-item paragraph (the next article), in order.
    assert items.startswith("（一）未按照") and items.endswith("其他情形。")
    assert "第三十九条" not in items
    long_list = "开头：\n\n" + "\n\n".join(f"（{n}）" + "很长的一项" * 20 for n in "一二三四五")
    cut = list_items(long_list, long_list.index("\n"))
    assert cut.endswith("…") and len(cut) <= ITEMS_MAX + 2  # "…" and a space
    # One long line of items is capped too, cut with "…".
    one_line_list = "开头：\n" + "".join(f"（{n}）测试长度限制；" for n in range(1, 100))
    capped = list_items(one_line_list, one_line_list.index("\n"))
    assert capped.startswith("（1）") and capped.endswith("…") and len(capped) <= ITEMS_MAX
    lead = Sentence(LAW[lead_at:lead_end], "第四章", "law.md", lead_at, lead_end, 0, score=1.0)
    text = "".join(
        render_extract(with_lead_ins(Extract((lead,), True, lead), {"law.md": LAW}), "zh")
    )
    assert "劳动者可以解除劳动合同： （一）未按照" in text and text.endswith("[来源: 第四章]")
    # An item the answer already says is not quoted again after its lead-in.
    start = LAW.index("（六）")
    item = Sentence(LAW[start : LAW.index("\n", start)], "第四章", "law.md", start, 0, 0)
    both = with_lead_ins(Extract((lead, item), True, lead), {"law.md": LAW})
    assert [s.items for s in both.sentences] == ["", ""]


def test_a_chinese_answer_names_the_graph_context_in_chinese() -> None:
    from treerag_core.answer.synthesis import _context_rows
    from treerag_core.base.types import ContextSection

    row = {"entity": "经济补偿", "found_in": "第四章 劳动合同的解除和终止"}
    sections = [ContextSection("entities", "Entities", "经济补偿", (row,), ("c1",))]
    zh = "".join(_context_rows(sections, "zh"))
    assert "图上下文:" in zh and "- 实体:" in zh and "Entities" not in zh
    assert "- Entities:" in "".join(_context_rows(sections, "en"))


def test_lists_on_single_lines_and_bracketed_numbers_without_a_space() -> None:
    from treerag_core.answer.synthesis import lead_in, list_items
    from treerag_core.base.text_rules import opens_list_item

    assert opens_list_item("（1）未按照劳动合同约定") and opens_list_item("(2)foo")
    assert not opens_list_item("2019 Results") and not opens_list_item("第三十八条 用人单位")
    lead = "第三十八条 用人单位有下列情形之一的，劳动者可以解除劳动合同："
    text = lead + "\n（一）未提供劳动条件的；\n（二）未足额支付报酬的；\n"
    assert (
        lead_in(text, text.index("（二）"))
        == "第三十八条 用人单位有下列情形之一的，劳动者可以解除劳动合同："
    )
    assert list_items(text, text.index("\n")) == "（一）未提供劳动条件的； （二）未足额支付报酬的；"


def test_a_link_in_a_lead_in_or_an_item_is_made_inert() -> None:
    from treerag_core.answer.synthesis import Extract, Sentence, render_extract, with_lead_ins

    doc = "见 [说明](https://evil.example)：\n\n（一）第一项 ![](https://t.example/p.png)。\n"
    start = doc.index("（一）")
    item = Sentence(doc[start : doc.index("\n", start)], "章", "d.md", start, 0, 0, score=1.0)
    text = "".join(render_extract(with_lead_ins(Extract((item,), True, item), {"d.md": doc}), "zh"))
    assert "说明" in text and "](https://" not in text and "![](" not in text
