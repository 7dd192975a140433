"""The curated policy's trim threshold is a setting: the settings screen's field (checked, saved with the
session), `render --trim-over N`; an item over it keeps only its relevant lines, one under it stays whole."""

from __future__ import annotations

import json

from controller_helpers import harness  # noqa: F401 - the fixture
from tui.context import builtin_template, get_tokenizer
from tui.context.messages import Message, Provenance
from tui.context.policy.curated import Verdict
from tui.context.policy.truncation import PolicySettings
from tui.context.request import RequestSettings, build_request
from tui.context.untrusted.fences import FenceStyle
from tui.controller import tuning

TOKENIZER = get_tokenizer("o200k_base")
LOG = "\n".join([f"line {n} DEBUG heartbeat ok" for n in range(40)] + ["line 40 ERROR disk quota exceeded on vol9"])


def store() -> list[Message]:
    return [Message("system", "Be brief.", provenance=Provenance("system_prompt", True)),
            Message("tool", LOG, tool_call_id="t1", provenance=Provenance("tool", False, "tool:logs")),
            Message("user", "Why did vol9 fail? Which quota?")]


def verdict_of_log(trim_over: int) -> Verdict:
    settings = RequestSettings(builtin_template("chatml"), TOKENIZER, {}, None, True,
                               PolicySettings("curated", context_window=4000, trim_over=trim_over), FenceStyle())
    view = build_request(store(), settings)
    return next(e for e in view.curation.entries if e.index == 1).verdict


def test_the_threshold_decides_whether_a_long_item_is_trimmed():
    tokens = len(TOKENIZER.plain_starts(LOG)[0])
    assert verdict_of_log(10 ** 6) is Verdict.KEPT
    assert verdict_of_log(max(20, tokens // 2)) is Verdict.TRIMMED


def test_the_settings_field_is_checked_with_a_one_line_error():
    for bad in ("5", "abc", "2000000"):
        _, errors = tuning.check({"trim_over": bad})
        assert "trim_over" in errors and "\n" not in errors["trim_over"]


async def test_the_field_is_applied_and_kept_with_the_session(harness, tmp_path):  # noqa: F811
    ctl = await harness.ready()
    errors = ctl.tuning.apply(ctl.tuning.values() | {"name": "curated", "context_window": "3000", "trim_over": "60"})
    assert errors == {}
    await harness.idle()
    assert ctl.wb.policy.trim_over == 60 and ctl.wb.session.policy["trim_over"] == 60


def test_render_takes_the_threshold(tmp_path, cli_in_process):
    path = tmp_path / "store.json"
    path.write_text(json.dumps({"messages": [m.to_record() for m in store()]}))
    long = cli_in_process("render", str(path), "--policy", "curated", "--context", "4000", "--json")
    short = cli_in_process("render", str(path), "--policy", "curated", "--context", "4000", "--trim-over", "40", "--json")
    assert long.returncode == 0 and short.returncode == 0, short.stderr
    assert "line 3 DEBUG" in json.loads(long.stdout)["text"] and "line 3 DEBUG" not in json.loads(short.stdout)["text"]
    assert "vol9" in json.loads(short.stdout)["text"]
    bad = cli_in_process("render", str(path), "--policy", "curated", "--trim-over", "3")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
