"""Tree quality against the author's outline (issue 24): outline recall, heading precision,
nesting agreement and unmatched headings on pages 1-2, per document and mean.

Two sets: the 12 dev FinanceBench filings against `financebench_pdf/outlines.jsonl` (gold
outlines written by reading the pages), and dev Markdown printed to PDF by headless Chromium
with `--generate-pdf-document-outline` (the bookmarks Chromium writes, one per h1-h6, are the
known truth). A PDF's own outline is removed from a copy before converting it, so the figures
measure inference from the page text; `--keep-outline` measures the outline-bearing file as
an upload would arrive.

The matching rule is the one issue 24 measured with, so figures compare:
- an outline item is *found* when an inferred heading on its page +-1 has the same words
  (word-set Jaccard >= 0.75 after NFKC and lower-casing, or one title's words all contained in
  the other's, the contained title being >= 6 characters);
- *precision* = inferred headings that match some outline item (page +-1) / inferred headings
  (a lower bound on filings: the gold leaves out finer headings, see OUTLINES.md);
- *nesting* = over outline (parent, child) pairs whose both ends are found, the share where
  the child's inferred level is deeper than the parent's;
- *unmatched p1-2* = inferred headings on pages 1-2 that match no outline item.
Two readings of "inferred headings" are printed: every heading the converter marks (issue
24's figures), and the headings the tree keeps as sections, level <= `--max-depth` (the
index's default 3; deeper headings stay inside their ancestor's text).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL
from benchmarks.bench_convert import CHROMIUM_FLAGS, to_html
from treerag_core.ingest.convert import convert_bytes

MB = 1024 * 1024
JACCARD = 0.75
MIN_CONTAINED_CHARS = 6
PAGE_SLACK = 1
# Dev Markdown printed by Chromium: papers, handbook pages and two laws (stable names).
CHROMIUM_DOCS = {
    "qasper": ("1602.07563.md", "1603.09381.md", "1611.01116.md"),
    "gitlab_handbook": ("about__handbook-usage.md", "acquisitions___index.md"),
    "lecoqa_laws": ("产品质量法(2018-12-29).md", "旅游法(2018-10-26).md"),
}


@dataclass(frozen=True)
class Item:
    """An outline item or an inferred heading: its title, 1-based page and level."""

    title: str
    page: int
    level: int


def norm(title: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", title).lower().split())


_WORD = re.compile(r"\w+")


def words(title: str) -> frozenset[str]:
    return frozenset(_WORD.findall(norm(title)))


def same_words(a: str, b: str) -> bool:
    """Issue 24's title match: Jaccard >= 0.75, or one's words inside the other's (>= 6 chars)."""
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return False
    if len(wa & wb) / len(wa | wb) >= JACCARD:
        return True
    if wa <= wb and len(norm(a)) >= MIN_CONTAINED_CHARS:
        return True
    return wb <= wa and len(norm(b)) >= MIN_CONTAINED_CHARS


def _matches(gold: Item, got: Item) -> bool:
    return abs(gold.page - got.page) <= PAGE_SLACK and same_words(gold.title, got.title)


def _parents(outline: list[Item]) -> list[int | None]:
    """Each item's parent: the nearest earlier item with a smaller level."""
    parents: list[int | None] = []
    for i, item in enumerate(outline):
        parent = next((j for j in range(i - 1, -1, -1) if outline[j].level < item.level), None)
        parents.append(parent)
    return parents


def score(outline: list[Item], inferred: list[Item]) -> dict[str, Any]:
    """Recall, precision, nesting and unmatched-on-pages-1-2 of one document."""
    match_of: list[int | None] = []  # each outline item's inferred heading (nearest page)
    for gold in outline:
        hits = [k for k, got in enumerate(inferred) if _matches(gold, got)]
        hits.sort(key=lambda k: (abs(inferred[k].page - gold.page), k))
        match_of.append(hits[0] if hits else None)
    matched = [any(_matches(g, got) for g in outline) for got in inferred]
    pairs = agree = 0
    for child, parent in enumerate(_parents(outline)):
        if parent is None or match_of[child] is None or match_of[parent] is None:
            continue
        pairs += 1
        agree += inferred[match_of[child]].level > inferred[match_of[parent]].level
    found = sum(m is not None for m in match_of)
    return {
        "outline_items": len(outline),
        "inferred": len(inferred),
        "found": found,
        "recall": found / len(outline) if outline else None,
        "precision": sum(matched) / len(inferred) if inferred else None,
        "nesting_pairs": pairs,
        "nesting": agree / pairs if pairs else None,
        "unmatched_p1_2": sum(
            1 for got, m in zip(inferred, matched, strict=True) if got.page <= 2 and not m
        ),
        "missed": [o.title for o, m in zip(outline, match_of, strict=True) if m is None],
        "unmatched_titles": [g.title for g, m in zip(inferred, matched, strict=True) if not m],
    }


