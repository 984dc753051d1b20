"""`milvus-push`: write an index's chunks (with engine-side BM25) and layers to Milvus."""

from __future__ import annotations

import argparse

from treerag_core import push_to_milvus
from treerag_core.cli.options import add_vector_store_options, print_milvus_push


def add_parser(sub) -> None:
    p = sub.add_parser(
        "milvus-push",
        help="write an index's chunks (with engine-side BM25) and layers to Milvus",
    )
    p.add_argument("--index", required=True, help="an index folder")
    add_vector_store_options(p, push=True)
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace a collection that holds another index (refused without it)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print_milvus_push(
        push_to_milvus(args.index, args.milvus_uri, args.milvus_collection, args.replace)
    )
    return 0
