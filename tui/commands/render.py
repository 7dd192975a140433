"""`ctxpane render FILE`: the document a request would send, byte for byte on stdout, headless."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from tui.commands.arguments import CONTEXT_WINDOW, KEEP_LAST, MAX_TOKENS, QuietParser, whole_number
from tui.context.policy.truncation import TRIM_RANGE
from tui.commands.inputs import Conversation, open_template, open_tokenizer, parse_vars, read_conversation
from tui.commands.provider_counting import add_arguments as add_provider_count, counted
from tui.commands.render_figures import figures
from tui.commands.render_output import write_document, write_json, write_summary
from tui.commands.sessions_common import session_engine
from tui.context.policy.truncation import POLICIES, PolicyError, PolicySettings
from tui.context.cache.prefix import RULES
from tui.context.formats.kinds import KINDS
from tui.context.untrusted.fences import FenceStyle
from tui.context.assumed import assumed_template, assumed_tokenizer, provably_exact
from tui.context.request import RequestSettings, RequestView, build_request
from tui.context.templates.hf_render import TemplateRenderError
from tui.context.families.registry import offline_cache_rule
from tui.context.untrusted.visible import visible
from tui.errors import UsageError, one_line
from tui.sessions.model import Session

__all__ = ["QuietParser", "build_parser", "run"]  # QuietParser: still importable from here

DESCRIPTION = """Render a conversation as the model receives it.

stdout: the document, byte for byte as the template produces it (UTF-8, no
wrapping, no newline added): `ctxpane render FILE > doc.txt` holds exactly the
document. On a terminal it is shown instead role-coloured, with visible
stand-ins for control characters and escapes.
stderr: the findings (control strings, forged headers, fences, kept and dropped
messages, cache) and the token table; --quiet leaves them out. --json prints
everything as one JSON object on stdout.
A session file renders with the session's template, tokenizer, variables,
tools, policy and fences; a flag given here overrides the session's setting."""


def build_parser() -> argparse.ArgumentParser:
    parser = QuietParser(prog="ctxpane render", description=DESCRIPTION,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="JSON list of messages, a request body (chat completions, Anthropic Messages, "
                                     "OpenAI Responses), or a session file")
    parser.add_argument("--format", choices=KINDS, default=None, dest="wire",
                        help="the body's API (default: told by its fields)")
    parser.add_argument("--template", default=None, help="built-in name or path (.jinja, tokenizer_config.json, "
                                                         ".gguf); default: the session's, else the model's "
                                                         "family's, else chatml")
    parser.add_argument("--tokenizer", default=None, help="o200k_base, o200k_harmony, cl100k_base, qwen3, or a "
                                                          "tokenizer.json; default: the session's, else the template's")
    parser.add_argument("--var", action="append", default=[], metavar="KEY=VALUE",
                        help="template variable (over the session's)")
    parser.add_argument("--no-generation-prompt", action="store_true", help="do not end with the assistant header")
    parser.add_argument("--json", action="store_true", help="print the document, spans and counts as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the document only, no summary on stderr")
    parser.add_argument("--policy", choices=POLICIES, default=None, help="truncation policy (default keep-all)")
    parser.add_argument("--context", type=whole_number(*CONTEXT_WINDOW), default=None, metavar="N",
                        help="context window in tokens (1 to 10^8)")
    parser.add_argument("--max-tokens", type=whole_number(*MAX_TOKENS), default=None, metavar="N",
                        help="tokens reserved for the reply (0 to 10^7)")
    parser.add_argument("--keep-last", type=whole_number(*KEEP_LAST), default=None, metavar="N",
                        help="turns kept by keep-last-n (1 to 10^6, default 4)")
    parser.add_argument("--trim-over", type=whole_number(*TRIM_RANGE), default=None, metavar="N",
                        help="curated: an item over N tokens keeps only its lines relevant to the question "
                             "(20 to 10^6, default 400)")
    parser.add_argument("--summary", default=None, help="summary text standing in for dropped turns (summarise)")
    parser.add_argument("--no-fences", action="store_true", help="send untrusted text without fences")
    parser.add_argument("--previous", default=None, metavar="FILE", help="the previous request, for the cache prefix")
    parser.add_argument("--cache-rule", choices=RULES, default=None,
                        help="provider rule for cached tokens (default: the model's provider's, else llama.cpp)")
    parser.add_argument("--model", default=None, help="model to price the request for (default: the body's or "
                                                      "the session's)")
    parser.add_argument("--prices", default=None, metavar="FILE",
                        help="a price table (TOML) over the shipped one (default: prices.toml in the config folder)")
    add_provider_count(parser)
    return parser


