"""Plant one-line defects in the policy, cache and fence code and see whether the suite catches each.

    .venv/bin/python tests/plant_defects.py [--only N]

Each defect is applied to a copy of the project in a temporary folder (the working tree is never
touched), the relevant tests run there, and the defect counts as caught when they fail.

Written down before the first run, the defects expected to ESCAPE:
  7  ties broken the other way (>=): no test put a unit exactly at the remaining room
  17 escape before trimming: with one-for-one look-alikes, the two orders give the same text
  18 '|' left out of the look-alikes: '‹|im_start|›' no longer parses as a header anyway
  21 case-insensitive escaping off: the random fragments are all upper-case [INST]
  22 forged headers inside reasoning/tool-call text not reported: no test puts one there
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_budget.py", "tests/test_cache.py", "tests/test_fences.py", "tests/test_render_policies.py",
         "tests/test_incremental.py"]
C = "tui/context/"
DEFECTS = [
    (C + "budget.py", "return None if self.context_window is None else self.context_window - self.max_tokens",
     "return None if self.context_window is None else self.context_window", "budget ignores the reserved output"),
    (C + "budget.py", "total = overhead + sum(costs)", "total = sum(costs)",
     "budget off by the template's own tokens"),
    (C + "budget.py", 'if pinned[i] or role in ("system", "developer")}', 'if role in ("system", "developer")}',
     "a pinned message can be dropped"),
    (C + "budget.py", "keep.add(users[-1])", "keep.add(users[0])", "the newest user message can be dropped"),
    (C + "budget.py", 'if role == "tool" and units and', 'if False and units and',
     "a tool call separated from its results"),
    (C + "budget.py", "if full or cost > left:", "if cost > left:",
     "drop-oldest skips a large unit and keeps older ones"),
    (C + "budget.py", "if full or cost > left:", "if full or cost >= left:", "ties broken the other way"),
    (C + "budget.py", "for unit in reversed(units):", "for unit in units:", "drops the newest instead of the oldest"),
    (C + "budget.py", "first_kept = users[-turns]", "first_kept = users[-turns - 1]", "keep-last-n keeps one turn too many"),
    (C + "budget.py", "previous.get(ids[i], request_number)) for i in sorted(dropped)]",
     "request_number) for i in sorted(dropped)]", "the ledger forgets since when a message is dropped"),
    (C + "cache.py", "return 0 if prefix_tokens < 1024 else", "return 0 if prefix_tokens <= 1024 else",
     "OpenAI rule: 1,024 exactly is not cached"),
    (C + "cache.py", "(prefix_tokens - 1024) // 128 * 128", "(prefix_tokens - 1024) // 64 * 64",
     "OpenAI rule: 64-token steps"),
    (C + "cache.py", "return max(0, min(prefix_tokens, total_tokens - 1))",
     "return max(0, min(prefix_tokens, total_tokens))", "llama.cpp rule: the last token not re-evaluated"),
    (C + "tokens.py", "return self.before[index] + max(0, bisect_right(starts, offset) - 1)",
     "return self.before[index] + max(0, bisect_right(starts, offset))",
     "the token straddling the boundary counted as shared"),
    (C + "cache.py", 'what = "changed system prompt" if role in ("system", "developer") else',
     'what = "changed system prompt" if role in ("developer",) else', "a system prompt edit reported as a message edit"),
    (C + "cache.py", "if (previous.tools or None) != (current.tools or None)",
     "if (previous.tools or None) == (current.tools or None)", "tool list changes not recognised"),
    (C + "fences.py", "body, escaped = neutralise(trim(text, style), escape_pattern(style, specials))",
     "body, escaped = (lambda r: (trim(r[0], style), r[1]))(neutralise(text, escape_pattern(style, specials)))",
     "escape applied before trimming"),
    (C + "fences.py", '"|": "¦", ', "", "'|' left out of the look-alikes"),
    (C + "fences.py", "RULE_BLOCK, GENERIC_CONTROL,", "GENERIC_CONTROL,", "rule blocks <<system id=..>> left unescaped"),
    (C + "fences.py", 'parts += [rf"</?\\s*{re.escape(style.tag)}\\b[^>\\n]*>?", ', "parts += [",
     "the fence's own delimiter left unescaped"),
    (C + "fences.py", 'return re.compile("|".join(parts), re.IGNORECASE)', 'return re.compile("|".join(parts))',
     "escaping is case-sensitive"),
    (C + "reader.py", "if span.kind not in OWN_KINDS:", 'if span.kind == "content":',
     "forged headers inside reasoning or tool calls not reported"),
    (C + "request.py", "if style.enabled and not message.provenance.trusted and", "if style.enabled and "
     "message.provenance.trusted and", "trusted messages fenced, untrusted ones not"),
    (C + "request.py", '(body_end, span.end, "fence")):', '(body_end, span.end, "content")):',
     "the fence footer counted as content"),
    (C + "fences.py", "GENERIC_CONTROL, r\"\\[/?[A-Z][A-Z_]{2,30}\\]\",", "GENERIC_CONTROL,",
     "[INST]-style markers left unescaped"),
]


def apply(tree: Path, path: str, old: str, new: str) -> None:
    target = tree / path
    text = target.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise SystemExit(f"defect does not apply once to {path}: {old!r} found {text.count(old)} times")
    target.write_text(text.replace(old, new), encoding="utf-8")


def run_one(index: int, defect: tuple | None) -> bool:
    """True when the tests fail. `defect` None runs the untouched code: the baseline must pass."""
    with tempfile.TemporaryDirectory(prefix="ctxpane-defect-") as folder:
        tree = Path(folder)
        shutil.copytree(ROOT / "tui", tree / "tui")
        shutil.copytree(ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("benchmarks"))
        shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
        if defect is not None:
            apply(tree, *defect[:3])
        result = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                                 "-m", "not server", *TESTS], cwd=tree, capture_output=True, text=True,
                                env={**__import__("os").environ, "PYTHONPATH": str(tree)})
        return result.returncode != 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", type=int, default=None)
    args = parser.parse_args()
    if run_one(0, None):
        print("the tests fail without any defect: fix them first (a red baseline would count every defect caught)")
        return 1
    caught, escaped = [], []
    for index, defect in enumerate(DEFECTS, start=1):
        if args.only is not None and index != args.only:
            continue
        (caught if run_one(index, defect) else escaped).append((index, defect[3]))
        print(f"{index:2d} {'caught ' if caught and caught[-1][0] == index else 'ESCAPED'} {defect[3]}", flush=True)
    print(f"\ncaught {len(caught)}: " + ", ".join(str(i) for i, _ in caught))
    print(f"escaped {len(escaped)}: " + ", ".join(f"{i} ({d})" for i, d in escaped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
