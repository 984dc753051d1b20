"""How many tokens the locate prompt's tree may use: the one rule, tied to the model's context."""

from __future__ import annotations

from dataclasses import dataclass

from treerag_core.base.errors import LLMError
from treerag_core.llm.prompts import estimate_tokens

LOCATE_REPLY_TOKENS = 1024  # room kept for the locator's JSON reply
ANSWER_REPLY_TOKENS = 1024  # room kept for the streamed answer
CONTEXT_MARGIN = 0.1  # our token estimate is rough: keep a tenth of the window free


@dataclass(frozen=True)
class TreeBudget:
    """Tokens the serialized tree may take, and in words where that number came from."""

    tokens: int
    why: str


def locate_tree_budget(
    budget_tokens: int,
    context_tokens: int,
    frame_tokens: int,
    reply_tokens: int = LOCATE_REPLY_TOKENS,
) -> TreeBudget:
    """min(the locate budget, what the model's context leaves after reply, frame and margin).

    Raises:
        LLMError: reason "context_too_small" when not even an empty tree fits.
    """
    room = int(context_tokens * (1 - CONTEXT_MARGIN)) - reply_tokens - frame_tokens
    if room <= 0:
        raise LLMError(
            f"the model's context ({context_tokens:,} tokens) cannot hold the locate prompt "
            f"({frame_tokens:,} tokens of instructions + {reply_tokens:,} for the reply): "
            "raise the context size setting",
            reason="context_too_small",
        )
    if room < budget_tokens:
        return TreeBudget(
            room,
            f"prompt budget: {room:,} tokens for the tree, set by the model's context "
            f"({context_tokens:,} tokens - {reply_tokens:,} reply - {frame_tokens:,} "
            f"instructions - {CONTEXT_MARGIN:.0%} margin; locate budget {budget_tokens:,})",
        )
    return TreeBudget(budget_tokens, f"prompt budget: {budget_tokens:,} tokens for the tree")


def fit_blocks(text: str, budget: int) -> tuple[str, int, int]:
    """The longest prefix of `text`'s node blocks (blank-line separated) within `budget` tokens.

    Returns (text, blocks kept, blocks in all); at least one block is kept.
    """
    blocks = text.split("\n\n")
    kept = 1
    used = estimate_tokens(blocks[0])
    while kept < len(blocks):
        cost = estimate_tokens(blocks[kept]) + 1
        if used + cost > budget:
            break
        used += cost
        kept += 1
    return "\n\n".join(blocks[:kept]), kept, len(blocks)


def check_fits(prompt: str, reply_tokens: int, context_tokens: int, what: str) -> None:
    """Raise rather than send a prompt the model's context cannot hold with its reply.

    Some local servers (Ollama) silently drop the start of a prompt that is too long; an
    answer from half the evidence must not pass for a real one.

    Raises:
        LLMError: reason "context_too_small".
    """
    need = estimate_tokens(prompt) + reply_tokens
    room = int(context_tokens * (1 - CONTEXT_MARGIN))
    if need > room:
        raise LLMError(
            f"the {what} prompt needs about {need:,} tokens with its reply, more than the "
            f"model's context ({context_tokens:,} tokens, {CONTEXT_MARGIN:.0%} kept free): "
            "raise the context size setting, or lower top-k / context chars",
            reason="context_too_small",
        )