def engine(args: argparse.Namespace, conversation: Conversation):
    """Template, tokenizer, variables: the flags' if given, else the session's, else the defaults."""
    session = conversation.session
    if session is not None:
        template, tokenizer = session_engine(session, args.template, args.tokenizer)
        return template, tokenizer, {**session.variables, **parse_vars(args.var)}
    model = args.model or conversation.model  # the model the body names decides the family
    template = open_template(args.template) if args.template else assumed_template(model)[0]
    tokenizer = open_tokenizer(args.tokenizer or assumed_tokenizer(model, template, chosen=bool(args.template)))
    return template, tokenizer, parse_vars(args.var)


def chose_template(session) -> bool:
    """Did someone choose this session's template (a server's, a pick in the app), or is it the default that
    nobody chose (a new session, an import of a body whose model names no family)?"""
    return session is not None and session.template != Session().template


def policy(args: argparse.Namespace, base: PolicySettings) -> PolicySettings:
    """The session's (or the default) policy with each policy flag that was given put over it."""
    given = {"name": args.policy, "context_window": args.context, "max_tokens": args.max_tokens,
             "keep_last": args.keep_last, "summary": args.summary, "trim_over": args.trim_over}
    try:
        return replace(base, **{key: value for key, value in given.items() if value is not None})
    except PolicyError as exc:
        raise UsageError(str(exc)) from None


def request_settings(args: argparse.Namespace, conversation: Conversation) -> RequestSettings:
    session = conversation.session
    template, tokenizer, variables = engine(args, conversation)
    base = session.policy_settings() if session is not None else PolicySettings()
    fences = (session.fences if session is not None else True) and not args.no_fences
    model = args.model or conversation.model or ""
    return RequestSettings(template, tokenizer, variables, conversation.tools, not args.no_generation_prompt,
                           policy(args, base), FenceStyle(enabled=fences), args.cache_rule or offline_cache_rule(model),
                           exact=provably_exact(model, template, chosen=bool(args.template) or chose_template(session)),
                           model=model,
                           base_url=session.base_url if session is not None else "",
                           prefill=conversation.format == "messages")


def build(messages, settings: RequestSettings, previous=None, number: int = 1) -> RequestView:
    try:
        return build_request(messages, settings, previous, number)
    except TemplateRenderError as exc:
        raise UsageError(f"template {settings.template.name} rejected the conversation: {exc}") from None
    except (MemoryError, RecursionError) as exc:  # a template from outside that runs away
        raise UsageError(f"template {settings.template.name} failed: {type(exc).__name__}") from None


def run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    conversation = read_conversation(args.file, args.wire)
    settings = request_settings(args, conversation)
    previous = None
    if args.previous:
        before = read_conversation(args.previous, args.wire)
        previous = build(before.messages, replace(settings, tools=before.tools))
    view = build(conversation.messages, settings, previous.shape if previous else None, 2 if previous else 1)
    notes = list(conversation.notes)  # what the body's format says beside its messages
    if conversation.format == "messages" and conversation.parsed is not None:
        from tui.context.cache.anthropic_marks import breakpoint_notes, drawn_marks
        notes = breakpoint_notes(conversation.parsed, view, settings.model) + notes
        view = replace(view, marks=drawn_marks(conversation.parsed, view))
    if notes:
        view = replace(view, hidden=replace(view.hidden, notes=[*notes, *view.hidden.notes]))
    extra, problems = figures(args, conversation, view, settings.policy, previous)
    if conversation.session is None:
        extra["format"] = conversation.format
        if view.marks:
            extra["breakpoints"] = [{"offset": offset, "text": text} for offset, text in view.marks]
    for problem in problems:  # a bad prices.toml in the config folder: the shipped prices are used
        print(one_line(f"ctxpane render: {problem}"), file=sys.stderr)
    body = {"model": settings.model, "messages": view.snapshot.wire, **({"tools": settings.tools} if settings.tools
                                                                        else {})}
    provider = counted(args, body, view.sent_tokens, view.snapshot.counts.exact)
    if provider is not None:
        extra["provider_count"] = provider.to_dict()
    if args.json:
        write_json(view, extra=extra)
        return 0
    write_document(view.snapshot)
    if not args.quiet:
        write_summary(view, extra)
    if provider is not None:  # said even with --quiet: it was asked for
        print(visible(provider.line()), file=sys.stderr)
    return 0
