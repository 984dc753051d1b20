"""Conversion benchmarks: heading recovery with known truth (Markdown rendered to HTML, DOCX
and PDF, converted back) and conversion speed in pages per second."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ != "benchmarks":  # run as `python benchmarks/<script>.py`: the repo on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import EVAL
from treerag_core.ingest.convert import convert_bytes
from treerag_core.ingest.parsing import scan_headings

MB = 1024 * 1024
# Small, varied dev documents: papers, Chinese laws, handbook pages (names are stable files).
DEFAULT_DOCS = {
    "qasper": ("1602.07563.md", "1603.09381.md", "1611.01116.md"),
    "lecoqa_laws": ("产品质量法(2018-12-29).md", "保险法(2015-04-24).md"),
    "gitlab_handbook": ("about__editing-handbook___index.md", "about__handbook-usage.md",
                        "acquisitions___index.md"),
}  # fmt: skip
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
_INLINE = re.compile(r"[*_`]|\[([^\]]*)\]\([^)]*\)")
CSS = (
    "body{font-family:'Noto Sans','Noto Sans CJK SC',sans-serif;font-size:11pt;margin:2cm}"
    "table{border-collapse:collapse}td,th{padding:2px 8px}"
)


def norm(text: str) -> str:
    """Heading text compared without inline markup, case or spacing."""
    text = _INLINE.sub(lambda m: m.group(1) or "", text)
    return " ".join(text.split()).casefold()


def to_html(markdown: str, title: str) -> str:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>"
    )


def to_docx(markdown: str, styled: bool = True) -> bytes:
    """Markdown to DOCX with python-docx's real heading styles (Heading 1..6), or with
    `styled=False` as plain bold paragraphs sized by level (what many real files look like)."""
    import io

    import docx
    from markdown_it import MarkdownIt

    document = docx.Document()
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    heading: int | None = None
    row: list[str] | None = None
    rows: list[list[str]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            heading = int(tok.tag[1])
        elif tok.type == "heading_close":
            heading = None
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
        elif tok.type == "table_close" and rows:
            width = max(len(r) for r in rows)
            table = document.add_table(rows=len(rows), cols=width)
            for r, cells in enumerate(rows):
                for c, value in enumerate(cells):
                    table.cell(r, c).text = value
            rows = []
        elif tok.type == "inline":
            text = _INLINE.sub(lambda m: m.group(1) or "", tok.content)
            if row is not None:
                row.append(text)
            elif heading is not None and styled:
                document.add_heading(text, level=heading)
            elif heading is not None:
                from docx.shared import Pt

                run = document.add_paragraph().add_run(text)
                run.bold = True
                run.font.size = Pt(20 - 2 * heading)
            elif tokens[i - 1].type == "paragraph_open":
                document.add_paragraph(text)
        elif tok.type in ("fence", "code_block"):
            document.add_paragraph(tok.content)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def to_text(markdown: str) -> str:
    """The Markdown with its `#` marks removed: headings become bare lines of plain text."""
    return re.sub(r"(?m)^ {0,3}#{1,6}[ \t]+", "", markdown)


def to_pdf(html_path: Path, pdf_path: Path, chromium: str) -> None:
    subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--print-to-pdf={pdf_path}", html_path.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )


def score(truth: list[tuple[int, str]], got: list[tuple[int, str]]) -> dict[str, int]:
    """Matched headings by text (multiset), and those matched with the same level too."""
    pool: dict[str, list[int]] = {}
    for level, text in got:
        pool.setdefault(norm(text), []).append(level)
    matched = leveled = 0
    for level, text in truth:
        levels = pool.get(norm(text))
        if levels:
            matched += 1
            if level in levels:
                levels.remove(level)
                leveled += 1
            else:
                levels.pop(0)
    return {"truth": len(truth), "found": len(got), "matched": matched, "leveled": leveled}


def _pr(c: dict[str, int], key: str) -> tuple[float, float]:
    p = c[key] / c["found"] if c["found"] else 0.0
    r = c[key] / c["truth"] if c["truth"] else 0.0
    return p, r


def headings(data: Path, work: Path, chromium: str | None) -> dict[str, Any]:
    totals: dict[str, dict[str, int]] = {}
    per_doc = []
    for dataset, names in DEFAULT_DOCS.items():
        for name in names:
            path = data / dataset / "docs" / name
            markdown = path.read_text(encoding="utf-8")
            truth = [(h.hashes, h.text) for h in scan_headings(markdown)]
            html = to_html(markdown, path.stem)
            html_path = work / f"{dataset}-{len(per_doc)}.html"
            html_path.write_text(html, encoding="utf-8")
            files = {
                "html": html.encode(),
                "docx": to_docx(markdown),
                "docx, no heading styles": to_docx(markdown, styled=False),
                "txt (headings as bare lines)": to_text(markdown).encode(),
            }
            if chromium:
                pdf_path = html_path.with_suffix(".pdf")
                to_pdf(html_path, pdf_path, chromium)
                files["pdf"] = pdf_path.read_bytes()
            for fmt, data_bytes in files.items():
                suffix = fmt.split(",")[0].split(" ")[0]
                doc = convert_bytes(f"{path.stem}.{suffix}", data_bytes, 50 * MB)
                got = [(h.level, h.text) for h in doc.headings]
                c = score(truth, got)
                per_doc.append({"doc": f"{dataset}/{name}", "format": fmt, **c})
                t = totals.setdefault(fmt, dict.fromkeys(c, 0))
                for k, v in c.items():
                    t[k] += v
    table = {}
    for fmt, c in totals.items():
        p, r = _pr(c, "matched")
        lp, lr = _pr(c, "leveled")
        table[fmt] = {**c, "precision": p, "recall": r, "level_precision": lp, "level_recall": lr}
    return {"formats": table, "documents": per_doc}


def speed(folder: Path, repeat: int = 1) -> dict[str, Any]:
    rows = []
    pages = seconds = 0.0
    for path in sorted(folder.glob("*.pdf")):
        data = path.read_bytes()
        best = None
        for _ in range(repeat):
            started = time.perf_counter()
            doc = convert_bytes(path.name, data, 100 * MB)
            took = time.perf_counter() - started
            best = took if best is None else min(best, took)
        rows.append(
            {
                "doc": path.name,
                "pages": doc.n_pages,
                "seconds": round(best, 3),
                "pages_per_s": round(doc.n_pages / best, 1),
                "headings": len(doc.headings),
                "notes": list(doc.notes),
            }
        )
        pages += doc.n_pages
        seconds += best
    return {"documents": rows, "pages": pages, "seconds": seconds, "pages_per_s": pages / seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(EVAL))
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--skip-pdf", action="store_true", help="no Chromium: HTML and DOCX only")
    args = parser.parse_args()
    data = Path(args.data)
    chromium = (
        None if args.skip_pdf else shutil.which("chromium") or shutil.which("chromium-browser")
    )
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out["headings"] = headings(data, Path(tmp), chromium)
    print("Heading recovery (Markdown rendered, converted back):")
    print("| format | truth | found | precision | recall | level precision | level recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for fmt, r in out["headings"]["formats"].items():
        print(
            f"| {fmt} | {r['truth']} | {r['found']} | {r['precision']:.3f} | {r['recall']:.3f} "
            f"| {r['level_precision']:.3f} | {r['level_recall']:.3f} |"
        )
    out["speed"] = speed(data / "financebench_pdf" / "pdfs")
    s = out["speed"]
    print(f"\nPDF conversion: {s['pages']:.0f} pages in {s['seconds']:.1f} s = "
          f"{s['pages_per_s']:.1f} pages/s")  # fmt: skip
    for row in s["documents"]:
        print(f"  {row['doc']}: {row['pages']} pages, {row['pages_per_s']} pages/s, "
              f"{row['headings']} headings")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
