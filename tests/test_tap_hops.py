"""The taps' hop list (tui/tap/hops.py) as pure functions: read from every header line, extended by one, judged; and
left out of the headers a recording keeps as the client's, and of the curl an export writes."""

from __future__ import annotations

from tui.sessions.sent_curl import sent_curl
from tui.tap.hops import MAX_TAPS, HopVerdict, hop_list, new_tap_id, verdict, with_own_hop
from tui.tap.sent import kept_headers


def test_the_hop_list_is_read_from_every_line_and_extended_by_one():
    raw = [(b"Accept", b"*/*"), (b"x-ctxpane-tap", b"aa, bb"), (b"X-Ctxpane-Tap", b" cc ,,")]
    hops = hop_list(raw)
    assert hops == ["aa", "bb", "cc"]
    assert with_own_hop(raw, hops, "me") == [(b"Accept", b"*/*"), (b"X-Ctxpane-Tap", b"aa, bb, cc, me")]
    assert with_own_hop([], [], "me") == [(b"X-Ctxpane-Tap", b"me")]


def test_a_tap_refuses_its_own_id_and_a_list_of_max_taps():
    me = new_tap_id()
    assert me != new_tap_id() and len(me) == 16
    assert verdict([], me) is HopVerdict.FORWARD and verdict(["other"], me) is HopVerdict.FORWARD
    assert verdict(["other", me], me) is HopVerdict.LOOP
    assert verdict([f"t{n}" for n in range(MAX_TAPS)], me) is HopVerdict.TOO_MANY
    assert verdict([f"t{n}" for n in range(MAX_TAPS - 1)], me) is HopVerdict.FORWARD


def test_the_hop_list_is_not_kept_as_the_clients_header_nor_sent_again():
    kept = kept_headers([(b"X-Ctxpane-Tap", b"aa"), (b"X-Title", b"mine")], [])
    assert kept == [["X-Title", "mine"]]
    command = sent_curl("http://up", {"method": "POST", "path": "/v1/chat/completions",
                                      "headers": [["X-Ctxpane-Tap", "aa"], ["X-Title", "mine"]]}, "{}", "KEY")
    assert "X-Title: mine" in command and "ctxpane-tap" not in command.lower()
