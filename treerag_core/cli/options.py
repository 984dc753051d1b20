"""Options several commands share, declared once; flag help comes from the settings' own
SettingInfo (label, help, range), and flags become settings here."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from treerag_core import Drilldown, get_strategy, option_types, strategy_names
from treerag_core.base.config import MB, IndexSettings, max_file_bytes
from treerag_core.base.errors import LLMError, QueryError, SettingsError, TreeRAGError
from treerag_core.base.names import DEFAULT_COLLECTION, Fusion, Locator, Provider, StrategyName
from treerag_core.base.settings import (
    LLMSettings,
    QuerySettings,
    field_default,
    info_of,
    settings_info,
)

if TYPE_CHECKING:
    from treerag_core.llm import LLMClient

# The strategy whose options --drilldown-layers sets (its family should declare that flag).
DRILLDOWN = Drilldown.name
LAYERS = ("documents", "parents", "children")  # --drilldown-layers D,P,C, in this order

# Flags that set one query setting each: flag dest -> the setting's dotted path.
SETTING_FLAGS = {
    "top_k": "answer.final_top_k",
    "context_chars": "answer.context_chars",
    "dense_weight": "retrieve.dense_weight",
    "fusion": "retrieve.fusion",
    "candidate_window": "retrieve.candidate_window",
    "locator": "locate.locator",
    "max_leaves": "locate.max_leaves",
    "rerank_chinese": "rerank.chinese",
    "strategy": "strategy",
}
RERANK_CHINESE = "--rerank-chinese"  # named by the note of a Chinese question's skipped rerank
# The LLM flags: flag dest -> LLMSettings field (--model is the answer model).
LLM_FLAGS = {
    "base_url": "base_url",
    "model": "answer_model",
    "locate_model": "locate_model",
    "context_tokens": "context_tokens",
    "llm_deadline": "deadline",
}
_QUERY = QuerySettings()  # the defaults the help texts quote
EMBEDDER_HELP = info_of(IndexSettings, "embedder").help  # the one text, the Rebuild form too


def _num(value: float) -> str:
    return f"{value:g}"


def setting_help(path: str, default: object | None = None, extra: str = "") -> str:
    """A flag's help from its setting's SettingInfo: the help, its range, its default."""
    info = settings_info(path, option_types())
    text = info.help + extra
    if info.min is not None and info.max is not None:
        text += f", {_num(info.min)}..{_num(info.max)}"
    if default is None:
        step, _, name = path.partition(".")
        default = getattr(getattr(_QUERY, step), name) if name else getattr(_QUERY, step)
    return f"{text} (default {default})"


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (argparse prints the message and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 1, but got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, but got {value}")
    return value


def add_llm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--provider",
        choices=Provider.values(),
        default=None,
        help=settings_info("llm.provider").help
        + ". Default: openai when only OpenAI variables are set, else anthropic",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help=settings_info("llm.base_url").help
        + "; the provider's key variable is sent to it (the explorer never does that)",
    )
    p.add_argument(
        "--model",
        default=None,
        help=settings_info("llm.answer_model").help + " (openai: also locates)",
    )
    p.add_argument("--locate-model", default=None, help=settings_info("llm.locate_model").help)
    p.add_argument(
        "--context-tokens", type=int, default=None, help=setting_help("llm.context_tokens")
    )
    p.add_argument("--llm-deadline", type=float, default=None, help=setting_help("llm.deadline"))


def add_query_options(p: argparse.ArgumentParser) -> None:
    """What query and interactive share: the index, output and every retrieval option."""
    p.add_argument("--index", required=True, help="index folder made by `index`")
    p.add_argument(
        "--embedder",
        default=None,
        help="the index's embedder, named by you: needed for an st:FOLDER model (an index "
        "folder alone cannot choose which model folder is loaded; or set TREERAG_EMBEDDER)",
    )
    p.add_argument("--mock", action="store_true", help="no LLM call at all; everything else real")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    p.add_argument("--top-k", type=int, default=None, help=setting_help("answer.final_top_k"))
    p.add_argument(
        "--context-chars", type=int, default=None, help=setting_help("answer.context_chars")
    )
    p.add_argument(
        "--strategy", choices=strategy_names(runnable=True), default=None, help=strategy_help()
    )
    p.add_argument(
        "--qdrant",
        default=None,
        metavar="COLLECTION",
        help="serve the drill-down's vector searches from this collection on the Qdrant "
        "server at QDRANT_URL (key: QDRANT_API_KEY), pushed with qdrant-push",
    )
    p.add_argument(
        "--settings",
        default=None,
        metavar="FILE",
        help="start from the query settings in FILE (written by `tune --out`); flags given "
        "beside it change them",
    )
    add_vector_store_options(p)
    add_retrieval_options(p)


def base_settings(args: argparse.Namespace) -> QuerySettings:
    """`--settings FILE` when given, else the defaults: what the query flags then change."""
    from treerag_core.evaluation.settings_file import read_settings

    path = getattr(args, "settings", None)
    return read_settings(Path(path)) if path else QuerySettings()


def add_vector_store_options(p: argparse.ArgumentParser, push: bool = False) -> None:
    """Where an index's chunk searches run, declared once (index, query, interactive, eval,
    milvus-push)."""
    if not push:
        p.add_argument(
            "--vector-store",
            choices=("faiss", "milvus"),
            default="faiss",
            help="faiss: dense + BM25 in this process (default); milvus: both served by the "
            "Milvus engine at --milvus-uri (see docs/milvus.md)",
        )
    p.add_argument(
        "--milvus-uri",
        default=None,
        help="a .db file (Milvus Lite, started here) or a server, http://host:19530 "
        "(default MILVUS_URI; a server's token: MILVUS_TOKEN)",
    )
    p.add_argument(
        "--milvus-collection",
        default=DEFAULT_COLLECTION,
        help="collection name; the index lives in NAME_chunks and NAME_layers "
        "(default %(default)s)",
    )


def print_milvus_push(pushed: dict) -> None:
    """One stderr line for a push (and its note, e.g. a half-written collection rebuilt)."""
    if pushed["note"]:
        print(f"note: {pushed['note']}", file=sys.stderr)
    print(
        f"milvus {pushed['status']}: {pushed['documents']} documents, {pushed['parents']} "
        f"parents, {pushed['chunks']} chunks in {pushed['uri']} collection "
        f"{pushed['collection']!r} ({pushed['seconds']:.1f} s)",
        file=sys.stderr,
    )


def strategy_help() -> str:
    return "; ".join(f"{s}: {get_strategy(s).label}" for s in strategy_names(runnable=True))


def add_retrieval_options(p: argparse.ArgumentParser) -> None:
    """Options that query, interactive and eval share, declared once."""
    p.add_argument(
        "--dense-weight", type=float, default=None, help=setting_help("retrieve.dense_weight")
    )
    p.add_argument(
        "--fusion", choices=Fusion.values(), default=None, help=setting_help("retrieve.fusion")
    )
    p.add_argument(
        "--locator", choices=Locator.values(), default=None, help=setting_help("locate.locator")
    )
    p.add_argument("--max-leaves", type=int, default=None, help=setting_help("locate.max_leaves"))
    p.add_argument(
        "--candidate-window",
        type=int,
        default=None,
        help=setting_help("retrieve.candidate_window"),
    )
    p.add_argument(
        "--no-rerank",
        action="store_true",
        help=f"turn off {settings_info('rerank.enabled').label.lower()}: keep the fused order",
    )
    chinese = settings_info("rerank.chinese")
    p.add_argument(
        RERANK_CHINESE,
        action="store_true",
        default=None,  # unset: the --settings file's value, else the default (off)
        help=f'"{chinese.label}" in the explorer. {chinese.help}',  # the setting's one text
    )
    p.add_argument(
        "--drilldown-layers",
        default=None,
        metavar="D,P,C",
        help="drilldown: "
        + ", ".join(
            settings_info(f"options.{DRILLDOWN}.{name}", option_types()).label.lower()
            for name in LAYERS
        )
        + f" per layer (default {drilldown_default()}; the seed's is 1,1,3)",
    )
    p.add_argument(
        "--option",
        action="append",
        default=None,
        metavar="STRATEGY.FIELD=VALUE",
        help=f"one of a strategy's own options, e.g. {StrategyName.FLAT_STRUCTURED}."
        "section_weight=0.3 (repeatable; strategies with options: "
        + ", ".join(sorted(option_types()))
        + ")",
    )
    add_llm_options(p)


def drilldown_options() -> type:
    """The drill-down's options class, from the registry."""
    return option_types()[DRILLDOWN]


