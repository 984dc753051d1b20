"""The tree editor: the inferred heading tree of one converted file, corrected before indexing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from treerag_core import BULK_TREE_OPS as BULK_OPS
from treerag_core import HEADINGS_LIKE_BY as LIKE
from treerag_core import (
    Converted,
    EditOffer,
    TreeEdit,
    apply_edits,
    check_contents_skeleton,
    load_edit_entries,
    offer_for,
    preamble_text,
    propose_level_fixes,
    save_edits,
    skeleton_edits,
)
from treerag_core import bulk_tree_edits as bulk_edits
from treerag_core import bulk_tree_unchanged as bulk_unchanged
from treerag_core import headings_between as between
from treerag_core import headings_like as like
from treerag_core import tree_edit_no_change as no_change
from treerag_core.base.errors import InputDocumentError, LLMError
from ui.common.text_safety import plain

ACTIONS = {
    "promote": "Promote (one level up)",
    "demote": "Demote (one level down)",
    "rename": "Rename",
    "merge": "Merge into the section before (no longer a heading)",
}
# What a bulk action did, for "promoted 12; 3 already at the top level".
DONE = {"demote": "demoted", "promote": "promoted", "remove": "made body text", "merge": "merged"}
SHOWN_PICKS = 5  # selected headings named in the caption under the selector


def outline_rows(converted: Converted, edits: tuple[TreeEdit, ...]) -> list[dict[str, Any]]:
    """One row per heading of the edited document: level, indented text, page, why."""
    doc, _ = apply_edits(converted.document, edits)
    paged = any(h.page is not None for h in doc.headings)  # DOCX and HTML have no pages
    return [
        {
            "#": i,
            "level": h.level,
            "heading": "\u2003" * (h.level - 1) + h.text,
            **({"page": h.page} if paged else {}),
            "why": ", ".join(h.signals),
        }
        for i, h in enumerate(doc.headings)
    ]


def preamble_note(preamble: str, shown: int = 160) -> str:
    """What the review says of the text before the first heading, which becomes a section
    "Preamble": its size and its start."""
    lines = [line for line in preamble.split("\n") if line.strip()]
    start = " / ".join(lines)
    start = start if len(start) <= shown else start[: shown - 1].rstrip() + "…"
    count = "1 line of text becomes" if len(lines) == 1 else f"{len(lines)} lines of text become"
    return (
        f"Before the first heading, {count} a section named 'Preamble': “{plain(start)}”. "
        "To give it a heading of its own, mark its first line as a heading below."
    )


def _occurrence(headings, index: int) -> int:
    return sum(1 for h in headings[:index] if h.text == headings[index].text)


def tree_editor(
    converted: Converted,
    *,
    key: str,
    folder: str | Path | None = None,
    client: Any = None,
    model: str = "",
) -> tuple[TreeEdit, ...]:
    """Show the inferred tree and let the user promote, demote, rename, merge or mark headings.

    Edits start from those saved in `folder` (tree_edits.json, keyed by the file's hash) and
    are saved there with "Save corrections", so the next index build applies them. With an
    LLM `client`, "Suggest level fixes" (and, for a PDF with a table of contents, "Check the
    contents skeleton") shows proposed changes to accept or reject.
    Returns the current edits (saved or not).
    """
    ss = st.session_state
    state = f"{key}_edits"
    offer: EditOffer | None = None
    if folder is not None:
        try:
            entries = load_edit_entries(folder)
        except InputDocumentError as exc:
            entries = {}
            if state not in ss:
                st.error(str(exc))
        if state not in ss:
            ss[state] = list(entries.get(converted.sha256, ("", ()))[1])
        offer = offer_for(entries, converted.document, converted.sha256)
    elif state not in ss:
        ss[state] = []
    edits = tuple(ss[state])
    if offer is not None and not edits:
        # Corrections of an earlier version of this file (same name, other bytes): offered.
        st.info(offer.note() + ".")
        if offer.applies and st.button(
            f"Apply the {len(offer.applies)} that still apply", key=f"{key}_carry"
        ):
            ss[state] = list(offer.applies)
            st.rerun()
    doc, problems = apply_edits(converted.document, edits)
    name = converted.document.name

    st.markdown(f"**Inferred tree of {name}** ({len(doc.headings)} headings)")
    for note in converted.document.notes:
        st.caption(plain(note))  # a note may quote the document (a bookmark, "<main>")
    for problem in problems:
        st.warning(f"Not applied: {problem}")
    selected = _selection(doc.headings, key) if doc.headings else []
    preamble = preamble_text(doc.text)
    if preamble:
        # The index makes this text a section of its own: show it here, where it can still
        # be named (mark its first line) rather than found only after indexing.
        st.info(preamble_note(preamble))
    if doc.headings:
        outline = _outline_table(converted, edits, selected)
        st.dataframe(outline, hide_index=True, key=f"{key}_outline")
    else:
        st.info("No headings were found: the whole file is one section. Mark lines below.")

    headings = doc.headings
    if headings:
        c1, c2 = st.columns([3, 2])
        # The options are the labels themselves: after a Promote the picked heading's label
        # changes, and so does the value (index options kept the old label on screen).
        labels = [f"{i}. L{h.level} {h.text}" for i, h in enumerate(headings)]
        _keep_pick(f"{key}_pick", labels)
        pick = labels.index(c1.selectbox("Heading", labels, key=f"{key}_pick"))
        action = c2.selectbox("Change", list(ACTIONS), format_func=ACTIONS.get, key=f"{key}_action")
        new_text = st.text_input("New heading text (rename)", key=f"{key}_rename")
        if st.button("Apply", key=f"{key}_apply"):
            if action == "rename" and not new_text.strip():
                st.error("Type the new heading text first.")
            else:
                h = headings[pick]
                edit = TreeEdit(action, h.text, _occurrence(headings, pick), value=new_text)
                # An edit that changes nothing (a promote at level 1) is said, not recorded.
                if why := no_change(h.level, h.text, edit):
                    st.info(f"'{h.text}' is {why}: nothing to {action}.")
                else:
                    _push(key, state, [edit])
                    st.rerun()

    if headings:
        _bulk(headings, key, state, pick)
    if edits:
        _before_after(converted, edits)

    c1, c2 = st.columns([3, 1])
    line = c1.text_input("Mark a line as a heading (paste it exactly)", key=f"{key}_line")
    level = c2.number_input("Level", 1, 6, 2, key=f"{key}_level")
    if st.button("Mark as heading", key=f"{key}_mark") and line.strip():
        _push(key, state, [TreeEdit("mark", line.strip(), level=int(level))])
        st.rerun()

    if client is not None:
        _llm_suggestions(converted, key, client, model)

    c1, c2, c3 = st.columns(3)
    if c1.button("Undo last", key=f"{key}_undo", disabled=not edits):
        _undo(key, state)
        st.rerun()
    if c2.button("Clear all", key=f"{key}_clear", disabled=not edits):
        ss[state] = []
        ss[f"{key}_groups"] = []
        st.rerun()
    if folder is not None and c3.button("Save corrections", key=f"{key}_save", type="primary"):
        save_edits(folder, converted.sha256, name, edits)
        st.success(f"Saved {len(edits)} correction(s) for {name}; re-indexing keeps them.")
    if edits:
        st.caption("Corrections: " + "; ".join(f"{e.op} {e.line!r}" for e in edits))
    return tuple(ss[state])


def _outline_table(converted: Converted, edits: tuple[TreeEdit, ...], selected: list[int]) -> Any:
    """The outline; while "Several at once" holds a selection, with a "selected" column and
    those rows shaded (a Styler): the multiselect shows only a few of its chips."""
    rows = pd.DataFrame(outline_rows(converted, edits))
    if not selected:
        return rows
    marked = set(selected)
    rows.insert(1, "selected", ["✓" if i in marked else "" for i in range(len(rows))])
    shade = "background-color: rgba(255, 200, 0, 0.25)"
    return rows.style.apply(lambda row: [shade if row["selected"] else ""] * len(row), axis=1)


def _keep_pick(widget: str, labels: list[str]) -> None:
    """A picker whose label is gone (the heading changed level, or one before it stopped being
    a heading) keeps its number, clamped to the list."""
    ss = st.session_state
    picked = ss.get(widget)
    if isinstance(picked, str) and picked not in labels:
        number = picked.split(".", 1)[0]
        at = int(number) if number.isdigit() else 0
        ss[widget] = labels[min(at, len(labels) - 1)]


def _push(key: str, state: str, new: list[TreeEdit]) -> None:
    """Add one action's edits; "Undo last" takes back the whole action."""
    ss = st.session_state
    ss[state] = [*ss[state], *new]
    ss[f"{key}_groups"] = [*ss.get(f"{key}_groups", []), len(new)]


def _undo(key: str, state: str) -> None:
    """Take back the last action (all its edits); edits loaded from disk go one at a time."""
    ss = st.session_state
    groups = list(ss.get(f"{key}_groups", []))
    edits = list(ss[state])
    size = groups.pop() if groups and sum(groups) <= len(edits) else 1
    ss[state] = edits[: len(edits) - size]
    ss[f"{key}_groups"] = groups


def _many_labels(headings) -> list[str]:
    return [f"{i}. {h.text}" for i, h in enumerate(headings)]


def _selection(headings, key: str) -> list[int]:
    """The indices "Several at once" holds, settled before anything is drawn (the outline
    shades them, above the selector)."""
    ss = st.session_state
    many_key = f"{key}_many"
    labels = _many_labels(headings)
    # A selection made by "every line like" or a run (or cleared by an action) is set before
    # the widget is drawn: a widget's value cannot change once it is on the page.
    pending = ss.pop(f"{key}_many_next", None)
    if pending is not None:
        ss[many_key] = pending
    elif any(label not in labels for label in ss.get(many_key, [])):
        ss[many_key] = []
    return [labels.index(label) for label in ss.get(many_key, [])]


def _follow_from(key: str) -> None:
    """Move "To" with "From" while the user has not picked another "To" (left on its
    default, "From" = line 169 ran the range up to line 0). A "To" the user picked stays: a
    reversed run is the same run in order, as a shift-click upwards."""
    ss = st.session_state
    from_key, to_key, seen = f"{key}_from", f"{key}_to", f"{key}_from_seen"
    if (
        from_key in ss
        and seen in ss
        and ss[from_key] != ss[seen]
        and ss.get(to_key, ss[seen]) == ss[seen]
    ):
        ss[to_key] = ss[from_key]


def _said(headings, chosen: list[int], op: str) -> str:
    """What a bulk action leaves as it is, said ("promoted 12; 3 already at the top level"),
    or "" when it changes every selected heading."""
    skipped = bulk_unchanged(headings, chosen, op)
    if op == "merge" and len(chosen) < 2:
        return "Select at least two headings to merge them into one section."
    if not skipped:
        return ""
    why = "; ".join(f"{n} {reason}" for reason, n in skipped.items())
    done = len(set(chosen)) - sum(skipped.values())
    if not done:
        return f"Nothing to {op}: {why}."
    return f"{DONE[op].capitalize()} {done}; {why}."


def _selected_caption(headings, chosen: list[int]) -> str:
    """The count and the first few selected headings: the multiselect shows few of its chips."""
    if not chosen:
        return "Nothing selected."
    names = [headings[i].text for i in chosen[:SHOWN_PICKS]]
    more = ", …" if len(chosen) > SHOWN_PICKS else ""
    return f"{len(chosen)} selected: {', '.join(names)}{more}"


def _bulk(headings, key: str, state: str, pick: int) -> None:
    """Select many headings (by hand, every one like the picked heading, or every one from one
    to another: the shift-click) and change them all in one action."""
    ss = st.session_state
    many_key = f"{key}_many"
    labels = _many_labels(headings)

    def select(indices: list[int]) -> None:
        # Added to what is selected when asked (like ctrl + shift-click), else instead of it.
        kept = [labels.index(label) for label in ss.get(many_key, [])]
        chosen = {*indices, *(kept if ss.get(f"{key}_many_add") else [])}
        ss[f"{key}_many_next"] = [labels[i] for i in sorted(chosen)]
        st.rerun()

    st.markdown("**Several at once**")
    if said := ss.pop(f"{key}_said", ""):
        st.info(said)
    c1, c2 = st.columns([3, 2])
    c2.checkbox("Add to what is selected (else replace it)", key=f"{key}_many_add")
    by = c2.selectbox("Every line like the picked heading", list(LIKE), format_func=LIKE.get,
                      key=f"{key}_like_by")  # fmt: skip
    if c2.button("Select them", key=f"{key}_like"):
        if headings[pick].synthetic:
            c2.info(f"'{headings[pick].text}' is not a line of the document: nothing is like it.")
        else:
            select(like(headings, pick, by))
    _follow_from(key)
    for end in ("from", "to"):
        _keep_pick(f"{key}_{end}", labels)
    r1, r2 = c2.columns(2)
    first = labels.index(r1.selectbox("From", labels, key=f"{key}_from"))
    last = labels.index(r2.selectbox("To (both included)", labels, key=f"{key}_to"))
    ss[f"{key}_from_seen"] = labels[first]
    if c2.button("Select every heading from … to …", key=f"{key}_run"):
        select(between(headings, first, last))
    many = c1.multiselect("Selected headings", labels, key=many_key)
    chosen = [labels.index(label) for label in many]
    c1.caption(_selected_caption(headings, chosen))
    op = c1.selectbox("Change them", list(BULK_OPS), format_func=BULK_OPS.get, key=f"{key}_bulk_op")
    if c1.button(f"Apply to {len(many)} selected", key=f"{key}_bulk", disabled=not many):
        said, edits = _said(headings, chosen, op), bulk_edits(headings, chosen, op)
        if not edits:  # nothing would change: the selection stays, and why is said
            c1.info(said)
        else:
            _push(key, state, edits)
            ss[f"{key}_many_next"] = []
            ss[f"{key}_said"] = said
            st.rerun()


def _before_after(converted: Converted, edits: tuple[TreeEdit, ...]) -> None:
    """The outline as converted beside the outline with the corrections."""
    with st.expander("Before / after", expanded=False):
        left, right = st.columns(2)
        for column, title, shown in (
            (left, "As converted", ()),
            (right, "With your corrections", edits),
        ):
            rows = pd.DataFrame(outline_rows(converted, shown))
            # DOCX and HTML have no pages: the page column is there for PDFs only.
            columns = [c for c in ("level", "heading", "page") if c in rows.columns]
            column.caption(title)
            column.dataframe(rows[columns] if len(rows) else rows, hide_index=True)


def _llm_suggestions(converted: Converted, key: str, client: Any, model: str) -> None:
    """The LLM passes, each shown as a diff with one checkbox per proposal: level fixes, and
    (for a PDF with a table of contents) the contents skeleton checked and completed."""
    edits = tuple(st.session_state[f"{key}_edits"])
    doc, _ = apply_edits(converted.document, edits)
    c1, c2 = st.columns(2)
    levels = c1.button("Suggest level fixes (LLM)", key=f"{key}_suggest")
    contents = doc.contents and c2.button(
        "Check the contents skeleton (LLM)",
        key=f"{key}_skel",
        help="Entries of the table of contents not found in the body are looked for again, "
        "and those found are confirmed or not; each proposal is yours to accept.",
    )
    _level_fixes(doc, key, client, model, levels)
    if doc.contents:
        _skeleton_fixes(doc, edits, key, client, model, bool(contents))


def _level_fixes(doc: Any, key: str, client: Any, model: str, asked: bool) -> None:
    """Proposed level fixes as a diff: each one accepted or rejected by a checkbox."""
    ss = st.session_state
    fixes_key = f"{key}_fixes"
    if asked:
        try:
            ss[fixes_key], _usage = propose_level_fixes(client, model, doc.headings)
        except LLMError as exc:
            st.error(f"The LLM could not suggest fixes: {exc}")
            ss[fixes_key] = []
    fixes = ss.get(fixes_key)
    if fixes is None:
        return
    if not fixes:
        st.info("The LLM proposes no level changes.")
        return
    accepted = [
        fix
        for fix in fixes
        if st.checkbox(
            f"{fix.text}: level {fix.old} → {fix.new}", value=True, key=f"{key}_fix_{fix.index}"
        )
    ]
    if st.button("Apply accepted fixes", key=f"{key}_accept"):
        _push(key, f"{key}_edits", [f.edit(doc.headings) for f in accepted])
        ss[fixes_key] = None
        st.rerun()


def _skeleton_fixes(
    doc: Any, edits: tuple[TreeEdit, ...], key: str, client: Any, model: str, asked: bool
) -> None:
    """The contents skeleton checked by the LLM: one checkbox per proposed fix; the accepted
    ones are one action (one "Undo last")."""
    ss = st.session_state
    state = f"{key}_skel_check"
    if asked:
        try:
            ss[state] = (edits, check_contents_skeleton(client, model, doc))
        except LLMError as exc:
            st.error(f"The LLM could not check the contents: {exc}")
            ss[state] = None
    shown = ss.get(state)
    if shown is None:
        return
    at, check = shown
    if at != edits:  # the proposals address lines of the tree as it was
        st.info("The tree changed since the contents were checked; check them again.")
        ss[state] = None
        return
    for note in check.notes:
        st.caption(f"Contents check: {note}")
    if not check.fixes:
        st.info("The LLM proposes no change to the contents skeleton.")
        return
    st.markdown("**Contents skeleton: proposed fixes**")
    accepted = [
        fix
        for fix in check.fixes
        if st.checkbox(fix.label, value=True, key=f"{key}_skel_fix_{fix.entry}")
    ]
    if st.button("Apply accepted contents fixes", key=f"{key}_skel_accept", disabled=not accepted):
        _push(key, f"{key}_edits", skeleton_edits(accepted))
        ss[state] = None
        st.rerun()
