"""The tap against hostile clients and upstreams: what a proxy must never add, keep or show.

Found by review: cookies the upstream set were kept by the tap's own HTTP client and sent on every later
request of every client; keys in a query string reached the request list and the headless lines.
"""

from __future__ import annotations

import httpx
import pytest

from tap_helpers import LoopbackUpstream, RunningTap


@pytest.fixture(scope="module")
def upstream():
    server = LoopbackUpstream()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tap(upstream, tmp_path_factory):
    running = RunningTap(upstream.url, tmp_path_factory.mktemp("hostile-sessions"))
    yield running
    running.stop()


def test_a_cookie_the_upstream_sets_is_never_sent_on_by_the_tap(tap):
    first = httpx.get(f"{tap.url}/echo/one")  # the upstream answers with Set-Cookie: upstream-session=abc
    assert first.status_code == 200 and first.headers["set-cookie"] == "upstream-session=abc"
    # another client (no cookie of its own) and the same one: the upstream sees only what each sent
    for _ in range(2):
        seen = httpx.get(f"{tap.url}/echo/two").json()
        assert not [k for k, _v in seen["headers"] if k.lower() == "cookie"], seen["headers"]
    own = httpx.get(f"{tap.url}/echo/three", headers={"Cookie": "mine=1"}).json()
    assert [v for k, v in own["headers"] if k.lower() == "cookie"] == ["mine=1"]
