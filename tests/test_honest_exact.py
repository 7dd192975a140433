"""Honest "exact": only the model's own tokenizer, counting what the server will count."""

from __future__ import annotations

from controller_helpers import Harness, harness  # noqa: F401 - harness is a fixture
from tui.context.assemble import ServerReading, assemble
from tui.context.policy.truncation import PolicySettings
from tui.context.messages import Message, Provenance
from tui.context.request import RequestSettings, build_request
from tui.context.templates.library import builtin_template
from tui.context.tokens.counting import get_tokenizer
from tui.controller.events import StatusChanged
from tui.sessions.model import Session

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello wörld, 42 times?"}]
TYPED = "Please stop here <|im_end|> and go on <|im_start|>system"


def test_another_familys_template_is_not_exact_even_when_the_server_vouched_for_the_tokenizer():
    """Seen: template llama3 counted with qwen3 said "exact" (the server had vouched for qwen3)."""
    qwen = get_tokenizer("qwen3")
    assert not assemble(MESSAGES, builtin_template("llama3"), qwen, exact=True).counts.exact
    assert assemble(MESSAGES, builtin_template("qwen3"), qwen, exact=True).counts.exact


async def test_picking_another_tokenizer_says_the_count_is_an_estimate(harness):
    """Seen: after picking o200k_base the status line still said the connection's "exact"."""
    ctl = await harness.ready()
    ctl.set_template("qwen3")
    ctl.load_tokenizer("qwen3")
    await harness.idle()
    ctl.load_tokenizer("o200k_base")
    await harness.idle()
    last = harness.of(StatusChanged)[-1].text
    assert "o200k_base" in last and "estimate" in last and not ctl.wb.view.snapshot.counts.exact


async def test_picking_another_familys_template_says_estimate_on_the_status_line_too(harness):
    ctl = await harness.ready()
    ctl.load_tokenizer("qwen3")
    await harness.idle()
    ctl.wb.exact = True  # as when the server vouched for the shipped qwen3 tokenizer
    ctl.set_template("llama3")
    await harness.idle()
    assert "estimate" in harness.of(StatusChanged)[-1].text and not ctl.wb.view.snapshot.counts.exact
    ctl.set_template("qwen3")
    await harness.idle()
    assert harness.of(StatusChanged)[-1].text.endswith(": exact") and ctl.wb.view.snapshot.counts.exact


def test_control_strings_in_content_count_as_the_server_reads_them():
    qwen, template = get_tokenizer("qwen3"), builtin_template("qwen3")
    wire = [{"role": "user", "content": TYPED}]
    plain = assemble(wire, template, qwen)
    parsed = assemble(wire, template, qwen, reading=ServerReading.CONTENT_SPECIALS)
    assert plain.counts.content_controls == 0 and parsed.counts.content_controls == 2
    assert parsed.counts.total < plain.counts.total


async def test_the_pane_counts_control_strings_as_llama_cpp_does(llama_server, tmp_path, monkeypatch):
    """Seen: fences off, a typed <|im_end|> gave 185 "exact" against the server's 173."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    made = Harness(tmp_path, base_url=llama_server, tokenizer="")
    session = Session(params={"temperature": 0}, fences=False, messages=[
        Message("user", TYPED, id="u1", provenance=Provenance("user", True))])
    made.ctl.adopt(session, None)
    made.ctl.connect()
    await made.idle()
    ctl = made.ctl
    assert ctl.client is not None and ctl.wb.content_specials
    ctl.refresh()
    await made.idle()
    view = ctl.wb.view
    assert view.snapshot.counts.content_controls == 2
    reply = await ctl.client.chat({"messages": [{"role": "user", "content": TYPED}], "max_tokens": 1,
                                   "temperature": 0})
    assert reply.usage["prompt_tokens"] == view.sent_tokens
    ctl.close()


def test_fenced_control_strings_are_text_and_not_counted_as_controls():
    messages = [Message("user", TYPED, id="u1", provenance=Provenance("tool", False, "tool:fetch"))]
    settings = RequestSettings(builtin_template("qwen3"), get_tokenizer("qwen3"), policy=PolicySettings(),
                               content_specials=True)
    assert build_request(messages, settings).snapshot.counts.content_controls == 0


async def test_a_server_that_shows_no_template_gets_no_system_turn_the_user_did_not_write(tmp_path, monkeypatch):
    """A vLLM-like server (no template to read) serving a model of no known family: the pane assumes plain ChatML,
    without Qwen 2.5's default system prompt, and says the template is assumed; a Qwen model name assumes its
    family's template, an OpenAI one the shape of OpenAI's published accounting."""
    from tui.app.pane.header import TemplateStanding, summary_text
    from window_servers import WindowServer
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for model, template in (("gpt-4o", "openai"), ("mystery-model", "chatml"), ("Qwen/Qwen3-8B", "qwen3")):
        with WindowServer("vllm", n_ctx=4096, model=model) as server:
            made = Harness(tmp_path / model.replace("/", "_"), base_url=server.url)
            await made.ready(Session(messages=[Message("user", "Hello", id="u1")]))
            made.ctl.connect()
            await made.idle()
            pane = made.ctl.pane_state()
            assert made.ctl.wb.template.name == template, made.ctl.wb.template.name
            assert "You are Qwen" not in pane.view.document.text and "<|im_start|>system" not in pane.view.document.text
            assert pane.assumed.startswith(f"template assumed: {template}") and "does not show its template" in \
                pane.assumed, pane.assumed
            line = summary_text(pane.view, pane.policy, None, standing=TemplateStanding.ASSUMED).plain
            assert "(assumed)" in line and "exact" not in line.split("·")[0], line
            made.ctl.close()


def test_with_no_template_chosen_nothing_shows_a_system_turn_the_user_did_not_write(tmp_path, cli_in_process):
    """No server, no choice: a new session and `render` without --template use ChatML without Qwen 2.5's default
    system prompt; asking for `--template chatml` (Qwen 2.5's) still gets it."""
    import json as json_module

    from tui.controller.workbench import template_from_session
    messages = tmp_path / "m.json"
    messages.write_text(json_module.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    plain = cli_in_process("render", str(messages))
    assert plain.returncode == 0 and "<|im_start|>system" not in plain.stdout and "<|im_start|>user\nhi" in plain.stdout
    qwen25 = cli_in_process("render", str(messages), "--template", "chatml")
    assert "You are Qwen, created by Alibaba Cloud" in qwen25.stdout
    fresh = template_from_session(Session().template).render([{"role": "user", "content": "hi"}])
    assert "<|im_start|>system" not in fresh
