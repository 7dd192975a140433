"""How exact the cache prediction is against the real llama.cpp server, on demand: two conversations taking
turns (each return reuses a prompt the server keeps in its host-memory cache, not the previous request).

    URL=$(../shared/server/start-llama-server.sh 8080)
    PYTHONPATH=tests .venv/bin/python -m tests.benchmarks.cache_accuracy "$URL"

Prints, per request, the cached tokens the pane predicted before sending and the server's cache_n after, and
the largest difference (the goal: within 1 token on every request).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from controller_helpers import Harness
from tui.context.messages import Message, Provenance
from tui.sessions.model import Session


def system(text: str) -> Message:
    return Message("system", text, provenance=Provenance("system_prompt", True), id="s")



async def main(url: str) -> None:
    tmp = Path(tempfile.mkdtemp())
    made = Harness(tmp, base_url=url, tokenizer="")
    p = {"temperature": 0, "max_tokens": 12}
    a = Session(params=dict(p), messages=[system("You are a terse geography tutor.")])
    b = Session(params=dict(p), messages=[system("You write short poems.")])
    made.ctl.adopt(a, None)
    made.ctl.connect()
    await made.idle(0.5)
    plan = [(a, "Name three rivers in Europe."), (a, "Which is longest?"), (b, "A haiku about snow."),
            (a, "And the shortest?"), (b, "Another about rain."), (a, "Which flows through Paris?"),
            (b, "One about the sea."), (a, "Thanks.")]
    rows = []
    for session, text in plan:
        if made.ctl.wb.session is not session:
            made.ctl.adopt(session, None)
            await made.idle(0.3)
        await made.send(text)
        r = session.requests[-1]
        rows.append((("A" if session is a else "B") + str(len(session.requests)), r.predicted_cached, r.cached_reported,
                     r.cache_source, (r.received or {}).get("verdict")))
    made.ctl.close()
    for row in rows:
        print("%-3s predicted %4s  server cache_n %4s  from request %s  sent-vs-received %s" % row)
    print("max |predicted - cache_n| =", max(abs(r[1] - r[2]) for r in rows))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
