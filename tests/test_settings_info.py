"""One place for a setting's label, help and range: every setting has them, the settings
classes accept exactly that range, and the CLI's flags and the explorer's widgets read them."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

import treerag_core
from treerag_core import api, option_types
from treerag_core.base.settings import (
    SETTING,
    QuerySettings,
    SettingInfo,
    info_of,
    setting_paths,
    settings_info,
)
from treerag_core.cli import SETTING_FLAGS, build_parser
from treerag_core.cli.options import DRILLDOWN, LAYERS

OPTIONS = option_types()


@pytest.mark.parametrize("path", setting_paths())
def test_every_setting_has_a_label_and_a_help(path):
    info = settings_info(path)
    assert info.label.strip() and info.help.strip(), path
    if info.min is not None and info.max is not None:
        assert info.min <= info.max, path
    if info.choices:
        default = treerag_core_default(path)
        assert str(default) in dict(info.choices), path


def treerag_core_default(path: str):
    step, _, name = path.partition(".")
    value = getattr(QuerySettings(), step)
    return getattr(value, name) if name else value


def _set(path: str, value) -> None:
    QuerySettings().set(path, value)


@pytest.mark.parametrize("path", [p for p in setting_paths() if settings_info(p).min is not None])
def test_the_declared_range_is_the_range_the_settings_class_accepts(path):
    info = settings_info(path)
    whole = isinstance(treerag_core_default(path), int)
    below = info.min - (1 if whole else 0.01)
    _set(path, type(treerag_core_default(path))(info.min))
    with pytest.raises(ValueError):
        _set(path, int(below) if whole else below)
    if info.max is not None:
        _set(path, type(treerag_core_default(path))(info.max))
        above = info.max + (1 if whole else 0.01)
        with pytest.raises(ValueError):
            _set(path, int(above) if whole else above)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("locate.max_leaves", 6, "max_leaves must be in 1..5, but got 6"),
        ("retrieve.dense_weight", float("nan"), "dense_weight must be in 0..1, but got nan"),
        ("llm.context_tokens", 999, "context_tokens must be >= 1000, but got 999"),
    ],
)
def test_a_value_outside_the_declared_range_is_refused_naming_it(path, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _set(path, value)


def test_drilldown_options_declare_their_layers_and_ranges():
    kind = OPTIONS[DRILLDOWN]
    for name in LAYERS:
        info = info_of(kind, name)
        assert info.label and info.help and info.min == 1 and info.max == 50
        kind(**{name: 50})
        with pytest.raises(ValueError):
            kind(**{name: 51})


def _flag_helps() -> dict[str, str]:
    """flag dest -> help text of the `query` command."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    query = sub.choices["query"]
    return {a.dest: a.help for a in query._actions}


def test_cli_flags_read_the_settings_help_and_range():
    helps = _flag_helps()
    for dest, path in SETTING_FLAGS.items():
        if path == "strategy":  # its help lists the registry's strategies
            continue
        info = settings_info(path)
        assert info.help in helps[dest], (dest, helps[dest])
        if info.min is not None and info.max is not None:
            assert f"{info.min:g}..{info.max:g}" in helps[dest], dest
    labels = [info_of(OPTIONS[DRILLDOWN], n).label.lower() for n in LAYERS]
    assert all(label in helps["drilldown_layers"] for label in labels)


def test_explorer_widgets_read_the_same_labels_ranges_and_fields():
    from ui.common import query_controls as qc

    for path, label in qc.SETTING_LABELS.items():
        assert label == settings_info(path, {DRILLDOWN: OPTIONS[DRILLDOWN]}).label, path
    for path in qc.SETTING_WIDGETS.values():
        assert qc.label_of(path) == settings_info(path).label
    declared = [
        f.name
        for f in fields(OPTIONS[DRILLDOWN])
        if isinstance(f.metadata.get(SETTING), SettingInfo)
    ]
    assert list(qc.DRILLDOWN_WIDGETS.values()) == declared == list(LAYERS)
    assert dict(settings_info("retrieve.fusion").choices) == qc.FUSION_LABELS
    assert settings_info("answer.context_chars").top == qc.CONTEXT_MAX_CHARS


def test_the_package_exports_exactly_the_api():
    assert all(getattr(treerag_core, name) is getattr(api, name) for name in api.__all__)
    assert set(api.__all__) <= set(dir(treerag_core))
    for name in ("not_an_api_name", "Path", "IndexSettings"):  # api's own imports stay inside
        with pytest.raises(AttributeError):
            getattr(treerag_core, name)


def test_importing_the_package_or_a_submodule_does_not_load_the_api():
    code = (
        "import sys, treerag_core\n"
        "from treerag_core import base\n"
        "from treerag_core.base import settings\n"
        "assert not hasattr(treerag_core, 'records')\n"
        "assert 'treerag_core.api' not in sys.modules, 'the API was loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def test_fusion_args_are_the_three_fusion_settings():
    retrieve = replace(QuerySettings().retrieve, dense_weight=0.3, rrf_k=7)
    assert retrieve.fusion_args == (retrieve.fusion, 0.3, 7)
