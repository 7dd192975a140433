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


def test_a_value_of_the_wrong_type_is_named_and_the_default_used(tmp_path):
    path = written(tmp_path, 'scan_local = "no"\nmodel = 5\ntheme = "ctxpane-dark"\n[keys]\nhelp = 5\nquit = "f10"\n')
    settings, problems = resolve({}, {}, path, key_ids={"help", "quit"})
    assert 'config.toml: scan_local = "no": expected `bool`, got `str` (default used)' in problems
    assert "config.toml: model = 5: expected `str`, got `int` (default used)" in problems
    assert 'config.toml [keys]: help = 5: expected a key such as "f9" (not bound)' in problems
    assert settings.scan_local is True and settings.model == "" and settings.theme == "ctxpane-dark"
    assert settings.keys == {"quit": "f10"}  # the good binding beside the bad one still counts
    assert len(problems) == 3


def test_a_table_that_is_not_a_table_is_named_and_the_rest_still_read(tmp_path):
    settings, problems = resolve({}, {}, written(tmp_path, 'keys = 5\ntheme = "ctxpane-dark"\n'))
    assert problems == ["config.toml: [keys] = 5: expected `object`, got `int` (default used)"]
    assert settings.keys == {} and settings.theme == "ctxpane-dark"


def test_a_param_of_the_wrong_type_or_out_of_bounds_is_said_and_never_sent(tmp_path):
    from tui.controller.tuning import config_defaults
    path = written(tmp_path, '[params]\ntemperature = "hot"\ntop_k = true\nmin_p = nan\ntop_p = 7\nstop = ["a", 1]\n'
                             'seed = 42\nn = 2\nstop_words = 1\n')
    settings, _problems = resolve({}, {}, path)
    _policy, params, problems = config_defaults(settings)
    assert params == {"seed": 42, "n": 2}
    assert 'config.toml [params]: temperature = "hot": expected `float`, got `str` (not sent)' in problems
    assert "config.toml [params]: top_k = true: expected `int`, got `bool` (not sent)" in problems
    assert "config.toml [params]: min_p = NaN: expected `float` >= 0.0 (not sent)" in problems
    assert "config.toml [params]: top_p = 7: expected `float` <= 1.0 (not sent)" in problems
    assert 'config.toml [params]: stop = ["a", 1]: expected `str`, got `int` (not sent)' in problems
    assert any("`stop_words`: unknown key in [params]" in line for line in problems)
    assert len(problems) == 6


def test_every_field_of_the_settings_screen_is_a_typed_param_with_the_same_bounds():
    from tui.controller.config_params import SamplingParams
    from tui.controller.tuning import FIELDS, FieldPlace
    import msgspec
    import pytest
    for field in (f for f in FIELDS if f.where is FieldPlace.PARAMS):
        for value, fits in ((field.low, True), (field.high, True), (field.low - 1, False), (field.high + 1, False)):
            value = field.kind(value)
            if fits:
                msgspec.convert({field.key: value}, SamplingParams, strict=True)
            else:
                with pytest.raises(msgspec.ValidationError):
                    msgspec.convert({field.key: value}, SamplingParams, strict=True)


def test_every_key_config_toml_knows_reaches_the_settings_as_written(tmp_path):
    """The file's struct and the resolved settings name their keys apart: a key the file accepts and the settings
    lack would be checked, then dropped without a word."""
    from tui.app.config import ConfigFile
    valid = {"provider_count": "anthropic", "api": "messages", "glyphs": "plain", "base_url": "http://h:1/v1"}
    lines, tables, expected = [], [], {}
    for name in ConfigFile.__struct_fields__:
        default = getattr(ConfigFile(), name)
        if isinstance(default, bool):
            lines.append(f"{name} = {str(not default).lower()}")
            expected[name] = not default
        elif isinstance(default, dict):
            entry = {"policy": ("policy", '"keep-all"'), "params": ("temperature", "0.5"),
                     "extra_params": ("my_field", "3"), "keys": ("help", '"f10"')}[name]
            tables.append(f"[{name}]\n{entry[0]} = {entry[1]}")
            expected[name] = {entry[0]: {'"keep-all"': "keep-all", "0.5": 0.5, "3": 3, '"f10"': "f10"}[entry[1]]}
        else:
            value = valid.get(name, f"{name}-value")
            lines.append(f"{name} = {json.dumps(value)}")
            expected[name] = value
    settings, problems = resolve({}, {}, written(tmp_path, "\n".join(lines + tables) + "\n"), key_ids={"help"})
    assert problems == []
    assert {name: getattr(settings, name) for name in expected} == expected
