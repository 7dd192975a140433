"""`ctxpane [FILE]`: parse the flags and start the app. Heavy imports wait until after parsing."""

from __future__ import annotations

import argparse
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxpane", description="Chat with an LLM and watch, live, what it is sent.",
                                     epilog="subcommands: render, doctor, replay, export (ctxpane SUBCOMMAND -h)")
    parser.add_argument("file", nargs="?", help="a session file to open")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL, then config.toml)")
    parser.add_argument("--model", help="model name")
    parser.add_argument("--api-key-env", help="variable holding the API key (default OPENAI_API_KEY)")
    parser.add_argument("--api", choices=("chat", "responses", "messages"),
                        help="the API the chat speaks to the endpoint: chat completions (default), OpenAI's Responses "
                             "or Anthropic's Messages")
    parser.add_argument("--template", help="chat template: built-in name or path")
    parser.add_argument("--tokenizer", help="tokenizer: o200k_base, cl100k_base, o200k_harmony, qwen3, or a path")
    parser.add_argument("--theme", help="theme name")
    parser.add_argument("--no-scan", action="store_true", help="do not look for a local server")
    parser.add_argument("--provider-count", choices=("openai", "anthropic", "gemini"),
                        help="before each send, also ask the provider to count the request (its input-token "
                             "count endpoint, on the same host, with the same key); off by default")
    parser.add_argument("--replay", action="store_true", help="open the session in replay mode")
    parser.add_argument("--tools", metavar="FILE", help="tool definitions to send (a JSON list; `risky`: reviewed "
                                                       "before a call may run; `command`: what runs it, shown first)")
    parser.add_argument("--review-base-url", metavar="URL", help="the isolated reviewer's own endpoint (default: the "
                                                                "chat's; it gets the same key variable)")
    parser.add_argument("--review-model", metavar="NAME", help="the model that reviews risky tool calls (default: the "
                                                               "chat's model)")
    return parser


def run_app(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    tools = None
    if args.tools:
        import sys

        from tui.context.untrusted.visible import visible
        from tui.sessions.tool_file import ToolFileError, read_tool_file
        try:
            tools = read_tool_file(Path(args.tools).expanduser())
        except ToolFileError as exc:
            print(f"ctxpane: error: {visible(str(exc))}", file=sys.stderr)
            return 2
    from tui.app.app import CtxpaneApp, LaunchOptions
    from tui.client.keys import keep_memory_private, withdraw_keys
    from tui.controller.tool_runner import stop_commands_on_signals

    # a tool's command can read neither our environment nor our memory for them
    withdraw_keys([args.api_key_env or "", configured_key_variable()])
    keep_memory_private()
    stop_commands_on_signals()
    options = LaunchOptions(file=Path(args.file).expanduser() if args.file else None,
                            flags={"base_url": args.base_url, "model": args.model, "api_key_env": args.api_key_env,
                                   "template": args.template, "tokenizer": args.tokenizer, "theme": args.theme,
                                   "no_scan": args.no_scan, "provider_count": args.provider_count,
                                   "api": args.api, "review_base_url": args.review_base_url,
                                   "review_model": args.review_model},
                            replay=args.replay, tools=tools)
    return _run(CtxpaneApp(options))


def configured_key_variable() -> str:
    """The key variable config.toml names (`api_key_env`), if any: withdrawn with the others as the app starts."""
    from tui.app.config import resolve

    settings, _problems = resolve({})
    return settings.api_key_env or ""


def run_replay(path: Path, step: int | None = None) -> int:
    """`ctxpane replay FILE`: the app on a checked session file, stepping through its requests."""
    from tui.app.app import CtxpaneApp, LaunchOptions

    return _run(CtxpaneApp(LaunchOptions(file=path, flags={"no_scan": True}, replay=True, replay_step=step)))


def _run(app) -> int:
    import sys
    app.run()
    if getattr(app, "build_failure", None):  # the controller could not be built: nothing was opened or saved
        from tui.context.untrusted.visible import visible
        print(f"ctxpane: {visible(app.build_failure)}", file=sys.stderr)
        return app.return_code or 1
    if app.save_failure:  # told once the terminal is back: the app's own screen is gone by now
        print(f"ctxpane: {app.save_failure}", file=sys.stderr)
        return app.return_code or 1
    line = "" if getattr(app, "replay_only", False) else app.closing_line()
    if line:  # where the session is, so the user finds it again; or, read-only, that nothing was saved and why
        from tui.context.untrusted.visible import visible
        print(f"ctxpane: {visible(line)}")
    return app.return_code or 0


def run_tap(request) -> int:
    """`ctxpane tap --upstream URL`: the proxy with its requests shown live (tui/app/tap_app.py)."""
    from tui.app.tap_app import TapApp

    app = TapApp(request.upstream, request.folder, request.host, request.port, request.max_body)
    app.run()
    import sys
    from tui.context.untrusted.visible import visible
    if app.failure:
        print(f"ctxpane: error: {visible(app.failure)}", file=sys.stderr)
    elif app.saved:
        print(f"ctxpane: {visible(app.saved)}")  # the files found written, not the conversations seen
    return app.return_code or 0
