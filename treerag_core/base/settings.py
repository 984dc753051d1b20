"""Query settings, owned by the step that reads them; each class validates its own fields.

`QuerySettings` nests one frozen object per step (locate, retrieve, rerank, answer), the LLM
access, and each strategy's own options. Everything is immutable and hashable, so a settings
object can key caches, and a step's result can carry the exact settings it was made with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, Field, asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, NamedTuple

from treerag_core.base.names import Fusion, Locator, Provider, StrategyName

SETTING = "setting"  # the dataclass field metadata key of a setting's SettingInfo


@dataclass(frozen=True)
class SettingInfo:
    """How a setting is shown and asked for: the CLI flags and the explorer's widgets read it.

    `min`/`max` are the values the settings class accepts (`check_ranges`, called by its
    `__post_init__`, refuses others: the range is declared here only); `top` is the highest
    value a widget offers (default `max`); `step` a widget's step; `choices` (value, short
    label) pairs for a setting with named values.
    """

    label: str
    help: str
    min: float | None = None
    max: float | None = None
    top: float | None = None
    step: float | None = None
    choices: tuple[tuple[str, str], ...] = ()

    @property
    def widget_range(self) -> tuple[float, float]:
        """(lowest, highest) a slider offers."""
        high = self.top if self.top is not None else self.max
        if self.min is None or high is None:
            raise ValueError(f"{self.label!r} has no widget range (min and max or top)")
        return self.min, high

    def choice_label(self, value: str) -> str:
        return dict(self.choices).get(value, value)


def setting(default: Any, **info: Any) -> Any:
    """A dataclass field with `default` and its SettingInfo (label, help, range, choices)."""
    return field(default=default, metadata={SETTING: SettingInfo(**info)})


def info_of(cls: type, name: str) -> SettingInfo:
    """The SettingInfo of field `name` of the settings (or options) class `cls`."""
    found: Field | None = next((f for f in fields(cls) if f.name == name), None)
    if found is None:
        raise KeyError(f"{cls.__name__} has no field {name!r}")
    info = found.metadata.get(SETTING)
    if info is None:
        raise KeyError(f"{cls.__name__}.{name} has no SettingInfo")
    return info


def field_default(cls: type, name: str) -> Any:
    """The default of field `name` of `cls` (read without building an instance)."""
    for f in fields(cls):
        if f.name == name:
            if f.default is not MISSING:
                return f.default
            if f.default_factory is not MISSING:
                return f.default_factory()
    raise KeyError(f"{cls.__name__} has no default for {name!r}")


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def check_ranges(obj: Any) -> None:
    """Refuse a field outside the `min`/`max` its SettingInfo declares (NaN included)."""
    for f in fields(obj):
        info = f.metadata.get(SETTING)
        if info is None or (info.min is None and info.max is None):
            continue
        value = getattr(obj, f.name)
        low = info.min if info.min is not None else -float("inf")
        high = info.max if info.max is not None else float("inf")
        if not low <= value <= high:
            wanted = (
                f"in {_bound(low)}..{_bound(high)}"
                if info.min is not None and info.max is not None
                else f">= {_bound(low)}"
                if info.max is None
                else f"<= {_bound(high)}"
            )
            raise ValueError(f"{f.name} must be {wanted}, but got {value}")


def _coerce(obj: Any, name: str, enum: type) -> None:
    """Accept the enum's string value (from JSON, the CLI or a widget) in a frozen dataclass."""
    value = getattr(obj, name)
    if not isinstance(value, enum):
        object.__setattr__(obj, name, enum.parse(str(value)))


class _Step:
    """Shared helpers of the per-step settings classes, and the checks every one of them runs."""

    def __post_init__(self) -> None:
        # An enum field (its default is one) accepts the enum's string value.
        for f in fields(self):
            if isinstance(f.default, StrEnumLike):
                _coerce(self, f.name, type(f.default))
        self._validate()
        check_ranges(self)

    def _validate(self) -> None:
        """A step's own rules beyond the declared ranges; none by default."""

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, StrEnumLike) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None):
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})

    def with_(self, **changes: Any):
        return replace(self, **changes)


