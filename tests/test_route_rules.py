"""benchmarks/route_rules.py: the offline routing rules decide as the engine's check does."""

from __future__ import annotations

from benchmarks import route_rules as rr


def _record(reader: list[float] | None) -> dict:
    # Four candidates, window order 0..3; documents a, b kept, c not.
    docs = ["a", "c", "b", "a"]
    return {
        "kept": ["a", "b"],
        "flat": [0, 1, 2, 3],
        "routed": [0, 2, 3],
        "candidates": [{"doc": d, "start": 0, "end": 10, "chars": 300} for d in docs],
        "reader": reader,
    }


def test_reader_order_is_the_cross_encoders_or_the_window_order() -> None:
    assert rr.reader_order(_record(None), "flat") == [0, 1, 2, 3]
    assert rr.reader_order(_record([1.0, 0.0, 3.0, 3.0]), "flat") == [2, 3, 0, 1]  # ties: window
    assert rr.reader_order(_record([1.0, 0.0, 3.0, 2.0]), "routed") == [2, 3, 0]


def test_rules_route_only_as_deep_as_they_read() -> None:
    rec = _record([3.0, 2.0, 1.0, 0.0])  # reader order 0 (a), 1 (c), 2 (b), 3 (a)
    order = rr.reader_order(rec, "flat")
    assert rr.top_in_kept(1)(rec, order) and not rr.top_in_kept(2)(rec, order)
    assert rr.chars_in_kept(300)(rec, order) and not rr.chars_in_kept(600)(rec, order)
    assert rr.RULES["unchecked"](rec, order)


def test_the_second_reader_rule_never_routes_on_the_fused_order_alone() -> None:
    rule = rr.RULES["best 1 in kept, cross-encoder only (before)"]
    fused = _record(None)
    assert rr.top_in_kept(1)(fused, rr.reader_order(fused, "flat"))  # the self-check says yes
    assert not rule(fused, rr.reader_order(fused, "flat"))
    read = _record([3.0, 2.0, 1.0, 0.0])
    assert rule(read, rr.reader_order(read, "flat"))


def test_the_shipped_rule_never_cuts_a_passage_the_reader_calls_relevant() -> None:
    rule = rr.RULES["best 1 in kept, nothing relevant cut, cross-encoder only (shipped)"]
    # Best passage in a kept document (0, a); the one of c (not kept) scores above 0.
    doubtful = _record([3.0, 0.5, -1.0, -2.0])
    assert rr.top_in_kept(1)(doubtful, rr.reader_order(doubtful, "flat"))
    assert not rule(doubtful, rr.reader_order(doubtful, "flat"))
    sure = _record([3.0, -0.5, 1.0, -2.0])  # c below the boundary: the cut drops nothing believed
    assert rule(sure, rr.reader_order(sure, "flat"))
    fused = _record(None)  # no cross-encoder: never, as before
    assert not rule(fused, rr.reader_order(fused, "flat"))