def drilldown_default() -> str:
    return ",".join(str(field_default(drilldown_options(), name)) for name in LAYERS)


def add_index_options(p: argparse.ArgumentParser) -> None:
    """Every flag `index_settings` reads, declared once (index and eval): the embedder, the
    tree and chunk options, and which leaves get a knowledge graph."""
    p.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    add_tree_options(p)
    add_index_flag(p, "graph_min_leaf_chars")


def add_tree_options(p: argparse.ArgumentParser) -> None:
    """How documents become trees and chunks."""
    for name in ("max_depth", "chunk_size", "chunk_overlap", "article_leaves"):
        add_index_flag(p, name)


def add_index_flag(p: argparse.ArgumentParser, name: str) -> None:
    """The flag of IndexSettings field `name` (--max-depth for max_depth), its help from the
    field's SettingInfo; a bool field is a switch that turns it on."""
    info = info_of(IndexSettings, name)
    default = field_default(IndexSettings, name)
    flag = "--" + name.replace("_", "-")
    if isinstance(default, bool):
        p.add_argument(flag, action="store_true", help=info.help)
        return
    p.add_argument(flag, type=int, default=default, help=f"{info.help} (default %(default)s)")


def llm_settings(args: argparse.Namespace, base: LLMSettings | None = None) -> LLMSettings:
    """The LLM access: `base`, then the environment's choice (`settings_from_env`), then flags.

    --provider, --base-url, --model (answer; for openai also locate unless --locate-model),
    --locate-model, --context-tokens. A custom OpenAI-compatible server needs a model name,
    from --model or TREERAG_LLM_MODEL (no default fits every server).
    """
    from treerag_core.llm import MODEL_ENV, OPENAI_DEFAULT_MODEL, base_url_for, settings_from_env

    base = base or LLMSettings()
    env_settings = settings_from_env()
    provider = getattr(args, "provider", None) or env_settings.provider
    changes: dict = {"provider": provider}
    if provider == env_settings.provider:
        changes.update(
            locate_model=env_settings.locate_model, answer_model=env_settings.answer_model
        )
    elif provider == Provider.OPENAI:
        changes.update(locate_model=OPENAI_DEFAULT_MODEL, answer_model=OPENAI_DEFAULT_MODEL)
    named = {}
    for flag, name in LLM_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            named[name] = value
    if provider == Provider.OPENAI and "answer_model" in named:
        named.setdefault("locate_model", named["answer_model"])
    changes.update(named)
    try:
        llm = base.with_(**changes)
    except ValueError as exc:
        raise QueryError(str(exc)) from exc
    custom = llm.provider == Provider.OPENAI and base_url_for(llm) is not None
    if custom and "answer_model" not in named and not os.environ.get(MODEL_ENV, "").strip():
        raise QueryError(
            "an OpenAI-compatible server needs --model (the name it serves, e.g. llama3.2) "
            f"or {MODEL_ENV}"
        )
    return llm