def strip_outline(data: bytes) -> bytes:
    """A copy of the PDF without its outline (bookmarks)."""
    import pypdf
    from pypdf.generic import NameObject

    reader = pypdf.PdfReader(io.BytesIO(data))
    writer = pypdf.PdfWriter(clone_from=reader)
    root = writer._root_object
    if NameObject("/Outlines") in root:
        del root[NameObject("/Outlines")]
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_outline(data: bytes) -> list[Item]:
    """A PDF's own outline as items (pages 1-based, levels 1-based)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        items = []
        for bm in pdf.get_toc():
            dest = bm.get_dest()
            page = dest.get_index() if dest is not None else None
            if page is not None:
                items.append(Item(bm.get_title(), page + 1, bm.level + 1))
        return items
    finally:
        pdf.close()


def inferred_headings(name: str, data: bytes) -> tuple[list[Item], list[str]]:
    doc = convert_bytes(name, data, 200 * MB)
    return [Item(h.text, h.page or 1, h.level) for h in doc.headings], list(doc.notes)


def both(doc: str, outline: list[Item], inferred: list[Item], max_depth: int, notes) -> dict:
    """Scores against every inferred heading and against those the tree keeps."""
    kept = [h for h in inferred if h.level <= max_depth]
    scores = {"all": score(outline, inferred), "tree": score(outline, kept)}
    return {"doc": doc, **scores, "notes": notes}


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "recall": _mean(rows, "recall"),
        "precision": _mean(rows, "precision"),
        "nesting": _mean(rows, "nesting"),
        "unmatched_p1_2": sum(r["unmatched_p1_2"] for r in rows),
        "max_unmatched_p1_2": max((r["unmatched_p1_2"] for r in rows), default=0),
    }


def filings(folder: Path, max_depth: int, keep_outline: bool, only: str | None):
    rows = []
    for line in (folder / "outlines.jsonl").read_text(encoding="utf-8").splitlines():
        gold = json.loads(line)
        if only and only not in gold["doc"]:
            continue
        data = (folder / "pdfs" / gold["doc"]).read_bytes()
        if not keep_outline:
            data = strip_outline(data)
        outline = [Item(i["title"], i["page"], i["level"]) for i in gold["items"]]
        inferred, notes = inferred_headings(gold["doc"], data)
        rows.append(both(gold["doc"], outline, inferred, max_depth, notes))
    return rows


def chromium_docs(data_root: Path, work: Path, chromium: str, max_depth: int, keep: bool):
    import subprocess

    rows = []
    for dataset, names in CHROMIUM_DOCS.items():
        for name in names:
            md = (data_root / dataset / "docs" / name).read_text(encoding="utf-8")
            html_path = work / f"{dataset}-{len(rows)}.html"
            pdf_path = html_path.with_suffix(".pdf")
            html_path.write_text(to_html(md, name), encoding="utf-8")
            subprocess.run(
                [chromium, *CHROMIUM_FLAGS, "--generate-pdf-document-outline",
                 f"--print-to-pdf={pdf_path}", html_path.as_uri()],
                check=True, capture_output=True, timeout=180,
            )  # fmt: skip
            data = pdf_path.read_bytes()
            # The Markdown's `#` title is a bookmark of its own: one level more than the tree's.
            outline = [o for o in pdf_outline(data) if o.level <= max_depth + 1]
            if not keep:
                data = strip_outline(data)
            inferred, notes = inferred_headings(name + ".pdf", data)
            rows.append(both(f"{dataset}/{name}", outline, inferred, max_depth + 1, notes))
    return rows


def _summaries(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"summary_{k}": summary([r[k] for r in rows]) for k in ("all", "tree")}


_ARTICLE_PARAGRAPH = re.compile(r"第[零〇一二三四五六七八九十百千万两\d]+条")


def laws(folder: Path, max_depth: int) -> list[dict[str, Any]]:
    """Per law: paragraphs that open with 第X条 (counted here, independently of the parser)
    against the article leaves of its tree; they must be equal."""
    from treerag_core.ingest.parsing import parse_document

    rows = []
    for doc in sorted((folder / "docs").glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        paragraphs = [p.strip() for p in re.split(r"\n[ \t]*\n", text)]
        opened = sum(1 for p in paragraphs if _ARTICLE_PARAGRAPH.match(p))
        nodes = parse_document(text, doc.name, doc.name, max_depth=max_depth, article_leaves=True)
        leaves = [n for n in nodes if not n.children and not n.synthetic]
        found = sum(1 for n in leaves if _ARTICLE_PARAGRAPH.match(n.heading))
        rows.append({"doc": doc.name, "paragraphs": opened, "article_leaves": found,
                     "leaves": len(leaves)})  # fmt: skip
    return rows


def print_laws(rows: list[dict[str, Any]]) -> None:
    print("\n## Laws: 第X条 paragraphs vs article leaves")
    print("| law | 第X条 paragraphs | article leaves | leaves | equal |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        same = "yes" if r["paragraphs"] == r["article_leaves"] else "**no**"
        counts = f"{r['paragraphs']} | {r['article_leaves']} | {r['leaves']}"
        print(f"| {r['doc']} | {counts} | {same} |")
    equal = sum(r["paragraphs"] == r["article_leaves"] for r in rows)
    print(f"| **{equal} of {len(rows)} equal** | {sum(r['paragraphs'] for r in rows)} | "
          f"{sum(r['article_leaves'] for r in rows)} | | |")  # fmt: skip


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    for reading in ("all", "tree"):
        scored = [{"doc": r["doc"], **r[reading]} for r in rows]
        _print_reading(f"{title}: {reading} headings", scored)


def _print_reading(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n## {title}")
    print("| doc | outline items | inferred | recall | precision | nesting | unmatched p1-2 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['doc']} | {r['outline_items']} | {r['inferred']} | {_fmt(r['recall'])} | "
            f"{_fmt(r['precision'])} | {_fmt(r['nesting'])} | {r['unmatched_p1_2']} |"
        )
    s = summary(rows)
    print(
        f"| **mean** | | | **{_fmt(s['recall'])}** | **{_fmt(s['precision'])}** | "
        f"**{_fmt(s['nesting'])}** | **{s['unmatched_p1_2']}** (max {s['max_unmatched_p1_2']}) |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=EVAL)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--keep-outline", action="store_true", help="convert with the outline")
    parser.add_argument("--skip-chromium", action="store_true")
    parser.add_argument("--laws-only", action="store_true", help="only the laws' article count")
    parser.add_argument("--only", help="filings whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="list misses and extras")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    out: dict[str, Any] = {"max_depth": args.max_depth, "keep_outline": args.keep_outline}
    out["laws"] = laws(args.data / "lecoqa_laws", args.max_depth)
    print_laws(out["laws"])
    if args.laws_only:
        return 0
    rows = filings(args.data / "financebench_pdf", args.max_depth, args.keep_outline, args.only)
    out["filings"] = {"rows": rows, **_summaries(rows)}
    print_table("FinanceBench dev filings vs outlines.jsonl", rows)
    chromium = None if args.skip_chromium else shutil.which("chromium")
    if chromium and not args.only:
        with tempfile.TemporaryDirectory() as tmp:
            crows = chromium_docs(args.data, Path(tmp), chromium, args.max_depth, args.keep_outline)
        out["chromium"] = {"rows": crows, **_summaries(crows)}
        print_table("Dev Markdown printed by Chromium vs its bookmarks", crows)
    if args.verbose:
        for r in rows + out.get("chromium", {}).get("rows", []):
            a = r["all"]
            print(f"\n### {r['doc']}\nmissed: {a['missed']}\nextra: {a['unmatched_titles']}")
    if args.json:
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
