"""Settings in the app, as controller transitions without Textual: checked, applied, saved; config.toml's
[policy] and [params] for new sessions; new sessions keep the server's template; reconnecting; a send
while connecting waits instead of being refused; a server that comes back is picked up."""

from __future__ import annotations



from conftest import free_port
from controller_helpers import Harness, connected, harness  # noqa: F401 - harness is a fixture
from fault_server import FaultServer
from tui.controller import tuning
from tui.controller.events import Notice, StatusChanged
from session_files import session_data
from waiting import eventually


def form(ctl, **changes) -> dict[str, str]:
    return ctl.tuning.values() | {k: str(v) for k, v in changes.items()}


def test_every_field_is_checked_with_a_one_line_error():
    _, errors = tuning.check({"context_window": "abc", "max_tokens": "-1", "temperature": "9", "top_p": "1.5",
                              "seed": "1.5", "name": "keep-none", "api_key_env": "sk-123 secret",
                              "base_url": "ftp://x", "keep_last": "0"})
    assert set(errors) == {"context_window", "max_tokens", "temperature", "top_p", "seed", "name", "api_key_env",
                           "base_url", "keep_last"}
    assert all("\n" not in line and line for line in errors.values())
    _, errors = tuning.check({"context_window": "300", "max_tokens": "300"})
    assert "max_tokens" in errors  # the reply's room is taken from the window: it cannot be all of it


async def test_settings_are_applied_saved_and_the_pane_recomputes(harness):
    ctl = await harness.ready()
    before = ctl.wb.view
    errors = ctl.tuning.apply(form(ctl, context_window=300, max_tokens=64, name="keep-last-n", keep_last=2,
                                   temperature="0.3", top_p="0.9", seed=7))
    assert errors == {}
    await harness.idle()  # past the save delay
    policy = ctl.wb.policy
    assert (policy.context_window, policy.max_tokens, policy.name, policy.keep_last) == (300, 64, "keep-last-n", 2)
    assert ctl.wb.session.params == {"temperature": 0.3, "top_p": 0.9, "seed": 7}
    assert ctl.wb.view is not before and ctl.wb.view.snapshot is not None
    body = ctl.wb.request_body(ctl.wb.view)
    assert body["temperature"] == 0.3 and body["seed"] == 7 and body["max_tokens"] == 64
    saved = session_data(ctl.file.session_file)
    assert saved["policy"]["context_window"] == 300 and saved["params"]["seed"] == 7
    # A cleared sampling field is no longer sent; a cleared window means "unknown".
    assert ctl.tuning.apply(form(ctl, temperature="", context_window="")) == {}
    assert "temperature" not in ctl.wb.session.params and ctl.wb.policy.context_window is None


async def test_a_wrong_form_changes_nothing(harness):
    ctl = await harness.ready()
    generation, policy = ctl.generation, ctl.wb.session.policy.copy()
    errors = ctl.tuning.apply(form(ctl, context_window=500, temperature="hot"))
    assert list(errors) == ["temperature"] and ctl.generation == generation and ctl.wb.session.policy == policy


