"""A settings file: query settings as JSON (what `tune` writes and `query --settings` reads)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from treerag_core.base.atomic import write_atomic
from treerag_core.base.errors import SettingsError
from treerag_core.base.settings import QuerySettings

KIND = "treerag-settings"
VERSION = 1
MAX_BYTES = 1024 * 1024


def settings_document(settings: QuerySettings, about: Mapping[str, Any] | None = None) -> dict:
    """The file's content: the settings, and (optional) where they came from (a tune's result)."""
    doc: dict[str, Any] = {"kind": KIND, "version": VERSION, "settings": settings.to_dict()}
    if about:
        doc["about"] = dict(about)
    return doc


def write_settings(
    path: Path, settings: QuerySettings, about: Mapping[str, Any] | None = None
) -> None:
    """Write the file atomically (a reader never sees half of it)."""
    text = json.dumps(settings_document(settings, about), ensure_ascii=False, indent=2) + "\n"
    write_atomic(path, text, mode=0o644)


def parse_settings(data: Any, where: str) -> QuerySettings:
    """Settings from a settings document, or from a bare `QuerySettings.to_dict()` (a trace's).

    Raises:
        SettingsError: not a JSON object of settings, or a value out of its range.
    """
    from treerag_core.strategies import get_strategy, option_types

    if isinstance(data, Mapping) and data.get("kind") == KIND:
        if data.get("version") != VERSION:
            raise SettingsError(f"{where}: settings file version {data.get('version')!r}; "
                                f"this version reads {VERSION}")  # fmt: skip
        data = data.get("settings")
    if not isinstance(data, Mapping):
        raise SettingsError(f"{where}: expected a JSON object of query settings")
    try:
        settings = QuerySettings.from_dict(data, option_types())
        get_strategy(settings.strategy)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{where}: {exc}") from exc
    return settings


def read_settings(path: Path) -> QuerySettings:
    """The settings in `path` (see `parse_settings`); a missing or unreadable file is a
    SettingsError naming it."""
    path = Path(path)
    try:
        raw = path.read_bytes() if path.is_file() else None
    except OSError as exc:
        raise SettingsError(f"cannot read settings file {path}: {exc.strerror or exc}") from exc
    if raw is None:
        raise SettingsError(f"settings file {path} does not exist (or is not a file)")
    if len(raw) > MAX_BYTES:
        raise SettingsError(f"settings file {path} is larger than {MAX_BYTES // 1024} KB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"settings file {path} is not JSON ({exc})") from exc
    return parse_settings(data, str(path))
