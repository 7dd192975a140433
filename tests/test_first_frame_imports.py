"""What the first frame may not wait for (issue 23): `import tui.app.app`, which the first frame needs, loads none
of the heavy libraries that later work uses (Markdown, HTTP, templates, tokenizers, SQLite). Each loads when that
work first runs, or in a thread after the first frame. The time it all takes is a benchmark
(tests/benchmarks/bench_imports.py); this is the list, which cannot depend on the machine's load."""

from __future__ import annotations

import json
import subprocess
import sys

# Libraries the first frame draws nothing with: each must load later (the packages and every submodule).
LATER = ("markdown_it", "rich.markdown", "textual.widgets._markdown", "httpx", "jinja2", "tiktoken", "tokenizers",
         "sqlite3", "aiohttp", "anthropic", "openai", "PIL", "plotext", "textual_plotext", "bm25s", "numpy",
         # ... nor the project's engine, controller, client or session files: the pane's frame and an empty chat need
         # none of them (they load in a thread after the first frame: CtxpaneApp._build_in_background)
         "tui.controller.controller", "tui.context.assemble", "tui.context.request", "tui.context.tokens",
         "tui.context.cache", "tui.context.templates", "tui.context.policy", "tui.client", "tui.sessions")


def loaded_by(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if any(name == lib or name.startswith(lib + ".") for lib in LATER))


def test_the_first_frames_imports_load_no_heavy_library():
    assert heavy(loaded_by("import tui.app.app")) == []


def test_the_check_sees_a_heavy_library_that_creeps_in():
    assert "markdown_it" in heavy(loaded_by("import tui.app.app, markdown_it"))


def test_the_check_sees_the_engine_creep_in():
    assert "tui.controller.controller" in heavy(loaded_by("import tui.app.app; from tui.controller import Controller"))
