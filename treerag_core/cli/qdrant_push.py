"""`qdrant-push`: copy an index's documents, sections and chunks to a Qdrant server."""

from __future__ import annotations

import argparse
import os
import sys

from treerag_core import push_to_qdrant
from treerag_core.base.names import DEFAULT_COLLECTION


def add_parser(sub) -> None:
    p = sub.add_parser(
        "qdrant-push", help="copy an index's documents, sections and chunks to a Qdrant server"
    )
    p.add_argument("--index", required=True, help="an index folder")
    p.add_argument(
        "--url", default=None, help="the server, e.g. http://localhost:6333 (QDRANT_URL)"
    )
    p.add_argument(
        "--collection", default=DEFAULT_COLLECTION, help="collection name (default %(default)s)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("QDRANT_URL", "")
    if not url:
        print("error: give --url or set QDRANT_URL (e.g. http://localhost:6333)", file=sys.stderr)
        return 2
    # The key, when the server wants one: QDRANT_API_KEY.
    pushed = push_to_qdrant(args.index, url, args.collection)
    print(
        f"pushed {pushed['document']} documents, {pushed['parent']} parents, "
        f"{pushed['child']} children to {url} collection {args.collection!r} "
        f"({pushed['points']} points there) in {pushed['seconds']:.1f} s"
    )
    return 0
