"""Optional LLM check of a PDF's contents skeleton: each entry not found in the body is looked
for again in the numbered lines of its page(s), each anchored one is confirmed or not; the
answers come back as proposed fixes (tree edits), reviewed one by one like `llm_levels`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treerag_core.base.types import Usage
from treerag_core.ingest.convert.base import ContentsEntry, ConvertedDocument
from treerag_core.ingest.parsing import scan_headings
from treerag_core.ingest.tree_edits import TreeEdit
from treerag_core.llm import LLMClient
from treerag_core.llm.prompts import first_json_object

MAX_ENTRIES = 60  # entries checked per document; the rest are named in a note
BATCH_ENTRIES = 10  # entries per call
BATCH_CHARS = 24_000  # characters of entries per call (a few thousand tokens)
PAGE_CHARS = 2_500  # characters of numbered lines shown per page of an entry not found
LINE_CHARS = 160  # a longer line is cut (a heading is short)
CONTEXT_LINES = 6  # lines shown each side of an anchored heading
SLACK = 1  # an entry not found is looked for on its page +-1, as the converter did
MAX_SPAN = 3  # at most this many pages for an entry without a page of its own

PROMPT = "\n".join(
    [
        "You check a document's table of contents against its pages. For each contents entry",
        "below you get its title, level and page, then numbered text lines of the page(s)",
        "where its section should start. `[H2]` marks a line that is a heading now (level 2).",
        "An entry `anchored to line N` was matched to line N by a program: check it.",
        "For each entry, give the number of the line that is that entry's heading (the line",
        "that opens its section, with its title or the title's opening words), or null when",
        "no line shown is. A sentence that mentions the title, a cross-reference ('see Item",
        "7') or a table row is not the heading.",
        "Reply with one JSON object mapping each entry number (as a string) to a line number",
        'or null, e.g. {"3": 118, "4": null}.',
        "",
    ]
)


@dataclass(frozen=True)
class _Line:
    number: int  # 0-based line number in the document's text
    text: str  # as shown: the heading's text, or the body line without its escape
    level: int  # 0: a body line
    page: int | None
    occurrence: int  # equal lines (of its kind: heading or body) before it


class DocLines:
    """The document's text lines, with their pages and the occurrence a TreeEdit needs."""

    def __init__(self, doc: ConvertedDocument) -> None:
        self.lines: list[_Line] = []
        self.pages: dict[int, list[_Line]] = {}
        self.headings: dict[tuple[str, int | None], _Line] = {}
        seen: dict[tuple[bool, str], int] = {}
        offset = 0
        for number, raw in enumerate(doc.text.split("\n")):
            found = scan_headings(raw + "\n") if raw.lstrip().startswith("#") else []
            level, text = (found[0].hashes, found[0].text) if found else (0, raw.lstrip("\\"))
            text = " ".join(text.split())
            key = (level > 0, text)
            li = _Line(number, text, level, doc.page_of(offset), seen.get(key, 0))
            seen[key] = seen.get(key, 0) + 1
            offset += len(raw) + 1
            self.lines.append(li)
            if text and li.page is not None:
                self.pages.setdefault(li.page, []).append(li)
                if level:
                    self.headings.setdefault((text, li.page), li)

    def heading(self, text: str, page: int | None) -> _Line | None:
        """The heading line with this text on this page (the first, when several)."""
        return self.headings.get((" ".join(text.split()), page)) if text else None


@dataclass(frozen=True)
class Question:
    """One entry as asked: `shown` are the line numbers it may answer with."""

    index: int  # in doc.contents
    entry: ContentsEntry
    anchored: int | None  # the line the converter anchored it to (None: not found)
    shown: tuple[int, ...]
    text: str  # the entry's part of the prompt


@dataclass(frozen=True)
class SkeletonFix:
    """A proposed change for contents entry `entry`: `kind` is mark (a body line becomes its
    heading), set_level (a heading line becomes its heading, at the entry's level), merge
    (the anchored line is not its heading: back to body text) or move (merge, then the right
    line becomes its heading). `changes` pair each TreeEdit with the line it addresses."""

    entry: int
    title: str
    kind: str
    label: str
    changes: tuple[tuple[int, TreeEdit], ...]


@dataclass(frozen=True)
class SkeletonCheck:
    """What a check gives back: the proposed fixes (by entry), notes on what was not asked
    or was ignored, and the tokens it cost."""

    fixes: list[SkeletonFix]
    notes: list[str]
    usage: Usage


def _cut(text: str) -> str:
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def _show(li: _Line) -> str:
    return f"{li.number}: {f'[H{li.level}] ' if li.level else ''}{_cut(li.text)}"


