"""SDK failures as LLMError with a reason: the HTTP status rules both providers share."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from treerag_core.base.errors import LLMError

_TAGS = re.compile(r"<[^>]+>")


def public_url(url: str) -> str:
    """`url` safe to show and record: any user:password part removed."""
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return url
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrub(text: str, secret: str) -> str:
    """`text` with the key replaced, so no message, log or trace ever shows it."""
    return text.replace(secret, "***") if secret else text


def clean_detail(detail: str, secret: str, limit: int = 300) -> str:
    """A server's error text made safe and short; an HTML page is named, not quoted."""
    text = scrub(str(detail or ""), secret).strip()
    if text.lstrip().startswith("<") or "<html" in text.lower():
        title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        name = _TAGS.sub("", title.group(1)).strip() if title else ""
        return "an HTML page" + (f" ({name[:80]})" if name else "") + ", not an API reply"
    return text[:limit]


def status_error(
    label: str, status: int, kind: str, detail: str, model: str, key_env: str
) -> LLMError:
    """The LLMError for an HTTP error status from `label` (e.g. "OpenAI at http://...")."""
    tag = f"HTTP {status}" + (f", {kind}" if kind else "")
    if status == 401:
        return LLMError(f"{label} rejected the API key ({tag}): check {key_env}.", reason="auth")
    if status == 403:
        return LLMError(f"{label} refused the request ({tag}): {detail}", reason="forbidden")
    if status == 404:
        if "model" in f"{kind} {detail}".lower():
            return LLMError(
                f"{label} has no model {model!r} ({tag}): {detail}", reason="model_not_found"
            )
        return LLMError(
            f"{label} answered 404 ({tag}): wrong base URL path? {detail}", reason="not_found"
        )
    if status == 413:
        return LLMError(
            f"{label} says the request is too large ({tag}): lower the context size setting.",
            reason="too_large",
        )
    if status == 429:
        return LLMError(
            f"{label} rate limit ({tag}) after the configured retries: wait, or raise max_retries.",
            reason="rate_limit",
        )
    return LLMError(f"{label} API error ({tag}): {detail}", reason="api_error")


# The transport failures both providers turn into LLMError, one message each; `label` names
# the server as the provider says it ("Anthropic at https://...", "http://127.0.0.1:8080").


def no_reply(label: str, timeout: float, hint: str = "") -> LLMError:
    return LLMError(
        f"No reply from {label} within {timeout:g} s (timeout): retry, or raise the "
        f"time-out{hint}.",
        reason="timeout",
    )


def cut_reply(label: str) -> LLMError:
    return LLMError(
        f"{label} closed the connection mid-reply: the reply is incomplete and was not used.",
        reason="incomplete",
    )


def malformed(label: str, what: str) -> LLMError:
    message = f"{label} sent malformed stream data ({what}): not used."
    return LLMError(message, reason="bad_response")


def sdk_error(sdk: str, err: Exception, secret: str) -> LLMError:
    message = scrub(f"{sdk} SDK error: {type(err).__name__}: {err}", secret)
    return LLMError(message, reason="api_error")
