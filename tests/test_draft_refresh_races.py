"""The settle after spliced keys re-reads the spliced document (request.refreshed_after_splice) instead of
rendering again. Found by a review: a key typed right after a change, before that change's computation was applied,
was spliced into the view from before the change, and the refresh kept the old conversation in the pane. Now a key
splices only a view of the state as it is. And a template whose text depends on the draft's (GLM-4.5 appends
/nothink unless the message ends with it) is caught by the full computation once typing has paused for a while."""

from __future__ import annotations

from controller_helpers import harness  # noqa: F401 - a fixture
from tui.context.messages import Message, Provenance
from tui.context.templates.library import ChatTemplate
from tui.controller.view_updates import FULL_SETTLE


def differing(a, b):
    return [name for name in b.__dataclass_fields__ if getattr(a, name) != getattr(b, name)]


async def _typing(harness, session=None):
    ctl = await harness.ready(session)
    ctl.set_draft("a")
    await harness.idle()
    ctl.set_draft("ab")
    await harness.idle()
    assert ctl.updates._probed is ctl.wb.template  # noqa: SLF001 - from here keys are spliced
    return ctl


async def test_a_key_right_after_the_system_prompt_changes_keeps_the_old_prompt_in_the_pane(harness):
    ctl = await _typing(harness)
    ctl.set_system_prompt("You are verbose and PIRATE-LIKE.")  # a change: its computation is spawned
    ctl.set_draft("abc")                                       # the next key, before it is applied
    await harness.idle()                                        # the change's result is dropped as stale; the settle refreshes
    full = ctl.wb.compute()
    assert "PIRATE-LIKE" in full.document.text
    assert "PIRATE-LIKE" in ctl.wb.view.document.text, differing(ctl.wb.view, full)


async def test_a_key_right_after_editing_the_last_message_keeps_the_old_text(harness):
    ctl = await _typing(harness)
    ctl.edit(3, "And the price in euros?")  # the last message: edited in place (no branch, same count)
    ctl.set_draft("abc")
    await harness.idle()
    full = ctl.wb.compute()
    assert "in euros" in full.document.text
    assert "in euros" in ctl.wb.view.document.text, differing(ctl.wb.view, full)


async def test_a_key_right_after_fences_are_toggled_keeps_the_old_fencing(harness):
    from controller_helpers import conversation
    session = conversation()
    session.messages.append(Message("tool", "fetched page text", provenance=Provenance.for_source("tool", "tool:web"),
                                    id="t1"))
    session.fences = True
    ctl = await _typing(harness, session)
    assert "<untrusted" in ctl.wb.view.document.text
    ctl.toggle_fences()  # fences off
    ctl.set_draft("abc")
    await harness.idle()
    full = ctl.wb.compute()
    assert "<untrusted" not in full.document.text
    assert differing(ctl.wb.view, full) == []


GLM_LIKE = (  # GLM-4.5's user turn, as its model files ship it (and llama.cpp's /props serves it)
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}<|system|>\n{{ m.content }}"
    "{%- elif m.role == 'user' -%}<|user|>\n{{ m.content }}"
    "{{- '/nothink' if (enable_thinking is defined and not enable_thinking and not m.content.endswith(\"/nothink\"))"
    " else '' -}}"
    "{%- elif m.role == 'assistant' -%}<|assistant|>\n{{ m.content }}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>\n{%- endif -%}")


async def test_a_template_that_reads_the_draft_is_rendered_in_full_once_typing_pauses(harness):
    ctl = await harness.ready()
    ctl.wb.set_template(ChatTemplate("glm-4.5", "server:test", GLM_LIKE, {}))
    ctl.wb.session.variables = {"enable_thinking": False}
    ctl.refresh()
    await harness.idle()
    for text in ("answer briefly", "answer briefly /", "answer briefly /nothink"):
        ctl.set_draft(text)
        await harness.idle()
    await harness.runtime.idle(horizon=FULL_SETTLE + 1)  # the pause after the last key
    assert ctl.wb.view.document.text == ctl.wb.compute().document.text
    assert ctl.wb.view.document.text.endswith("answer briefly /nothink<|assistant|>")
