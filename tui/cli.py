"""The `ctxpane` command: the app by default, and headless subcommands for scripts."""

from __future__ import annotations

import sys

from tui.errors import UsageError, one_line

SUBCOMMANDS = {
    "render": ("tui.commands.render", "print the exact document a request would send (token counts on stderr)"),
    "doctor": ("tui.commands.doctor", "check a self-hosted server against the engine"),
    "replay": ("tui.commands.replay", "step through a saved session's requests"),
    "export": ("tui.commands.export", "export a saved session (markdown, request JSON, curl, document)"),
    "import": ("tui.commands.importer", "turn a request body, a JSONL of messages or an exported session into a "
                                        "session file"),
    "convert": ("tui.commands.convert", "rewrite session files of version 1 as version 2, in place, with a backup"),
    "tap": ("tui.commands.tap", "a local proxy: show and record the requests another program sends"),
}


def fail(message: str) -> int:
    """One line on stderr (file names and values from files may hold newlines or escapes), status 2."""
    print(f"ctxpane: error: {one_line(message)}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        import importlib

        module = importlib.import_module(SUBCOMMANDS[args[0]][0])
        try:
            result = module.run(args[1:])
            return result if isinstance(result, int) else open_in_app(result)
        except UsageError as exc:
            return fail(str(exc))
        except ValueError as exc:  # a session file found damaged only as a body is read from it (replay, export)
            from tui.sessions.model import SessionFormatError

            if isinstance(exc, SessionFormatError):
                return fail(str(exc))
            raise
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:  # e.g. `ctxpane render --json | head`
            sys.stderr.close()
            return 0
    answered = top_level_flags(args)
    if answered is not None:
        return answered
    from tui.app.launch import run_app

    return run_app(args)


def top_level_flags(args: list[str]) -> int | None:
    """`ctxpane --help` and `--version`, answered here: only the CLI knows every subcommand and the package."""
    flags = args[:args.index("--")] if "--" in args else args
    if "--version" in flags:
        print(f"ctxpane {package_version()}")
        return 0
    if "-h" in flags or "--help" in flags:
        print(help_text(), end="")
        return 0
    return None


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctxpane")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(version unknown: the package is not installed)"


def help_text() -> str:
    """The app's own options (its parser, unchanged), then every subcommand and --version."""
    import argparse

    from tui.app.launch import build_parser

    parser = build_parser()
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    width = max(map(len, SUBCOMMANDS))
    parser.epilog = "subcommands (ctxpane SUBCOMMAND -h for each):\n" + "\n".join(
        f"  {name:<{width}}  {summary}" for name, (_module, summary) in SUBCOMMANDS.items())
    return parser.format_help()


def open_in_app(request) -> int:
    """A subcommand that ends in the app (`replay FILE`, `tap`) hands its request here: commands never import the app."""
    if type(request).__name__ == "TapInApp":
        from tui.app.launch import run_tap

        return run_tap(request)
    from tui.app.launch import run_replay

    return run_replay(request.path, request.step)


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
