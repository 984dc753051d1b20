"""The seed's terminal format for a Trace (the `>>> Step 1/2/3` blocks)."""

from __future__ import annotations

import re
from dataclasses import replace

from treerag_core.answer.flags import question_flags, verdict_label
from treerag_core.answer.synthesis import EXTRACTIVE_DETAIL, LLM_OFF
from treerag_core.base.pagemap import format_pages
from treerag_core.base.text_rules import preview
from treerag_core.base.types import Fallback, LocateResult, RetrievedChunk, Trace
from treerag_core.records.trace_json import stage_summary
from treerag_core.search.rerank import naming_control

RULE = "=" * 60
ROUTING_ROWS = 10  # documents listed in the routing table (the rest counted)
# C0 controls but newline and tab, DEL, C1 controls (0x80-0x9f: 0x9b is a one-byte CSI), and
# the bidi overrides that reorder what a terminal shows.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """Text from questions and documents made inert for a terminal.

    Escape and control characters become visible `\\xNN` / `\\uNNNN` escapes, so a
    document cannot change colours, move the cursor, set the title or write the clipboard
    (OSC 52) of whoever reads the CLI's output.
    """

    def show(match: re.Match[str]) -> str:
        code = ord(match.group(0))
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return _CONTROL.sub(show, text)


def json_terminal_safe(text: str) -> str:
    """JSON text with the same characters as `\\uNNNN` escapes (still valid, same value)."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _scores(hit: RetrievedChunk) -> str:
    rerank = f"{hit.rerank:.2f}" if hit.rerank is not None else "-"
    forced = "  (min-max 1.0 on a tiny leaf)" if hit.minmax_forced else ""
    pooled = f"  pooled={hit.pool_fused:.2f}" if hit.pool_fused is not None else ""
    prior = f"  section={hit.prior:.2f}" if hit.prior is not None else ""
    return (
        f"dense={hit.dense:.2f}  bm25={hit.bm25:.2f}  fused={hit.fused:.2f}{pooled}{prior}  "
        f"rerank={rerank}{forced}"
    )


def routing_lines(locate: LocateResult) -> list[str]:
    """The document-routing table: every document's score, kept or cut."""
    scores = locate.document_scores
    if not scores:
        return []
    kept = sum(1 for s in scores if s.kept)
    lines = [f"Document routing ({scores[0].basis}): {kept} of {len(scores)} searched"]
    for s in scores[:ROUTING_ROWS]:
        parts = [("dense", s.dense), ("bm25", s.bm25), ("passage", s.passage)]
        extra = "".join(f"  {name}={value:.3f}" for name, value in parts if value is not None)
        state = "kept" if s.kept else "cut "
        lines.append(f"  {s.rank:>3}. {state}  {s.score:.3f}  {s.name}{extra}")
    rest = scores[ROUTING_ROWS:]
    if rest:
        lines.append(f"  ... {len(rest)} more ({sum(1 for s in rest if s.kept)} kept)")
    return lines


def render_header(trace: Trace) -> str:
    return terminal_safe(f"{RULE}\nQuery: {trace.question}\n{RULE}\n")