def _pages(contents: Sequence[ContentsEntry], i: int, n_pages: int) -> tuple[int, int] | None:
    """The pages an entry not found is looked for on: its page +-1, else between the pages
    of the entries around it (at most MAX_SPAN pages)."""
    entry = contents[i]
    if entry.page is not None:
        return max(1, entry.page - SLACK), min(n_pages, entry.page + SLACK)

    def page_of(e: ContentsEntry) -> int | None:
        return e.heading_page if e.heading_page is not None else e.page

    before = next((p for e in reversed(contents[:i]) if (p := page_of(e)) is not None), None)
    after = next((p for e in contents[i + 1 :] if (p := page_of(e)) is not None), None)
    if before is not None:
        last = after if after is not None else n_pages
        return before, min(n_pages, last, before + MAX_SPAN - 1)
    if after is not None:
        return max(1, after - MAX_SPAN + 1), min(n_pages, after)
    return None


def _page_lines(lines: list[_Line]) -> list[_Line]:
    """A page's lines up to PAGE_CHARS: its top, where a section most often opens."""
    kept, used = [], 0
    for li in lines:
        used += len(_cut(li.text)) + 8
        if used > PAGE_CHARS and kept:
            break
        kept.append(li)
    return kept


def skeleton_questions(
    doc: ConvertedDocument, lines: DocLines, max_entries: int = MAX_ENTRIES
) -> tuple[list[Question], list[str]]:
    """One question per contents entry (those not found first), at most `max_entries`."""
    notes: list[str] = []
    n_pages = len(doc.page_starts)
    questions: list[Question] = []
    for i, entry in enumerate(doc.contents):
        head = f"Entry {i}: {entry.title!r} (level {entry.level}"
        head += f", printed page {entry.printed}" if entry.printed is not None else ""
        at = lines.heading(entry.heading, entry.heading_page)
        shown: list[_Line] = []
        rows: list[str] = []
        if at is not None:
            own = lines.pages.get(at.page or 0) or [at]  # a heading line has a page
            k = own.index(at)  # its own page only: not the contents page before the body
            shown = own[max(0, k - CONTEXT_LINES) : k + CONTEXT_LINES + 1]
            rows = [_show(li) for li in shown]
            head += f", PDF page {at.page}), anchored to line {at.number}"
        else:
            span = _pages(doc.contents, i, n_pages)
            if span is None or n_pages == 0:
                notes.append(f"entry {i} ({entry.title[:40]!r}): no page to look on; not asked")
                continue
            head += f", expected on PDF page(s) {span[0]}-{span[1]}), not found"
            for page in range(span[0], span[1] + 1):
                on_page = lines.pages.get(page, [])
                kept = _page_lines(on_page)
                shown += kept
                rows += [_show(li) for li in kept]
                if len(kept) < len(on_page):
                    rows.append(f"(page {page}: {len(on_page) - len(kept)} more lines not shown)")
        text = "\n".join([head, *rows])
        numbers = tuple(li.number for li in shown)
        questions.append(Question(i, entry, at.number if at else None, numbers, text))
    questions.sort(key=lambda q: (q.anchored is not None, q.index))  # the entries not found first
    if len(questions) > max_entries:
        left = questions[max_entries:]
        notes.append(
            f"{len(left)} contents entries not checked (at most {max_entries} per check): "
            + ", ".join(str(q.index) for q in left[:10])
            + (" ..." if len(left) > 10 else "")
        )
        questions = questions[:max_entries]
    return sorted(questions, key=lambda q: q.index), notes


def batches(questions: Sequence[Question]) -> list[list[Question]]:
    """Questions in calls of at most BATCH_ENTRIES entries and BATCH_CHARS characters."""
    out: list[list[Question]] = []
    size = 0
    for q in questions:
        if not out or len(out[-1]) >= BATCH_ENTRIES or size + len(q.text) > BATCH_CHARS:
            out.append([])
            size = 0
        out[-1].append(q)
        size += len(q.text)
    return out


def build_skeleton_prompt(questions: Sequence[Question]) -> str:
    """The entries part of one call (PROMPT, the instructions, goes first as the prefix)."""
    return "\n\n".join(q.text for q in questions)


def _edit_as_heading(li: _Line, level: int) -> TreeEdit | None:
    """The edit that makes line `li` a heading at `level` (None: it already is one)."""
    if not li.level:
        return TreeEdit("mark", li.text, li.occurrence, level=level)
    if li.level != level:
        return TreeEdit("set_level", li.text, li.occurrence, level=level)
    return None


