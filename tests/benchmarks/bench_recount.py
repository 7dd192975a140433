"""Recount after editing one message, against a naive full re-render and re-encode (run on demand).

    .venv/bin/python -m tests.benchmarks.bench_recount [TOKENS]
"""

import statistics
import sys
import time

from tests.benchmarks.corpus import conversation
from tui.context.assemble import assemble
from tui.context import builtin_template, get_tokenizer
from tui.context.tokens.draft_splice import splice_message
from tui.context.tokens.counting import SegmentCache


def timed(fn, repeat):
    samples = []
    for i in range(repeat):
        start = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), sorted(samples)[int(len(samples) * 0.95) - 1]


def main(target: int = 500_000) -> None:
    template, tokenizer = builtin_template("chatml"), get_tokenizer("o200k_base")
    messages = conversation(target)
    cache = SegmentCache()
    snap = assemble(messages, template, tokenizer, cache=cache)
    edit_index = len(messages) - 1
    specials = template.special_strings()
    print(f"document: {len(snap.document.text):,} chars, {snap.counts.total:,} tokens, {len(messages)} messages")

    def incremental(i):
        result = splice_message(snap.document, snap.counts, edit_index, f"And now? edit {i}", tokenizer,
                                specials, cache)
        assert result is not None

    def naive(i):
        edited = messages[:-1] + [{"role": "user", "content": f"And now? edit {i}"}]
        text = template.render(edited, add_generation_prompt=True)
        tokenizer.encode_whole(text)

    inc_median, inc_p95 = timed(incremental, 200)
    naive_median, naive_p95 = timed(naive, 15)
    print(f"recount after editing one message: median {inc_median:.3f} ms, p95 {inc_p95:.3f} ms")
    print(f"naive full re-render + re-encode:  median {naive_median:.1f} ms, p95 {naive_p95:.1f} ms")
    print(f"ratio (naive / incremental, medians): {naive_median / inc_median:.0f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500_000)
