"""User corrections to an inferred heading tree, applied to converted text and kept on disk."""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from treerag_core.base.artifacts import present, read_json, typed_row
from treerag_core.base.atomic import write_atomic
from treerag_core.base.errors import IndexFormatError, InputDocumentError
from treerag_core.ingest.convert.base import ConvertedDocument, InferredHeading
from treerag_core.ingest.parsing import scan_headings

OPS = ("promote", "demote", "set_level", "rename", "merge", "mark")
EDITS_FILE = "tree_edits.json"
EDITS_VERSION = 1


@dataclass(frozen=True)
class TreeEdit:
    """One correction, addressed by the line's text (and which occurrence), not by offset,
    so it survives a re-conversion that moves text around.

    promote / demote: one level up / down; set_level: to `level`; rename: to `value`;
    merge: the heading becomes a body line (its section joins the one before);
    mark: the body line `line` becomes a heading of `level`.
    """

    op: str
    line: str
    occurrence: int = 0
    level: int = 0
    value: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}, but got {self.op!r}")
        if self.op in ("set_level", "mark") and not 1 <= self.level <= 6:
            raise ValueError(f"{self.op} needs a level in 1..6, but got {self.level}")
        if self.op == "rename" and not self.value.strip():
            raise ValueError("rename needs a new heading text")
        if self.occurrence < 0:
            raise ValueError(f"occurrence must be >= 0, but got {self.occurrence}")


def no_change(level: int, text: str, edit: TreeEdit) -> str:
    """Why `edit` would leave the heading (`level`, `text`) as it is, or "" when it changes it:
    the review step does not record an edit that changes nothing."""
    if edit.op == "promote" and level <= 1:
        return "already at the top level"
    if edit.op == "demote" and level >= 6:
        return "already at the deepest level (6)"
    if edit.op == "set_level" and level == edit.level:
        return f"already at level {level}"
    if edit.op == "rename" and " ".join(edit.value.split()) == " ".join(text.split()):
        return "already called that"
    return ""


def _heading_line(line: str) -> tuple[int, str] | None:
    found = scan_headings(line + "\n")
    return (found[0].hashes, found[0].text) if found else None


def apply_edits(
    doc: ConvertedDocument, edits: Sequence[TreeEdit]
) -> tuple[ConvertedDocument, list[str]]:
    """The document with `edits` applied in order, and one line per edit that did not apply.

    Only heading lines change (and a marked line gains blank lines around it), so every
    other character survives; page starts are moved with their lines.
    """
    lines = doc.text.split("\n")
    problems: list[str] = []
    inserted_before: set[int] = set()
    inserted_after: set[int] = set()
    for edit in edits:
        want = " ".join(edit.line.split())
        if edit.op == "mark":
            matches = [
                i for i, ln in enumerate(lines)
                if _heading_line(ln) is None and " ".join(ln.lstrip("\\").split()) == want
            ]  # fmt: skip
        else:
            matches = [
                i for i, ln in enumerate(lines)
                if (h := _heading_line(ln)) is not None and " ".join(h[1].split()) == want
            ]  # fmt: skip
        if edit.occurrence >= len(matches):
            kind = "line" if edit.op == "mark" else "heading"
            problems.append(f"{edit.op}: no {kind} {edit.line!r} (occurrence {edit.occurrence})")
            continue
        i = matches[edit.occurrence]
        if edit.op == "mark":
            lines[i] = f"{'#' * edit.level} {want}"
            inserted_before.add(i)
            inserted_after.add(i)
            continue
        level, text = _heading_line(lines[i])  # type: ignore[misc]
        if edit.op == "promote":
            level = max(1, level - 1)
        elif edit.op == "demote":
            level = min(6, level + 1)
        elif edit.op == "set_level":
            level = edit.level
        elif edit.op == "rename":
            text = " ".join(edit.value.split())
        elif edit.op == "merge":
            lines[i] = text if _heading_line(text) is None else "\\" + text
            continue
        lines[i] = f"{'#' * level} {text}"
    return _rebuild(doc, lines, inserted_before, inserted_after), problems


