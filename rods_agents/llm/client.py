"""Chat clients of the LLM backbone: construction, an endpoint preflight and transport errors.

Timeouts and transport retries are the OpenAI client's own (``timeout``, ``max_retries`` through
``ChatOpenAI``); nothing here retries a connection by hand. A transport failure that survives the
client's retries is an :class:`EndpointUnreachable` (reported as ``llm_unreachable``), kept apart
from answers that arrive but are invalid (``llm_invalid_output``).
"""

from __future__ import annotations

import os
from typing import Any

from rods_agents.run.context import SynthesisContext
from rods_agents.run.outcome import LLMUsage


class EndpointUnreachable(ConnectionError):
    """An OpenAI-compatible endpoint could not be reached (or refused every request); names the URL."""

    def __init__(self, base_url: str | None, cause: str):
        self.base_url = base_url
        self.cause = cause
        super().__init__(f"cannot reach the OpenAI-compatible endpoint at {base_url or 'the default OpenAI URL'}: {cause}")


def default_api_key() -> str:
    """The key from ``OPENAI_API_KEY``; vLLM accepts any key, so a placeholder when unset."""
    return os.environ.get("OPENAI_API_KEY") or "EMPTY"


def preflight(base_url: str | None, api_key: str | None = None, timeout: float = 5.0) -> None:
    """GET ``{base_url}/models`` once, with a short timeout and no retries; raise EndpointUnreachable on failure.

    Called before a run starts so an unreachable endpoint is one clear error (exit 2), not a run of
    samples that each fail.
    """
    from openai import APIConnectionError, APIStatusError, OpenAI

    client = OpenAI(base_url=base_url, api_key=api_key or default_api_key(), timeout=timeout, max_retries=0)
    try:
        client.models.list()
    except APIConnectionError as exc:  # includes APITimeoutError
        raise EndpointUnreachable(base_url, f"{type(exc).__name__}: {exc}") from None
    except APIStatusError as exc:
        raise EndpointUnreachable(base_url, f"HTTP {exc.status_code} from GET /models") from None
    finally:
        client.close()


def is_transport_error(exc: BaseException) -> bool:
    """True for failures of the connection or the server (after the client's own retries), not of the answer."""
    try:
        from openai import APIConnectionError, APIStatusError
    except ImportError:  # pragma: no cover - openai is a dependency
        return False
    if isinstance(exc, APIConnectionError | EndpointUnreachable | TimeoutError | ConnectionError):
        return True
    return isinstance(exc, APIStatusError) and (exc.status_code >= 500 or exc.status_code in (401, 403, 404, 429))


def usage_of(message: Any) -> LLMUsage:
    """Tokens of one answer from LangChain's ``usage_metadata`` (zeros when the model reports none)."""
    meta = getattr(message, "usage_metadata", None) or {}
    return LLMUsage(calls=1, prompt_tokens=int(meta.get("input_tokens", 0) or 0),
                    completion_tokens=int(meta.get("output_tokens", 0) or 0))


def usage_of_error(exc: BaseException) -> LLMUsage:
    """Tokens a failed call still spent: an answer cut by the token cap (``LengthFinishReasonError``)
    carries its completion and usage; anything else counts as one call without tokens."""
    usage = getattr(getattr(exc, "completion", None), "usage", None)
    return LLMUsage(calls=1, prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))


def build_chat_models(ctx: SynthesisContext) -> list[Any]:
    """``ctx.chat_models`` if given, else one ``ChatOpenAI`` per model name with timeout, retries and token cap."""
    if ctx.chat_models:
        return list(ctx.chat_models) if isinstance(ctx.chat_models, list | tuple) else [ctx.chat_models]
    from langchain_openai import ChatOpenAI

    extra = {"extra_body": dict(ctx.extra_body)} if ctx.extra_body else {}
    return [ChatOpenAI(model=m, base_url=ctx.base_url, api_key=default_api_key(), temperature=ctx.temperature,
                       top_p=ctx.top_p, max_tokens=ctx.max_tokens, timeout=ctx.request_timeout_s,
                       max_retries=ctx.client_max_retries, **extra) for m in ctx.models]
