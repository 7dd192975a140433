"""`ctxpane import` keeps every parameter of the body it imports, and the app sends them again.
The first test failed on main (temperature and the rest were dropped)."""

import json

from tui.controller.workbench import Workbench
from tui.cli import main
from tui.sessions.session_template import template_from_session
from tui.sessions.store import load_session

PARAMS = {"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\n", "END"], "presence_penalty": 0.5,
          "frequency_penalty": -0.25, "logit_bias": {"50256": -100}, "n": 1, "user": "someone",
          "response_format": {"type": "json_object"}, "tool_choice": "auto", "parallel_tool_calls": False,
          "top_k": 40, "min_p": 0.05, "chat_template_kwargs": {"enable_thinking": False}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def import_body(tmp_path, capsys, body: dict):
    source = tmp_path / "body.json"
    source.write_text(json.dumps(body), encoding="utf-8")
    target = tmp_path / "imported.ctxpane.json"
    code = main(["import", str(source), "-o", str(target)])
    return code, target, capsys.readouterr()


def test_every_parameter_is_kept_and_sent_again(tmp_path, capsys):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}], "tools": TOOLS,
            "max_tokens": 99, **PARAMS}
    code, target, _ = import_body(tmp_path, capsys, body)
    assert code == 0
    session = load_session(target).session
    assert session.params == PARAMS
    assert session.policy["max_tokens"] == 99 and session.model == "gpt-4o" and session.tools == TOOLS
    bench = Workbench(session, template_from_session(session.template))
    sent = bench.request_body(bench.rebuild(), stream=False)
    assert {key: sent[key] for key in PARAMS} == PARAMS and sent["max_tokens"] == 99


def test_transport_fields_and_credentials_are_left_out_and_named(tmp_path, capsys):
    body = {"messages": [{"role": "user", "content": "Hi"}], "temperature": 1.1, "stream": True,
            "stream_options": {"include_usage": True}, "api_key": "sk-secret-value-0123456789"}
    code, target, out = import_body(tmp_path, capsys, body)
    assert code == 0
    assert load_session(target).session.params == {"temperature": 1.1}
    assert "sk-secret" not in target.read_text() and "sk-secret" not in out.out + out.err
    assert "api_key" in out.err and "stream" in out.err and len(out.err.splitlines()) == 1


def test_parameters_beyond_what_a_session_holds_give_one_line(tmp_path, capsys):
    body = {"messages": [{"role": "user", "content": "Hi"}], **{f"p{i}": i for i in range(1001)}}
    code, target, out = import_body(tmp_path, capsys, body)
    assert code == 2 and len(out.err.strip().splitlines()) == 1 and "params" in out.err
    assert not target.exists()
