"""`ctxpane doctor URL`: check a self-hosted server against the engine before trusting it."""

from __future__ import annotations

import argparse
import asyncio
import sys

from rich.console import Console
from rich.text import Text

from tui.client.doctor.server import run_doctor
from tui.client.doctor.report import Report
from tui.client.endpoint import Endpoint, EndpointError
from tui.client.errors import ClientError
from tui.client.http import Limits, OpenAIClient
from tui.client.doctor.window import MAX_AUTO
from tui.commands.arguments import QuietParser, seconds
from tui.commands.terminal import json_text
from tui.context.untrusted.visible import visible
from tui.errors import UsageError, one_line

MARKS = {"ok": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "red"), "skip": ("-", "dim")}


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane doctor", description="Check a server's template, tokens and cache.")
    parser.add_argument("url", help="base URL, with or without /v1")
    parser.add_argument("--model", default="", help="model to check (default: the server's first)")
    parser.add_argument("--api-key-env", default=None, help="variable holding the API key (default OPENAI_API_KEY)")
    parser.add_argument("--timeout", type=seconds(0, 3600), default=30.0, metavar="SECONDS",
                        help="read timeout in seconds (above 0, at most 3600)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--window-check", choices=("auto", "on", "off"), default="auto",
                        help="send a request just over the server's window to see whether it refuses, cuts "
                             f"silently or shifts (auto: only for windows up to {MAX_AUTO:,} tokens)")
    return parser


async def _doctor(endpoint: Endpoint, timeout: float, window_check: str = "auto") -> Report:
    async with OpenAIClient(endpoint, Limits(connect=5.0, read=timeout, retries=2)) as client:
        return await run_doctor(client, window_check)


def print_report(report: Report) -> None:
    console = Console(highlight=False)
    console.print(Text(visible(f"ctxpane doctor {report.url}"), "bold"))
    for check in report.checks:
        mark, style = MARKS[check.status]
        console.print(Text(f" {mark} {check.name}: ", style) + Text(visible(check.detail)))
        if check.name == "rendering" and "ours" in check.data:
            console.print(Text(f"     ours:   {check.data['ours']!r}", "dim"))
            console.print(Text(f"     server: {check.data['server']!r}", "dim"))
    verdict = {0: ("all good", "green"), 1: ("problems found", "yellow")}[report.exit_code]
    console.print(Text(verdict[0], f"bold {verdict[1]}"))


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        endpoint = Endpoint.from_env(args.url, args.model, args.api_key_env)
    except EndpointError as exc:
        raise UsageError(str(exc)) from None
    try:
        report = asyncio.run(_doctor(endpoint, args.timeout, args.window_check))
    except ClientError as exc:
        print(one_line(f"ctxpane doctor: could not check {endpoint.base_url}: {exc}"), file=sys.stderr)  # server text
        return 2
    if args.json:
        print(json_text(report.to_json()))
    else:
        print_report(report)
    return report.exit_code
