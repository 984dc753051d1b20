"""The engine's imports point one way: base ← llm ← ingest ← index ← search ← answer ← records
← strategies ← pipeline (and the one index build) ← evaluation ← API ← CLI; no circle; no
Streamlit.

Every import counts, function-level ones too: an import deferred into a function to dodge a
circle is still the arrow the layout forbids.
"""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "treerag_core"
# Lower numbers are lower layers; a module may import its own layer or any lower one.
LAYERS = {
    "base": 0,
    "llm": 1,
    "ingest": 2,
    "index": 3,
    "search": 4,
    "answer": 5,
    "records": 6,
    "strategies": 7,
    "pipeline": 8,
    "compare": 8,
    "build": 8,
    "evaluation": 9,
    "api": 10,
    "cli": 11,
    "__init__": 11,
    "__main__": 12,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def core_modules() -> dict[str, Path]:
    return {module_name(p): p for p in CORE.rglob("*.py")}


def imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The treerag_core modules `path` imports (a name imported from a package counts as
    its module when it is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def layer_of(name: str) -> int:
    top = name.split(".")[1] if "." in name else "__init__"
    return LAYERS[top]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = core_modules()
    return {name: imported(path, name, modules) for name, path in modules.items()}


def test_every_top_level_module_has_a_layer(graph):
    unknown = sorted({n.split(".")[1] for n in graph if "." in n} - set(LAYERS))
    assert unknown == [], f"give these a layer in LAYERS: {unknown}"


def test_no_import_points_up_a_layer(graph):
    upward = sorted(
        f"{src} -> {dst}"
        for src, targets in graph.items()
        for dst in targets
        if layer_of(dst) > layer_of(src)
    )
    assert upward == []


def test_no_circle(graph):
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    # A package's __init__ that re-exports its own modules is not a circle of behaviour.
    real = [c for c in circles if not any(a.startswith(b + ".") for a, b in pairwise(c))]
    assert real == []


def test_the_engine_never_imports_streamlit():
    offenders = [
        str(p.relative_to(ROOT))
        for p in CORE.rglob("*.py")
        if "streamlit" in {a.split(".")[0] for a in _top_imports(p)}
    ]
    assert offenders == []


def _top_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _front_end_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *(ROOT / "pages").glob("*.py")]


def _reaches_past_the_api(module: str) -> bool:
    """Whether a front end's import of `module` bypasses the API: allowed are the package
    (`from treerag_core import ...`), the base layer (types, settings, errors, text rules) and
    a strategy family's own types module."""
    if module == "treerag_core" or module.startswith("treerag_core.base."):
        return False
    parts = module.split(".")
    family_types = len(parts) == 4 and parts[1] == "strategies" and parts[3] == "types"
    return module.startswith("treerag_core.") and not family_types


def test_front_ends_import_the_engine_through_the_api():
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {module}"
        for path in _front_end_files()
        for module in _top_imports(path)
        if _reaches_past_the_api(module)
    )
    assert offenders == [], "export these through treerag_core/api.py"


def layer_diagram(graph: dict[str, set[str]]) -> str:
    """The import graph by package, as a Mermaid flowchart (arrows labelled with how many
    module imports they stand for); docs/architecture.md shows this picture."""

    def package(name: str) -> str:
        parts = name.split(".")
        if len(parts) == 1:
            return "__init__"
        if parts[1] == "strategies" and len(parts) > 3:
            return f"strategies/{parts[2]}"
        return parts[1]

    counts: dict[tuple[str, str], int] = {}
    for src, targets in graph.items():
        for dst in targets:
            a, b = package(src), package(dst)
            if a != b:
                counts[(a, b)] = counts.get((a, b), 0) + 1
    lines = ["```mermaid", "flowchart BT"]
    for (a, b), n in sorted(counts.items()):
        lines.append(f"  {_node(a)} -->|{n}| {_node(b)}")
    lines.append("```")
    return "\n".join(lines)


def _node(package: str) -> str:
    ident = package.replace("/", "_").strip("_") or "init"
    return f'{ident}["{package}"]'


def test_the_architecture_picture_is_the_code(graph):
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layer_diagram(graph) in doc, (
        "docs/architecture.md's import picture is stale: paste the output of "
        "`python tests/test_import_layers.py`"
    )


if __name__ == "__main__":
    mods = core_modules()
    print(layer_diagram({n: imported(p, n, mods) for n, p in mods.items()}))
