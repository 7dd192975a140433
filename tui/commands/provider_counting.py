"""`render --provider-count KIND`: the provider's own count of the request, asked of the configured host.

Off unless asked for. The host is --base-url, else $OPENAI_BASE_URL; the key is $OPENAI_API_KEY (or the
variable --api-key-env names), sent only there, in the provider's own header.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from tui.client.endpoint import EndpointError, endpoint_for
from tui.client.http import Limits, OpenAIClient
from tui.client.provider_count import KINDS, CountKind, ProviderCount, provider_count
from tui.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider-count", choices=KINDS, default=None,
                        help="also ask the provider to count the request (OpenAI's input-token count, "
                             "Anthropic's count_tokens, Gemini's countTokens): sent to --base-url with the key")
    parser.add_argument("--base-url", default=None, help="the provider's base URL for --provider-count "
                                                        "(default $OPENAI_BASE_URL)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="variable holding the key for --provider-count (default OPENAI_API_KEY)")


def counted(args: argparse.Namespace, body: dict, local: int, exact: bool) -> ProviderCount | None:
    """The provider's count when --provider-count was given, else None."""
    if not args.provider_count:
        return None
    base = args.base_url or os.environ.get("OPENAI_BASE_URL", "")
    if not base:
        raise UsageError("--provider-count needs --base-url or $OPENAI_BASE_URL: the host to ask")
    try:
        endpoint = endpoint_for(base, "flag" if args.base_url else "$OPENAI_BASE_URL", body.get("model") or "",
                                args.api_key_env)
    except EndpointError as exc:
        raise UsageError(f"--base-url: {exc}") from None

    async def ask() -> ProviderCount:
        async with OpenAIClient(endpoint, Limits(connect=5.0, read=30.0, retries=1)) as client:
            return await provider_count(client, CountKind(args.provider_count), body, local, exact)
    return asyncio.run(ask())