StrEnumLike = (Fusion, Locator, Provider)


@dataclass(frozen=True)
class LocateSettings(_Step):
    """Step 1: who picks leaves and how many."""

    locator: Locator = setting(
        Locator.AUTO,
        label="Locator",
        help="who picks the sections in step 1: auto (the LLM when one is configured, else "
        "local), llm, local (heading-aware ranking: best chunk + heading match per leaf) or "
        "keyword (question terms against headings and summaries)",
    )
    max_leaves: int = setting(
        5, label="Max leaves", help="most sections step 1 picks", min=1, max=5
    )
    budget_tokens: int = setting(
        6000,
        label="Locate budget (tokens)",
        help="the serialized tree sent to the LLM; past it, documents are cut",
        min=1,
    )


@dataclass(frozen=True)
class RetrieveSettings(_Step):
    """Step 2: dense + BM25 inside the picked leaves (or the whole scope), fused."""

    fusion: Fusion = setting(
        Fusion.WEIGHTED,
        label="Fusion",
        help="how dense and BM25 scores are combined: weighted (min-max normalise both, then "
        "a weighted sum by the dense weight), rrf (reciprocal rank), dbsf (normalised by mean "
        "± 3 std) or union (either retriever's hits, once per chunk)",
        # Short enough for the sidebar's select box at 1440 px (the help says the rest).
        choices=(
            ("weighted", "weighted (min-max)"),
            ("rrf", "RRF (reciprocal rank)"),
            ("dbsf", "DBSF (mean ± 3 std)"),
            ("union", "union (either retriever)"),
        ),
    )
    dense_weight: float = setting(
        0.5, label="Dense weight", help="BM25 gets 1 - this", min=0.0, max=1.0, step=0.05
    )
    rrf_k: int = setting(60, label="RRF k", help="used by RRF only: 1 / (k + rank)", min=1, top=120)
    # measured: 8 beat 3, 5 and 12 on both dev sets
    top_k_per_leaf: int = setting(
        8,
        label="Top-k per leaf",
        help="passages kept from each picked leaf, read only by strategies that search each "
        "picked leaf on its own",
        min=1,
        top=20,
    )
    candidate_window: int = setting(
        40,
        label="Candidate window",
        help="pooled candidates handed to step 3: the same for every strategy",
        min=1,
    )

    @property
    def bm25_weight(self) -> float:
        return 1.0 - self.dense_weight

    @property
    def fusion_args(self) -> FusionArgs:
        """(fusion, dense_weight, rrf_k): what `search.fusion.fuse` takes after the scores."""
        return FusionArgs(self.fusion, self.dense_weight, self.rrf_k)


_RETRIEVE = RetrieveSettings()


class FusionArgs(NamedTuple):
    """How dense and BM25 scores are fused: the retrieve step's three fusion settings
    (`RetrieveSettings.fusion_args`), its defaults by default; unpacks into `fuse`."""

    fusion: str = _RETRIEVE.fusion
    dense_weight: float = _RETRIEVE.dense_weight
    rrf_k: int = _RETRIEVE.rrf_k


@dataclass(frozen=True)
class RerankSettings(_Step):
    """Step 2b: the cross-encoder ordering the pooled candidates."""

    enabled: bool = setting(
        True,
        label="Rerank (cross-encoder)",
        help="the cross-encoder orders the pooled candidates; off keeps the fused order",
    )
    model: str = setting(
        "bundled-en",
        label="Rerank model",
        help="bundled-en, or a sentence-transformers CrossEncoder folder",
    )
    # the bundled model is English: measured to hurt Chinese questions
    chinese: bool = setting(
        False,
        label="Rerank Chinese questions too",
        help="The bundled cross-encoder is English-only; off by default for Chinese.",
    )
    read_path: bool = setting(
        True,
        label="Rerank reads the heading path",
        help="strategies that read structure: the model reads path + passage",
    )

    def _validate(self) -> None:
        _check(bool(self.model.strip()), "rerank model must not be empty")