def _fix(q: Question, lines: DocLines, answer: int | None) -> SkeletonFix | None:
    """The fix an answer asks for (None: the converter had it right)."""
    e, level = q.entry, q.entry.level
    title = _cut(e.title)
    if q.anchored is not None:
        old = lines.lines[q.anchored]
        if answer == q.anchored:
            return None
        merge = (q.anchored, TreeEdit("merge", old.text, old.occurrence))
        was = f"{_cut(old.text)!r} (p. {old.page})"
        if answer is None:
            label = f"{title!r}: {was}, where it was anchored, is not its heading; back to text"
            return SkeletonFix(q.index, e.title, "merge", label, (merge,))
        new = lines.lines[answer]
        edit = _edit_as_heading(new, level)
        changes = (merge,) if edit is None else (merge, (answer, edit))
        label = f"{title!r}: its heading is {_cut(new.text)!r} (p. {new.page}), not {was}"
        return SkeletonFix(q.index, e.title, "move", label, changes)
    if answer is None:
        return None
    new = lines.lines[answer]
    edit = _edit_as_heading(new, level)
    if edit is None:
        return None
    what = "body line" if edit.op == "mark" else f"heading (level {new.level})"
    label = f"{title!r}: the {what} {_cut(new.text)!r} (p. {new.page}) becomes its heading"
    label += f" at level {level}"
    return SkeletonFix(q.index, e.title, edit.op, label, ((answer, edit),))


def parse_skeleton_response(
    text: str, questions: Sequence[Question], lines: DocLines, taken: set[int] | None = None
) -> tuple[list[SkeletonFix], list[str]]:
    """The valid fixes in one reply, and a note for each answer ignored.

    An answer counts only for an entry of this call, with a line number shown for that entry
    (or null), and a line no other entry holds; a reply without a JSON object is a note
    (its entries are not checked), never an error. `taken`: lines other entries hold
    (anchors and earlier answers), updated with this reply's.
    """
    taken = set() if taken is None else taken
    obj = first_json_object(text, accept=lambda o: isinstance(o, dict))
    if obj is None:
        shown = ", ".join(str(q.index) for q in questions)
        return [], [f"entries {shown}: the reply held no JSON object ({text[:80]!r}); not checked"]
    asked = {q.index: q for q in questions}
    fixes: list[SkeletonFix] = []
    notes: list[str] = []
    for key, answer in obj.items():
        try:
            q = asked.get(int(str(key).strip()))
        except ValueError:
            q = None
        if q is None:
            notes.append(f"answer for {str(key)[:20]!r} ignored: not an entry of this call")
            continue
        # Only a JSON integer is a line number (true is not 1, 2.0 is not 2).
        if answer is not None and (not isinstance(answer, int) or isinstance(answer, bool)):
            notes.append(f"entry {q.index}: {str(answer)[:20]!r} is not a line number; ignored")
            continue
        if answer is not None and answer not in q.shown:
            notes.append(f"entry {q.index}: line {answer} was not shown for it; ignored")
            continue
        if answer is not None and answer != q.anchored and answer in taken:
            notes.append(f"entry {q.index}: line {answer} is another entry's heading; ignored")
            continue
        fix = _fix(q, lines, answer)
        if fix is not None:
            fixes.append(fix)
            taken.update(line for line, _ in fix.changes if line != q.anchored)
    return sorted(fixes, key=lambda f: f.entry), notes


def check_contents_skeleton(
    client: LLMClient, model: str, doc: ConvertedDocument, max_entries: int = MAX_ENTRIES
) -> SkeletonCheck:
    """Ask the LLM about the document's contents entries, in bounded calls; the user accepts
    or rejects each proposed fix (`skeleton_edits` turns the accepted ones into edits).

    Raises:
        LLMError: from the client (a reply without JSON is a note, not an error).
    """
    if max_entries < 1:
        raise ValueError(f"max_entries must be >= 1, but got {max_entries}")
    lines = DocLines(doc)
    questions, notes = skeleton_questions(doc, lines, max_entries)
    # Every anchored heading is some entry's, asked about or not.
    anchored = (lines.heading(e.heading, e.heading_page) for e in doc.contents)
    taken = {li.number for li in anchored if li is not None}
    fixes: list[SkeletonFix] = []
    usage = Usage()
    for batch in batches(questions):
        prompt = build_skeleton_prompt(batch)
        reply, used = client.complete(PROMPT, prompt, model, 64 + 16 * len(batch), json_mode=True)
        usage = usage + used
        found, problems = parse_skeleton_response(reply, batch, lines, taken)
        fixes.extend(found)
        notes.extend(problems)
    return SkeletonCheck(sorted(fixes, key=lambda f: f.entry), notes, usage)


def skeleton_edits(fixes: Sequence[SkeletonFix]) -> list[TreeEdit]:
    """The accepted fixes' edits, the last line first: an edit changes only its own line, so
    the occurrences counted before it stay right while the edits after it are applied."""
    changes = sorted((c for f in fixes for c in f.changes), key=lambda c: -c[0])
    return [edit for _, edit in changes]
