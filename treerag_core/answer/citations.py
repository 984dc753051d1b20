"""Find `[Source: path]` / `[来源：path]` markers in an answer and map each path to tree nodes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from treerag_core.base.text_rules import split_heading_number, split_path
from treerag_core.base.types import Citation, RetrievedChunk

_LABEL = r"(?:sources?|来源)\s*[:：]\s*"
_MARKER = re.compile(
    rf"\[\s*{_LABEL}(?P<square>[^\[\]\n]+?)\s*\]"
    rf"|【\s*{_LABEL}(?P<lenticular>[^【】\n]+?)\s*】"
    # Round brackets allow one nested pair, for headings such as "Results (Table 2)".
    rf"|[(（]\s*{_LABEL}(?P<round>(?:[^()（）\n]|[(（][^()（）\n]*[)）])+?)\s*[)）]",
    re.IGNORECASE,
)
_PATH_LIST_SEP = re.compile(r"\s*[;；]\s*")
_COMMA_SEP = re.compile(r"\s*[,，]\s*")
_QUOTES = "\"'`*“”‘’「」『』 "

_Key = tuple[str, str, str]  # (whole component, number label, title), squashed
_Prepared = list[tuple[str, list[list[_Key]]]]  # node id -> its paths as keys
_INTRO = re.compile(r"^(?P<base>.*?)\s*\((?:intro|引言)\)$", re.IGNORECASE)


def _squash(text: str) -> str:
    # Spacing inside a heading varies ("第二节  监  护" vs "第二节 监护"): compare without it.
    return "".join(text.split()).casefold()


def _component_key(component: str) -> _Key:
    label, title = split_heading_number(component)
    return _squash(component), _squash(label), _squash(title)


def _components_match(cited: _Key, node: _Key) -> bool:
    (c_full, c_label, c_title), (n_full, n_label, n_title) = cited, node
    if c_full == n_full:
        return True
    if c_title and n_title:
        # "Router Design" ~ "3.2.2 Router Design", but "3 Results" is not "4 Results".
        return c_title == n_title and (not c_label or not n_label or c_label == n_label)
    # One side is a bare label: "第五十条" ~ "第五十条 合同无效", "3.2" ~ "3.2 Router Design".
    return bool(c_label) and c_label == n_label


def _path_keys(path: str) -> list[_Key]:
    return [_component_key(c) for c in split_path(path, lenient=True)]


def _ends_with_subsequence(node: list[_Key], cited: list[_Key]) -> bool:
    """The last components match, and the other cited ones match ancestors in order.

    So "Methods > Router Design" finds "Methods > Model Architecture > Router Design".
    Greedy matching from the end is enough for a subsequence test.
    """
    if not cited or not node or not _components_match(cited[-1], node[-1]):
        return False
    j = len(node) - 2
    for comp in reversed(cited[:-1]):
        while j >= 0 and not _components_match(comp, node[j]):
            j -= 1
        if j < 0:
            return False
        j -= 1
    return True


def _node_variants(path: str) -> list[list[_Key]]:
    keys = _path_keys(path)
    variants = [keys]
    comps = split_path(path, lenient=True)
    if len(comps) >= 2:
        intro = _INTRO.match(comps[-1])
        # A synthetic "(intro)" leaf holds its parent's own text: citing the parent finds it.
        if intro and _squash(intro.group("base")) == _squash(comps[-2]):
            variants.append(keys[:-1])
    return variants


def _prepare(node_paths: Mapping[str, str]) -> _Prepared:
    return [(node_id, _node_variants(path)) for node_id, path in node_paths.items()]


def _match(cited_path: str, prepared: _Prepared) -> tuple[str, ...]:
    cited = _path_keys(cited_path)
    if not cited:
        return ()
    return tuple(
        node_id
        for node_id, variants in prepared
        if any(_ends_with_subsequence(v, cited) for v in variants)
    )


_PAGE_SUFFIX = re.compile(r"\s*[(（]\s*pp?\.\s*\d+(?:\s*[-–]\s*\d+)?\s*[)）]\s*$")


def _pages_of(retrieved: Sequence[RetrievedChunk], node_ids: Sequence[str]) -> tuple[int, ...]:
    pages: set[int] = set()
    for hit in retrieved:
        c = hit.chunk
        if c.source_node_id in node_ids and c.page_start is not None:
            pages.update(range(c.page_start, (c.page_end or c.page_start) + 1))
    return tuple(sorted(pages))


def _marker_paths(body: str, prepared: _Prepared) -> list[tuple[str, tuple[str, ...]]]:
    found: list[tuple[str, tuple[str, ...]]] = []
    for piece in _PATH_LIST_SEP.split(body):
        # A PDF passage is shown to the model as "path (p. 38)": the page is not the path.
        piece = _PAGE_SUFFIX.sub("", piece).strip(_QUOTES)
        if not piece:
            continue
        ids = _match(piece, prepared)
        parts = [p.strip(_QUOTES) for p in _COMMA_SEP.split(piece)]
        if ids or len(parts) == 1:
            found.append((piece, ids))
            continue
        # "A, B" that is no heading itself: a list of paths.
        found.extend((p, _match(p, prepared)) for p in parts if p)
    return found


def parse_citations(
    answer: str,
    retrieved: Sequence[RetrievedChunk],
    node_paths: Mapping[str, str],
    context: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Citation]:
    """Every cited path in the answer, in order of appearance, mapped to node ids.

    Markers: `[Source: p]`, `[来源: p]`, `[来源：p]`, `(来源: p)`, `（来源：p）`, `【来源：p】`;
    one marker may list paths separated by `;`, `；` or `,`. A citation is `supported` when
    one of its nodes is the source node of a retrieved chunk, and then names only those
    nodes (a path can match several documents' "Abstract"); a path that matches no node
    has no node ids and is unsupported. An identical marker repeated later adds nothing.
    `node_paths` maps node id -> heading path; retrieved chunks' own paths fill its gaps.
    `context` maps the title of a context block the answer read (a strategy's
    `ContextSection`, e.g. drill-down's "Parent context") to the nodes it was built from: a
    marker citing that title is supported by them.
    """
    context_nodes = {_squash(title): ids for title, ids in (context or {}).items() if ids}
    paths = dict(node_paths)
    for hit in retrieved:
        paths.setdefault(hit.chunk.source_node_id, hit.chunk.heading_path)
    prepared: _Prepared | None = None  # built on the first marker: most answers have some
    sources = {hit.chunk.source_node_id for hit in retrieved}
    citations: list[Citation] = []
    seen: set[tuple[str, str]] = set()
    for match in _MARKER.finditer(answer):
        marker = match.group(0)
        body = match.group("square") or match.group("lenticular") or match.group("round")
        if prepared is None:
            prepared = _prepare(paths)
        for path, ids in _marker_paths(body, prepared):
            if (marker, path) in seen:
                continue
            seen.add((marker, path))
            if _squash(path) in context_nodes:
                citations.append(Citation(marker, path, context_nodes[_squash(path)], True))
                continue
            # A path like "Abstract" names a node in every paper: the evidence shown to the
            # model says which one was meant.
            retrieved_ids = tuple(i for i in ids if i in sources)
            pages = _pages_of(retrieved, retrieved_ids)
            citations.append(
                Citation(marker, path, retrieved_ids or ids, bool(retrieved_ids), pages)
            )
    return citations