@dataclass(frozen=True)
class AnswerSettings(_Step):
    """Step 3: what the answer reads."""

    final_top_k: int = setting(
        5,
        label="Final top-k",
        help="how many passages the answer reads, kept after rerank (not used while an "
        "answer context budget is set)",
        min=1,
        top=50,
    )
    context_chars: int = setting(
        0,
        label="Answer context budget (characters)",
        help="0 (off): the answer reads the Final top-k passages. Above 0: passages in final "
        "order until their text fills this many characters (at least one).",
        min=0,
        top=8000,
        step=250,
    )


@dataclass(frozen=True)
class LLMSettings(_Step):
    """LLM access shared by every step that may call a model (no key is ever stored here)."""

    enabled: bool = setting(
        True, label="Use an LLM", help="off: no LLM call at all; everything else runs"
    )
    provider: Provider = setting(
        Provider.ANTHROPIC,
        label="Provider",
        help="LLM API: anthropic (ANTHROPIC_API_KEY) or openai, i.e. any OpenAI-compatible "
        "server (OPENAI_API_KEY, may be empty for a local one)",
    )
    # "": the provider's default, or its *_BASE_URL environment variable
    base_url: str = setting(
        "",
        label="Endpoint (base URL)",
        help="the server, e.g. http://127.0.0.1:11434/v1 for Ollama (default: "
        "OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's API)",
    )
    locate_model: str = setting(
        "claude-haiku-4-5", label="Locate model", help="the model that picks sections"
    )
    # 4-5 is retired on 2026-11-30 (SDK notice)
    answer_model: str = setting(
        "claude-sonnet-4-6", label="Answer model", help="the model that writes the answer"
    )
    timeout: float = setting(30.0, label="Timeout (s)", help="seconds per LLM call")
    max_retries: int = setting(
        2, label="Retries", help="retries of a failed LLM call", min=0, max=10
    )
    context_tokens: int = setting(
        200_000,
        label="Context size (tokens)",
        help="the model's context window; the locate prompt is cut to fit it",
        min=1000,
    )
    # The longest one call may take, however steadily its server streams: past it the call
    # fails as a time-out and its step takes its fallback (a server dripping a token every
    # 2 s would otherwise hold a question forever).
    deadline: float = setting(
        180.0,
        label="Deadline (s)",
        help="seconds one LLM call may take in all, however steadily it streams; past it the "
        "step falls back as on any LLM error",
    )

    def _validate(self) -> None:
        _check(self.timeout > 0, f"timeout must be > 0, but got {self.timeout}")
        _check(self.deadline > 0, f"deadline must be > 0, but got {self.deadline}")


_STEPS: dict[str, type[_Step]] = {
    "locate": LocateSettings,
    "retrieve": RetrieveSettings,
    "rerank": RerankSettings,
    "answer": AnswerSettings,
    "llm": LLMSettings,
}

# Flat keys of traces and reports written before settings were nested (schema 1).
_LEGACY_KEYS: dict[str, tuple[str, str]] = {
    "locator": ("locate", "locator"),
    "max_leaves": ("locate", "max_leaves"),
    "locate_budget_tokens": ("locate", "budget_tokens"),
    "fusion": ("retrieve", "fusion"),
    "dense_weight": ("retrieve", "dense_weight"),
    "rrf_k": ("retrieve", "rrf_k"),
    "top_k_per_leaf": ("retrieve", "top_k_per_leaf"),
    "final_top_k": ("answer", "final_top_k"),
    "rerank": ("rerank", "enabled"),
    "rerank_model": ("rerank", "model"),
    "rerank_chinese": ("rerank", "chinese"),
    "use_llm": ("llm", "enabled"),
    "locate_model": ("llm", "locate_model"),
    "answer_model": ("llm", "answer_model"),
    "llm_timeout": ("llm", "timeout"),
    "llm_max_retries": ("llm", "max_retries"),
}


