"""The cache model rebuilt from a session file: what the records keep is enough to predict every request
again, old files (without the generated tokens) still replay, and the new fields are checked."""

import hashlib
import json

import pytest

from conftest import ROOT, start_llama_server
from test_cache_server import Session, facts, system
from tui.context import get_tokenizer, message_from_dict
from tui.context.cache.llamacpp import LlamaCppCache
from tui.sessions.cache_replay import replay_cache, seconds
from tui.sessions.model import RequestRecord, Session as SessionFile, SessionFormatError
from tui.sessions.parse import session_from_dict
from tui.sessions.replay import Replayer
from tui.sessions.session_template import template_from_session
from tui.sessions.store import load_session, save_session


class RecordingSession(Session):
    """Sends like test_cache_server.Session and keeps a request record of each, as the app would."""

    def __init__(self, url, model):
        super().__init__(url, model)
        self.records: list[RequestRecord] = []

    def send(self, name, history, question):
        super().send(name, history, question)
        held = self.last
        wire = [message_from_dict(item, i).to_wire() for i, item in enumerate(history[:-1])]
        predicted, cache_n = self.rows[-1][1], self.rows[-1][2]
        reply = {"content": history[-1]["content"], "generated": list(held.reply_pieces),
                 "usage": {"prompt_tokens": held.prompt_tokens}, "timings": {"predicted_n": held.generated}}
        self.records.append(RequestRecord(
            self.number, f"2026-01-01T10:00:{self.number:02d}+00:00", {"messages": wire}, reply,
            usage={"prompt_tokens": held.prompt_tokens}, cached_reported=cache_n,
            timings={"cache_n": cache_n, "predicted_n": held.generated},
            document_hash=hashlib.sha256(held.shape.text.encode()).hexdigest(), document_tokens=held.prompt_tokens,
            predicted_cached=predicted, cache_source=self.rows[-1][3], cache_place=self.rows[-1][4],
            cache_class=self.rows[-1][5], message_ids=list(held.shape.message_ids)))


@pytest.mark.server
def test_a_recorded_session_predicts_every_request_again(tmp_path):
    url, stop = start_llama_server(LLAMA_PARALLEL="1")
    try:
        live = RecordingSession(url, LlamaCppCache(facts(url).config()))
        a, b = [system("apples")], [system("bananas")]
        for name, talk, question in (("A1", a, "A?"), ("A2", a, "More A?"), ("B1", b, "B?"), ("A3", a, "A again?")):
            live.send(name, talk, question)
        live.check()
    finally:
        stop()
    template = live.settings.template
    session = SessionFile(model="tiny-qwen3", tokenizer="qwen3", fences=False, requests=live.records,
                          template={"name": template.name, "origin": template.origin, "text": template.source})
    path = tmp_path / "cache.ctxpane.json"
    save_session(session, path)
    loaded = load_session(path).session
    assert [r.cache_source for r in loaded.requests] == [r[3] for r in live.rows]
    assert loaded.requests[1].reply["generated"] == [" hello"] * 4  # the server stripped the leading space
    steps, model = replay_cache(loaded, Replayer(loaded, template, get_tokenizer("qwen3")))
    assert [(s.prefix.predicted_cached, s.prefix.source) for s in steps] == [(r[1], r[3]) for r in live.rows]
    assert all(step.report.agrees for step in steps), [step.report for step in steps]
    assert steps[3].prefix.place.startswith("prompt cache")  # A3 came back from host memory
    assert [s.held.number for s in model.slots] == [4] and [h.number for h in model.saved] == [3]


@pytest.mark.parametrize("name", ["long-conversation-dropped-answer", "timestamp-in-system-prompt"])
def test_sessions_written_before_the_cache_fields_still_replay(name):
    path = ROOT / "sample_sessions" / f"{name}.ctxpane.json"
    session = load_session(path).session
    template = template_from_session(session.template)
    steps, _ = replay_cache(session, Replayer(session, template, get_tokenizer(session.tokenizer)))
    assert len(steps) == len(session.requests)
    assert all(step.report.reported is None and not step.report.agrees for step in steps)
    assert steps[0].prefix.predicted_cached == 0 and steps[1].prefix.source == 1


def base_file(**request) -> dict:
    record = {"number": 1, "time": "2026-01-01T10:00:00+00:00", "body": {"messages": []}, **request}
    return {"format": "ctxpane-session", "version": 1, "messages": [], "requests": [record]}


@pytest.mark.parametrize("request_fields, field", [
    ({"reply": {"generated": "not a list"}}, "generated"),
    ({"reply": {"generated": ["x" * 5000]}}, "generated"),
    ({"cache_source": -1}, "cache_source"),  # (0 is the summary call)
    ({"cache_class": "x" * 300}, "cache_class"),
])
def test_the_new_fields_are_checked(request_fields, field):
    with pytest.raises(SessionFormatError) as info:
        session_from_dict(json.loads(json.dumps(base_file(**request_fields))))
    assert field in str(info.value)


def test_times_that_cannot_be_read_give_no_time():
    assert seconds("2026-01-01T10:00:00+00:00") == 1767261600.0
    assert seconds("yesterday") is None and seconds("") is None
