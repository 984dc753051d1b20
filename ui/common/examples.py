"""Example questions for the bundled sample documents."""

from __future__ import annotations

from collections.abc import Sequence

# file name -> questions, checked to find their section across the whole sample corpus with
# the local locator (no LLM).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "test_paper.md": (
        "AdaRouter使用什么算法？",
        "AdaRouter在EUR/USD上的准确率是多少？",
        "为什么AdaRouter比baseline表现好？",
        "训练用了多少个epoch？",
        "What algorithm does the router use to pick a model?",
        "How many epochs was the model trained for?",
    ),
    "zh_sample.md": (
        "X3 的额定载重是多少？",
        "每个充电桩可以服务几台机器人？",
        "导航类故障怎么排除？",
    ),
    "1908.10461.md": (
        "Which cross-lingual features are used?",
        "Does the dependency parse help zero-shot parsing?",
        "Which data is used for the experiments?",
    ),
    "劳动合同法(2012-12-28).md": (
        "试用期最长可以约定多久？",
        "用人单位什么情况下需要支付经济补偿？",
        "劳务派遣有哪些规定？",
    ),
}


# Dev eval-set questions about sample documents shipped verbatim (qasper, lecoqa_laws): their
# gold evidence is known, so Compare scores every strategy on them (ui/evaluate/gold.py).
# Offered are ones whose gold some strategy finds without an LLM, so the metric columns tell
# strategies apart; on others (e.g. "How big is the Parallel Meaning Bank?", whose gold says "PMB")
# every strategy scores 0, a row of zeros that shows nothing. The first one also separates
# the flat single-signal baselines (both miss) from the hybrid and structured strategies.
GOLD_EXAMPLES: dict[str, tuple[str, ...]] = {
    "1908.10461.md": (
        "What is the performance for the three languages tested?",
        "What is the source of the crosslingual word embeddings?",
    ),
    "劳动合同法(2012-12-28).md": (
        "用人单位降低原劳动合同条件与劳动者签订无固定期限劳动合同，遭到劳动者拒绝的，"
        "用人单位因此与劳动者终止劳动关系是否违法？",
        "双方已经订立了两次固定期限合同，第二次合同到期后，用人单位是否还有终止合同的权利？",
    ),
}


def gold_examples_for(doc_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(document, question) pairs from the dev sets, for the sample documents in `doc_ids`."""
    wanted = set(doc_ids)
    return [(doc, q) for doc, qs in GOLD_EXAMPLES.items() if doc in wanted for q in qs]


def examples_for(doc_ids: Sequence[str], per_doc: int = 6) -> list[tuple[str, str]]:
    """(document, question) pairs for the sample documents among `doc_ids`, seed's first."""
    wanted = set(doc_ids)
    return [(doc, q) for doc, qs in EXAMPLES.items() if doc in wanted for q in qs[:per_doc]]