@dataclass(frozen=True)
class QuerySettings:
    """How one question is answered: the strategy, one settings object per step, and options.

    `options` holds each strategy's own settings as (strategy name, frozen dataclass) pairs;
    a strategy reads its own with `option(name, default)`.
    """

    strategy: str = setting(
        StrategyName.TREERAG.value, label="Strategy", help="how a question is answered"
    )
    locate: LocateSettings = field(default_factory=LocateSettings)
    retrieve: RetrieveSettings = field(default_factory=RetrieveSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    max_question_chars: int = setting(
        2000, label="Longest question (characters)", help="a longer question is refused", min=1
    )
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        _check(bool(self.strategy.strip()), "strategy must not be empty")
        _check(self.max_question_chars > 0, "max_question_chars must be > 0")
        for name, value in self.options:
            _check(
                is_dataclass(value) and value.__dataclass_params__.frozen,
                f"options for {name!r} must be a frozen dataclass",
            )

    def option(self, strategy: str, default: Any) -> Any:
        """The options stored for `strategy`, or `default` (the strategy's own defaults)."""
        for name, value in self.options:
            if name == strategy:
                return value
        return default

    def with_option(self, strategy: str, value: Any) -> QuerySettings:
        rest = tuple((n, v) for n, v in self.options if n != strategy)
        return replace(self, options=(*rest, (strategy, value)))

    def with_(self, **changes: Any) -> QuerySettings:
        return replace(self, **changes)

    def set(self, dotted: str, value: Any) -> QuerySettings:
        """One field changed by its path, e.g. `set("retrieve.dense_weight", 0.6)`."""
        step, _, name = dotted.partition(".")
        if not name:
            return replace(self, **{step: value})
        if step not in _STEPS:
            raise ValueError(f"unknown settings step {step!r}; choose {', '.join(_STEPS)}")
        return replace(self, **{step: getattr(self, step).with_(**{name: value})})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategy": self.strategy}
        for step in _STEPS:
            out[step] = getattr(self, step).to_dict()
        out["max_question_chars"] = self.max_question_chars
        out["options"] = {name: asdict(value) for name, value in self.options}
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], option_types: Mapping[str, type] | None = None
    ) -> QuerySettings:
        """Settings from `to_dict` output; flat keys of older traces are mapped too.

        Options of strategies not in `option_types` are dropped (a trace from a plug-in
        that is not installed still loads).
        """
        nested: dict[str, dict[str, Any]] = {step: {} for step in _STEPS}
        for key, value in data.items():
            if key in _STEPS and isinstance(value, Mapping):
                nested[key].update(value)
            elif key in _LEGACY_KEYS:
                step, name = _LEGACY_KEYS[key]
                nested[step].setdefault(name, value)
        options = []
        for name, values in (data.get("options") or {}).items():
            kind = (option_types or {}).get(name)
            if kind is not None:
                known = {f.name for f in fields(kind)}
                options.append((name, kind(**{k: v for k, v in values.items() if k in known})))
        return cls(
            strategy=str(data.get("strategy", StrategyName.TREERAG.value)),
            max_question_chars=int(data.get("max_question_chars", 2000)),
            options=tuple(options),
            **{step: _STEPS[step].from_dict(values) for step, values in nested.items()},
        )


def settings_info(path: str, option_types: Mapping[str, type] | None = None) -> SettingInfo:
    """The SettingInfo of a dotted QuerySettings path: `strategy`, `retrieve.dense_weight`,
    or `options.<strategy>.<field>` (with that strategy's options class in `option_types`)."""
    head, _, rest = path.partition(".")
    if head == "options":
        strategy, _, name = rest.partition(".")
        kind = (option_types or {}).get(strategy)
        if kind is None:
            raise KeyError(f"no options class given for {strategy!r}")
        return info_of(kind, name)
    if not rest:
        return info_of(QuerySettings, head)
    if head not in _STEPS:
        raise KeyError(f"unknown settings step {head!r}")
    return info_of(_STEPS[head], rest)


def setting_paths() -> list[str]:
    """Every dotted path of QuerySettings (strategy options aside)."""
    paths = [f.name for f in fields(QuerySettings) if f.name not in _STEPS and f.name != "options"]
    for step, cls in _STEPS.items():
        paths.extend(f"{step}.{f.name}" for f in fields(cls))
    return paths