def render_retrieval(trace: Trace, rerank_chinese_by: str = "") -> str:
    """Steps 1 and 2 as text (everything before the answer); `rerank_chinese_by` names what
    switches the cross-encoder on for Chinese questions (the CLI's flag) in its skip note."""
    lines = ["", ">>> Step 1: Node Locating"]
    locate = trace.locate
    if locate is not None:
        lines.append(f"Locator: {locate.locator}")
        if locate.thinking:
            lines.append(f"Thinking: {locate.thinking}")
        for note in locate.notes:
            lines.append(f"Note: {note}")
        if locate.documents:
            lines.append(f"Routed to documents: {', '.join(locate.documents)}")
        lines.extend(routing_lines(locate))
        if locate.locator != "none" or locate.leaves:  # "none": a strategy that does not locate
            lines.append(f"Located {count_noun(len(locate.leaves), 'leaf node')}:")
        for leaf in locate.leaves:
            score = f"  (score {leaf.score:.3f})" if leaf.score is not None else ""
            lines.append(f"  [{leaf.node_id}] {leaf.heading_path}{score}")
            lines.append(f'    sub_query: "{leaf.sub_query}"')
    # The answer's fallbacks are known only once it is written: the footer prints them.
    lines.extend(
        _fallback_line(f, rerank_chinese_by) for f in trace.fallbacks if f.stage != "synthesize"
    )
    lines += ["", ">>> Step 2: Hybrid Retrieval + Rerank"]
    groups = len([g for g in trace.retrieved if g.hits])
    lines.append(
        f"Retrieved {count_noun(len(trace.reranked), 'chunk')} "
        f"(from {count_noun(groups, 'searched group')}):"
    )
    for hit in trace.reranked:
        move = hit.pooled_rank - hit.final_rank
        arrow = f"  (up {move})" if move > 0 else f"  (down {-move})" if move < 0 else ""
        pages = format_pages(hit.chunk.page_start, hit.chunk.page_end)
        where = f" ({pages})" if pages else ""
        lines.append(
            f"  #{hit.final_rank} [{hit.chunk.source_node_id}] {hit.chunk.heading_path}{where}"
            f"{arrow}"
        )
        lines.append(f'     "{preview(hit.chunk.text, 90)}"')
        lines.append(f"     {_scores(hit)}")
        lines.append("")
    for section in trace.sections:
        lines.append(f"Context: {section.title}")
        lines.extend(f"  {line}" for line in section.text.splitlines()[:8])
        lines.append("")
    lines += [">>> Step 3: Answer"]
    return terminal_safe("\n".join(lines) + "\n")


def count_noun(n: int, noun: str) -> str:
    """ "1 chunk", "2 chunks": a count with its noun, plural when not one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _timing(trace: Trace, row: dict) -> str:
    text = f"{row['stage']} {row['ms']:.0f} ms"
    # The local locator scores every chunk in scope; step 2 cuts the window from those scores.
    if row["stage"] == "retrieve" and trace.locate is not None and trace.locate.locator == "local":
        text += " (scored in locate)"
    return text


def _fallback_line(fallback: Fallback, rerank_chinese_by: str = "") -> str:
    detail = fallback.detail
    if rerank_chinese_by and fallback.stage == "rerank":
        detail = naming_control(detail, rerank_chinese_by)
    return f"Fallback ({fallback.stage}): {fallback.reason} - {detail}"


def render_footer(trace: Trace, switched_off_by: str = "") -> str:
    """Everything after the answer; `switched_off_by` names what turned the LLM off (the
    CLI's `--mock`) in the line that says the answer is extractive."""
    lines = [""]
    unsupported = [c for c in trace.citations if not c.supported]
    if unsupported:
        lines.append("Unsupported citations: " + "; ".join(c.heading_path for c in unsupported))
    for f in trace.fallbacks:
        if f.stage != "synthesize":
            continue  # printed before step 2
        if f.reason == LLM_OFF and switched_off_by:
            f = replace(f, detail=f"{switched_off_by} asked for no LLM: {EXTRACTIVE_DETAIL}")
        lines.append(_fallback_line(f))
    timing = ", ".join(_timing(trace, row) for row in stage_summary(trace))
    rows = stage_summary(trace)
    cost = sum(row["cost_usd"] for row in rows)
    if not all(row["cost_known"] for row in rows):
        lines.append(f"Timing: {timing}; cost unknown (no price for this model)")
    else:
        lines.append(f"Timing: {timing}" + (f"; cost ${cost:.4f}" if cost else ""))
    flags = question_flags(trace)
    doubt = verdict_label(trace.verdict)
    if doubt:
        lines.append(f"Verdict: {doubt}")
    elif flags.out_of_scope and not trace.verdict:
        lines.append("Flag: out of scope (the evidence found is weak)")
    if flags.sensitive:
        lines.append(f"Flag: sensitive ({', '.join(flags.sensitive)})")
    lines.append(RULE)
    return terminal_safe("\n".join(lines) + "\n")


def render_trace(trace: Trace) -> str:
    answer = terminal_safe(trace.answer)
    return render_header(trace) + render_retrieval(trace) + answer + render_footer(trace)