def _rebuild(
    doc: ConvertedDocument, lines: list[str], before: set[int], after: set[int]
) -> ConvertedDocument:
    old_starts, new_starts, out = [], [], []
    old_pos = new_pos = 0
    old_lines = doc.text.split("\n")
    for i, line in enumerate(lines):
        if i in before and i > 0 and out and out[-1].strip():
            out.append("")
            new_pos += 1
        old_starts.append(old_pos)
        new_starts.append(new_pos)
        out.append(line)
        old_pos += len(old_lines[i]) + 1
        new_pos += len(line) + 1
        if i in after and i + 1 < len(lines) and lines[i + 1].strip():
            out.append("")
            new_pos += 1
    text = "\n".join(out)

    def moved(offset: int) -> int:
        k = max(0, bisect.bisect_right(old_starts, offset) - 1)
        return min(new_starts[k] + (offset - old_starts[k]), max(len(text) - 1, 0))

    signals = {h.text: h.signals for h in doc.headings}
    headings = tuple(
        InferredHeading(
            h.hashes,
            h.text,
            h.start,
            h.end,
            None,
            signals.get(h.text, ("edited",)),
        )
        for h in scan_headings(text)
    )
    page_starts = tuple(moved(s) for s in doc.page_starts)
    if page_starts:
        headings = tuple(
            replace(h, page=bisect.bisect_right(page_starts, h.start) or 1) for h in headings
        )
    return replace(doc, text=text, page_starts=page_starts, headings=headings)


# ---- the sidecar: edits per document content hash -------------------------------------------


def load_edits(folder: str | Path) -> dict[str, tuple[TreeEdit, ...]]:
    """{source sha256: edits} from `folder/tree_edits.json` ({} when there is none).

    Raises:
        InputDocumentError: the file exists but is not a valid edits file.
    """
    return {sha: edits for sha, (_, edits) in load_edit_entries(folder).items()}


def load_edit_entries(folder: str | Path) -> dict[str, tuple[str, tuple[TreeEdit, ...]]]:
    """{source sha256: (the file's name, its edits)} from `folder/tree_edits.json`.

    Raises:
        InputDocumentError: the file exists but is not a valid edits file.
    """
    path = Path(folder) / EDITS_FILE
    if not present(path):
        return {}
    try:
        data = read_json(path, dict)  # bounded: the file may sit in an index from anyone
        return {
            sha: (
                str(entry.get("name", "")),
                tuple(typed_row(TreeEdit, e, f"{path}: {sha}") for e in entry["edits"]),
            )
            for sha, entry in data["documents"].items()
        }
    except IndexFormatError as exc:
        raise InputDocumentError(f"{path}: not a valid tree edits file ({exc})") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputDocumentError(f"{path}: not a valid tree edits file ({exc!r})") from exc


@dataclass(frozen=True)
class EditOffer:
    """Corrections stored for a file of the same name whose bytes changed (re-saved, edited):
    not applied by the hash, so offered again by heading text. `applies` are those that still
    find their line in the new text (in order), `fails` says why each of the others does not.
    """

    name: str
    old_sha256: str
    applies: tuple[TreeEdit, ...]
    fails: tuple[str, ...]

    def note(self) -> str:
        total = len(self.applies) + len(self.fails)
        text = (
            f"{self.name}: {total} stored tree correction(s) were made on other bytes of this "
            f"file name (it changed since) and are not applied by themselves; "
            f"{len(self.applies)} still apply by heading text, {len(self.fails)} do not"
        )
        if self.fails:
            text += (
                " (" + "; ".join(self.fails[:3]) + ("; ..." if len(self.fails) > 3 else "") + ")"
            )
        return text


def offer_for(
    entries: Mapping[str, tuple[str, Sequence[TreeEdit]]], doc: ConvertedDocument, sha256: str
) -> EditOffer | None:
    """The corrections stored under another hash for `doc.name`, tried on `doc` by heading
    text; None when the document has its own (or no other version has any)."""
    if sha256 in entries:
        return None
    older = [(sha, edits) for sha, (name, edits) in entries.items() if name == doc.name and edits]
    if not older:
        return None
    old_sha, edits = older[-1]  # the last saved: the newest corrections of that name
    applies: list[TreeEdit] = []
    fails: list[str] = []
    current = doc
    for edit in edits:  # one at a time, in order: each later edit sees the earlier ones
        changed, problems = apply_edits(current, [edit])
        if problems:
            fails.extend(problems)
        else:
            applies.append(edit)
            current = changed
    return EditOffer(doc.name, old_sha, tuple(applies), tuple(fails))


def save_edits(folder: str | Path, sha256: str, name: str, edits: Sequence[TreeEdit]) -> Path:
    """Store (or with no edits, remove) one document's edits; written atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / EDITS_FILE
    data: dict = {"version": EDITS_VERSION, "documents": {}}
    if present(path):
        load_edits(folder)  # a damaged file is refused with a clear error, never extended
        data = read_json(path, dict)
    if edits:
        data["documents"][sha256] = {"name": name, "edits": [asdict(e) for e in edits]}
    else:
        data["documents"].pop(sha256, None)
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2))
    return path


def edits_for(edits: Mapping[str, Sequence[TreeEdit]] | None, sha256: str) -> tuple[TreeEdit, ...]:
    return tuple((edits or {}).get(sha256, ()))