def llm_client(args: argparse.Namespace, flag: str) -> tuple[LLMClient, LLMSettings]:
    """The LLM client `flag` asked for and its settings; no key (or endpoint) is an error
    that names what is missing, raised before any document is indexed."""
    from treerag_core.llm import api_key_for, make_client, needs

    llm = llm_settings(args)
    client = make_client(llm, api_key_for(llm.provider))
    if client is None:
        raise LLMError(f"{flag} needs {needs(llm.provider, '--base-url')}", reason="no_api_key")
    return client, llm


def max_file_bytes_of(flag_mb: float | None) -> int:
    """--max-file-mb, else TREERAG_MAX_FILE_MB, else the default; a bad value is an error."""
    if flag_mb is not None:
        if not flag_mb > 0:
            raise TreeRAGError(f"--max-file-mb must be > 0, but got {flag_mb}")
        return int(flag_mb * MB)
    try:
        return max_file_bytes()
    except ValueError as exc:
        raise TreeRAGError(str(exc)) from exc


def index_settings(args: argparse.Namespace, embedder: str | None, **more) -> IndexSettings:
    """The tree and chunk flags that index and eval share, as IndexSettings; a value out of
    range is a SettingsError (one line, exit 2), not a traceback."""
    try:
        return IndexSettings(
            max_depth=args.max_depth,
            chunk_size=args.chunk_size,
            chunk_overlap=args.chunk_overlap,
            embedder=embedder or IndexSettings().embedder,
            graph_min_leaf_chars=args.graph_min_leaf_chars,
            article_leaves=getattr(args, "article_leaves", False),
            **more,
        )
    except ValueError as exc:
        raise SettingsError(f"bad index settings: {exc}") from exc


