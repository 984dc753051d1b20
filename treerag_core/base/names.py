"""The names users pick from: fusion, locators, embedders, LLM providers, built-in strategies.

Every menu (CLI choices, explorer widgets) is built from these enums or from the strategy
registry, so a name is written once. Strategies are plug-ins: the registry
(`treerag_core.strategies`) is the list a user sees; `StrategyName` only names the built-ins
that code refers to directly.
"""

from __future__ import annotations

from enum import StrEnum


class _Named(StrEnum):
    @classmethod
    def parse(cls, value: str) -> _Named:
        """The member named `value`, or ValueError listing the valid names."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"{value!r} is not a valid {cls.__name__}; choose {valid}") from None

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class Fusion(_Named):
    """How dense and BM25 scores are combined."""

    WEIGHTED = "weighted"  # min-max each, then a weighted sum (LlamaIndex relative_score)
    RRF = "rrf"  # reciprocal rank fusion
    DBSF = "dbsf"  # distribution-based score fusion (mean ± 3 std)
    UNION = "union"  # either retriever's hit, once per chunk, by its better min-max score


class Locator(_Named):
    """Who picks the leaves in step 1."""

    AUTO = "auto"  # the LLM when one is configured, else local
    LLM = "llm"
    LOCAL = "local"
    KEYWORD = "keyword"  # the seed's mock: question terms against headings


class EmbedderName(_Named):
    """Built-in embedders; `st:<folder>` (a sentence-transformers folder) is accepted too."""

    MULTILINGUAL = "multilingual"
    MINILM = "minilm"
    E5 = "e5"
    HASHING = "hashing"


class Provider(_Named):
    """Which API the LLM client speaks."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"  # any OpenAI-compatible server: Ollama, vLLM, LM Studio, llama.cpp


# The collection a vector store (Qdrant, Milvus) keeps an index in unless the user names one.
DEFAULT_COLLECTION = "treerag"


class StrategyName(_Named):
    """The built-in strategies code refers to by name (the registry lists every strategy)."""

    TREERAG = "treerag"
    FLAT_STRUCTURED = "flat-structured"
    FLAT_HYBRID = "flat-hybrid"
    FLAT_DENSE = "flat-dense"
    FLAT_BM25 = "flat-bm25"
    ORACLE_SECTIONS = "oracle-sections"
