"""config.toml refuses what it does not know (issue 20, item 5): each unknown or misspelt key is named in one line
with the closest known key, the app keeps running, and nothing unknown reaches a request."""

from __future__ import annotations

import json

from app_helpers import isolated, make_app, settle
from tui.app.config import resolve


def written(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_a_misspelt_key_is_named_with_the_closest_known_one(tmp_path):
    path = written(tmp_path, 'themee = "x"\nbase_ur = "http://h/v1"\n[keys]\nhepl = "f9"\nhelp = "f10"\n')
    settings, problems = resolve({}, {}, path, key_ids={"help", "quit"})
    assert "`themee`: unknown key in config.toml; did you mean `theme`?" in problems
    assert "`base_ur`: unknown key in config.toml; did you mean `base_url`?" in problems
    assert "`hepl`: unknown key in [keys] (binding ids); did you mean `help`?" in problems
    assert settings.keys == {"help": "f10"}  # the unknown binding is not handed to Textual


def test_a_misspelt_param_is_said_and_never_sent_an_extra_one_is_sent_as_written(tmp_path):
    from controller_helpers import Settings
    from tui.controller.tuning import config_defaults
    path = written(tmp_path, "[params]\ntemprature = 0.7\ntop_p = 0.9\n[extra_params]\nmy_field = 3\n")
    settings, _problems = resolve({}, {}, path)
    policy, params, problems = config_defaults(settings)
    assert params == {"top_p": 0.9, "my_field": 3}
    assert "config.toml: `temprature`: unknown key in [params]; did you mean `temperature`?" in problems
    assert config_defaults(Settings())[2] == []  # (the test stub has no config: nothing said)


async def test_on_screen_and_not_in_the_request(tmp_path, monkeypatch):
    isolated(monkeypatch, tmp_path)
    config = tmp_path / "xdg_config_home" / "ctxpane"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('theme = "ctxpane-drak"\n[params]\ntemprature = 0.7\n[policy]\nmax_token = 9\n')
    app = make_app(tmp_path, offline=True)
    said = []
    shown = app.notify
    app.notify = lambda text, **kw: (said.append(str(text)), shown(text, **kw))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        app.action_new_session()
        await settle(pilot, app)
        body = app.wb.request_body(app.wb.view)
        assert "temprature" not in json.dumps(body)
    joined = "\n".join(said)
    assert "did you mean `temperature`?" in joined and "did you mean `max_tokens`?" in joined
    assert "theme `ctxpane-drak`: not found; did you mean `ctxpane-dark`?" in joined