def _drilldown_layers(settings: QuerySettings, value: str) -> QuerySettings:
    """`--drilldown-layers D,P,C`: the per-layer limits, the other drill-down options kept."""
    parts = value.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--drilldown-layers wants three whole numbers D,P,C, got {value!r}")
    current = settings.option(DRILLDOWN, drilldown_options()())
    layers = replace(current, **dict(zip(LAYERS, (int(p) for p in parts), strict=True)))
    return settings.with_option(DRILLDOWN, layers)


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _typed_like(default: object, text: str) -> object:
    """`text` read as the type of the option's default (bool, int, float or str)."""
    if isinstance(default, bool):
        if text.lower() not in _TRUE + _FALSE:
            raise ValueError(f"wants true or false, got {text!r}")
        return text.lower() in _TRUE
    if isinstance(default, int | float):
        try:
            return type(default)(text)
        except ValueError:
            raise ValueError(f"wants a {type(default).__name__}, got {text!r}") from None
    return text


def with_option_flag(settings: QuerySettings, item: str) -> QuerySettings:
    """`--option STRATEGY.FIELD=VALUE`: that strategy's options with one field changed (its
    other options kept); the options class validates the value."""
    key, sep, text = item.partition("=")
    strategy, _, name = key.strip().partition(".")
    if not sep or not name:
        raise ValueError(f"--option wants STRATEGY.FIELD=VALUE, got {item!r}")
    kinds = option_types()
    kind = kinds.get(strategy)
    if kind is None:
        raise ValueError(
            f"strategy {strategy!r} has no options; these do: {', '.join(sorted(kinds))}"
        )
    names = [f.name for f in fields(kind)]
    if name not in names:
        raise ValueError(f"{strategy} has no option {name!r}; it has: {', '.join(names)}")
    try:
        value = _typed_like(field_default(kind, name), text.strip())
    except ValueError as exc:
        raise ValueError(f"--option {strategy}.{name} {exc}") from None
    current = settings.option(strategy, kind())
    return settings.with_option(strategy, replace(current, **{name: value}))


def settings_from_args(args: argparse.Namespace, base: QuerySettings) -> QuerySettings:
    """`base` with every query flag the user gave applied; a bad value is a QueryError."""
    settings = base
    try:
        for dest, path in SETTING_FLAGS.items():
            value = getattr(args, dest, None)
            if value is not None:
                settings = settings.set(path, value)
        if getattr(args, "no_rerank", False):
            settings = settings.set("rerank.enabled", False)
        if getattr(args, "drilldown_layers", None):
            settings = _drilldown_layers(settings, args.drilldown_layers)
        for item in getattr(args, "option", None) or ():
            settings = with_option_flag(settings, item)
        if getattr(args, "mock", False):
            settings = settings.set("llm.enabled", False)
        elif getattr(args, "llm", True):  # eval calls no LLM without --llm
            settings = settings.with_(llm=llm_settings(args, settings.llm))
        get_strategy(settings.strategy)
    except ValueError as exc:  # a flag out of range is the user's to fix, not a traceback
        raise QueryError(str(exc)) from exc
    return settings
