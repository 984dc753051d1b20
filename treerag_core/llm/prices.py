"""Prices of known hosted models, and the cost of a Usage: unknown models stay unpriced."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from treerag_core.base.types import Usage


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens; `cache_read` defaults to a tenth of `input`."""

    input: float
    output: float
    cache_read: float | None = None

    @property
    def cached_input(self) -> float:
        return self.input * CACHE_READ_FACTOR if self.cache_read is None else self.cache_read


# List prices (USD per million tokens) as published by each provider; they change: recheck
# them on the providers' pricing pages before relying on an estimate.
PRICES: dict[str, Price] = {
    # Anthropic
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    # OpenAI (cached input has its own price there)
    "gpt-4o": Price(2.5, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025),
    "o4-mini": Price(1.1, 4.4, 0.275),
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.4, 0.005),
}
CACHE_READ_FACTOR = 0.1  # Anthropic: a cache hit costs a tenth of the input price
CACHE_WRITE_FACTOR = 1.25  # Anthropic: writing the 5-minute cache costs a quarter more


def price_for(model: str) -> Price | None:
    """The price of a model name or one of its dated snapshots; None when not in the table."""
    name = model.strip()
    if name in PRICES:
        return PRICES[name]
    # "claude-haiku-4-5-20251001" is a snapshot of "claude-haiku-4-5"; longest name wins.
    for known in sorted(PRICES, key=len, reverse=True):
        if name.startswith(known + "-"):
            return PRICES[known]
    return None


def is_local_endpoint(base_url: str | None) -> bool:
    """True for a server on this machine or a private network (Ollama, vLLM, LM Studio...)."""
    if not base_url:
        return False
    host = (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()
    if host == "localhost" or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def estimate_cost(usage: Usage, model: str) -> float:
    """Estimated US dollars for `usage` on `model`; 0.0 for a model not in `PRICES`.

    Use `priced` to know whether 0.0 means "free" or "not estimated".
    `usage.input_tokens` excludes cached tokens.
    """
    price = price_for(model)
    if price is None:
        return 0.0
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cached_input
        + usage.cache_write_tokens * price.input * CACHE_WRITE_FACTOR
    )
    return dollars / 1_000_000


def priced(usage: Usage, model: str, base_url: str | None, reported: bool = True) -> Usage:
    """`usage` with its cost: the table's price; 0 for an unlisted model on a local server;
    otherwise (an unlisted hosted model, or a server that reported no usage) unknown.

    A listed model behind a local address (a proxy such as LiteLLM) keeps its list price.
    """
    if not reported:
        return replace(usage, model=model, cost_usd=0.0, cost_known=False)
    if price_for(model) is not None:
        return replace(usage, model=model, cost_usd=estimate_cost(usage, model), cost_known=True)
    local = is_local_endpoint(base_url)
    return replace(usage, model=model, cost_usd=0.0, cost_known=local)


def format_cost(usage: Usage) -> str:
    """The cost as shown to people: "$0.0012", or "price unknown" (never a made-up number)."""
    if not usage.cost_known:
        return "price unknown" + (f" ({usage.model})" if usage.model else "")
    return f"${usage.cost_usd:.4f}"