async def test_the_form_shows_the_key_variable_never_the_key(harness, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value-123")
    ctl = await harness.ready()
    values = ctl.tuning.values()
    assert values["api_key_env"] == "OPENAI_API_KEY"
    assert not any("sk-very-secret" in value for value in values.values())


async def test_config_policy_and_params_are_taken_by_new_sessions(harness):
    ctl = await harness.ready()
    ctl.settings.policy = {"name": "drop-oldest", "context_window": 8192, "max_tokens": 512}
    ctl.settings.params = {"temperature": 0.2}
    ctl.new_session()
    await harness.idle()
    policy = ctl.wb.policy
    assert (policy.name, policy.context_window, policy.max_tokens) == ("drop-oldest", 8192, 512)
    assert ctl.wb.session.params == {"temperature": 0.2}


async def test_a_wrong_config_policy_is_said_and_defaults_used(harness):
    ctl = await harness.ready()
    ctl.settings.policy = {"name": "drop-everything", "colour": "red"}
    ctl.new_session()
    await harness.idle()
    assert ctl.wb.policy.name == "keep-all"
    said = " ".join(n.text for n in harness.of(Notice))
    assert "drop-everything" in said and "colour" in said


async def test_a_new_session_keeps_the_servers_template_and_window(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/llama")
        ctl = made.ctl
        server_template = ctl.link.connection.template
        assert ctl.wb.template is server_template
        ctl.new_session()
        await made.idle()
        assert ctl.wb.template is server_template, ctl.wb.template.name
        assert ctl.wb.policy.context_window == 4096
        assert not [m for m in ctl.wb.session.messages if m.role == "system"]  # no invented system prompt
        ctl.close()


async def test_a_send_while_connecting_waits_and_goes_once_connected(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = Harness(tmp_path, base_url=server.url + "/ok")
        ctl = await made.ready()
        ctl.connect()  # not awaited: the user presses Enter at once
        assert ctl.client is None
        assert ctl.submit("hello early")
        assert ctl.wb.session.messages[-1].text() == "hello early"
        assert not [n for n in made.of(Notice) if "offline" in n.text]
        assert any("connecting" in s.text for s in made.of(StatusChanged))
        await made.idle()
        assert ctl.wb.session.messages[-1].role == "assistant"
        assert server.requests and server.requests[-1]["body"]["messages"][-1]["content"] == "hello early"
        ctl.close()


async def test_a_server_that_comes_back_is_picked_up(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(tuning, "RETRY_FIRST", 0.2)
    port = free_port()
    made = Harness(tmp_path, base_url=f"http://127.0.0.1:{port}/ok")
    ctl = await made.ready()
    ctl.connect()
    await made.idle()
    assert ctl.client is None
    assert "trying again" in made.of(StatusChanged)[-1].text
    with FaultServer(delay=0.01, port=port):
        await eventually(lambda: ctl.client is not None, what="the controller connected to the server")
    ctl.close()


async def test_reconnect_switches_the_endpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as first, FaultServer(delay=0.01) as second:
        made = await connected(tmp_path, first.url + "/ok")
        ctl = made.ctl
        assert ctl.tuning.apply(form(ctl, base_url=second.url + "/ok")) == {}
        await made.idle()
        assert ctl.client is not None and ctl.client.endpoint.base_url.startswith(second.url)
        assert ctl.wb.session.base_url.startswith(second.url)
        ctl.close()


async def test_a_template_picked_while_the_server_renders_its_own_is_marked_what_if(tmp_path, monkeypatch):
    from tui.app.pane.header import TemplateStanding, summary_text
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(delay=0.01) as server:
        made = await connected(tmp_path, server.url + "/llama")
        ctl = made.ctl
        await made.idle()
        assert ctl.pane_state().what_if == ""
        ctl.set_template("chatml")
        await made.idle()
        pane = ctl.pane_state()
        assert pane.what_if.startswith("what-if") and "what-if" in made.of(StatusChanged)[-1].text
        line = summary_text(pane.view, pane.policy, None, standing=TemplateStanding.WHAT_IF).plain
        assert "(what-if)" in line and "exact" not in line  # this template's count is not what the server counts
        ctl.set_template("@server")
        await made.idle()
        assert ctl.pane_state().what_if == ""
        ctl.close()


async def test_a_key_variable_set_in_the_app_keeps_that_key_out_of_the_file(harness, monkeypatch):
    secret = "sk-other-variable-secret-42"
    monkeypatch.setenv("OTHER_KEY", secret)
    ctl = await harness.ready()
    assert ctl.tuning.apply(form(ctl, api_key_env="OTHER_KEY")) == {}
    ctl.set_system_prompt(f"my key is {secret}")  # the user's words: kept as written
    from tui.sessions.model import RequestRecord
    ctl.wb.session.requests.append(RequestRecord(1, "t", {"messages": []}, reply={"error": f"bad key {secret}"}))
    ctl.file.autosave(now=True)
    await harness.idle()
    text = ctl.file.session_file.read_text()
    assert text.count(secret) == 1 and f"my key is {secret}" in text  # in the words, nowhere else
    assert session_data(ctl.file.session_file)["requests"][0]["reply"]["error"] == "bad key ***" and "OTHER_KEY" not in ctl.tuning.values()["base_url"]
