"""Query settings, owned by the step that reads them; each class validates its own fields.

`QuerySettings` nests one frozen object per step (locate, retrieve, rerank, answer), the LLM
access, and each strategy's own options. Everything is immutable and hashable, so a settings
object can key caches, and a step's result can carry the exact settings it was made with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any

from treerag_core.base.names import Fusion, Locator, Provider, StrategyName


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _coerce(obj: Any, name: str, enum: type) -> None:
    """Accept the enum's string value (from JSON, the CLI or a widget) in a frozen dataclass."""
    value = getattr(obj, name)
    if not isinstance(value, enum):
        object.__setattr__(obj, name, enum.parse(str(value)))


class _Step:
    """Shared helpers of the per-step settings classes."""

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

    locator: Locator = Locator.AUTO
    max_leaves: int = 5
    budget_tokens: int = 6000  # the serialized tree sent to the LLM; past it, documents are cut

    def __post_init__(self) -> None:
        _coerce(self, "locator", Locator)
        _check(1 <= self.max_leaves <= 5, f"max_leaves must be in 1..5, but got {self.max_leaves}")
        _check(self.budget_tokens > 0, f"budget_tokens must be > 0, but got {self.budget_tokens}")


@dataclass(frozen=True)
class RetrieveSettings(_Step):
    """Step 2: dense + BM25 inside the picked leaves (or the whole scope), fused."""

    fusion: Fusion = Fusion.WEIGHTED
    dense_weight: float = 0.5
    rrf_k: int = 60
    top_k_per_leaf: int = 8  # measured: 8 beat 3, 5 and 12 on both dev sets
    candidate_window: int = 40  # pooled candidates handed to step 3: the same for every strategy

    def __post_init__(self) -> None:
        _coerce(self, "fusion", Fusion)
        _check(
            0.0 <= self.dense_weight <= 1.0,
            f"dense_weight must be in [0, 1], but got {self.dense_weight}",
        )
        _check(self.rrf_k > 0, f"rrf_k must be > 0, but got {self.rrf_k}")
        _check(self.top_k_per_leaf > 0, f"top_k_per_leaf must be > 0, got {self.top_k_per_leaf}")
        _check(
            self.candidate_window > 0,
            f"candidate_window must be > 0, but got {self.candidate_window}",
        )

    @property
    def bm25_weight(self) -> float:
        return 1.0 - self.dense_weight


@dataclass(frozen=True)
class RerankSettings(_Step):
    """Step 2b: the cross-encoder ordering the pooled candidates."""

    enabled: bool = True
    model: str = "bundled-en"  # bundled-en | <sentence-transformers CrossEncoder folder>
    chinese: bool = False  # the bundled model is English: measured to hurt Chinese questions
    read_path: bool = True  # strategies that read structure: the model reads path + passage

    def __post_init__(self) -> None:
        _check(bool(self.model.strip()), "rerank model must not be empty")


@dataclass(frozen=True)
class AnswerSettings(_Step):
    """Step 3: what the answer reads."""

    final_top_k: int = 5
    context_chars: int = 0  # > 0: fill the context to this many characters instead of top-k

    def __post_init__(self) -> None:
        _check(self.final_top_k > 0, f"final_top_k must be > 0, but got {self.final_top_k}")
        _check(self.context_chars >= 0, f"context_chars must be >= 0, got {self.context_chars}")


@dataclass(frozen=True)
class LLMSettings(_Step):
    """LLM access shared by every step that may call a model (no key is ever stored here)."""

    enabled: bool = True
    provider: Provider = Provider.ANTHROPIC
    base_url: str = ""  # "": the provider's default, or its *_BASE_URL environment variable
    locate_model: str = "claude-haiku-4-5"
    answer_model: str = "claude-sonnet-4-6"  # 4-5 is retired on 2026-11-30 (SDK notice)
    timeout: float = 30.0
    max_retries: int = 2
    context_tokens: int = 200_000  # the model's context window: bounds the locate prompt

    def __post_init__(self) -> None:
        _coerce(self, "provider", Provider)
        _check(self.timeout > 0, f"timeout must be > 0, but got {self.timeout}")
        _check(0 <= self.max_retries <= 10, f"max_retries must be in 0..10, got {self.max_retries}")
        _check(
            self.context_tokens >= 1000,
            f"context_tokens must be >= 1000, but got {self.context_tokens}",
        )


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

    strategy: str = StrategyName.TREERAG.value
    locate: LocateSettings = field(default_factory=LocateSettings)
    retrieve: RetrieveSettings = field(default_factory=RetrieveSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    max_question_chars: int = 2000
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
