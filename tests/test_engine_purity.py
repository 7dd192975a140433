"""The engine imports neither Textual nor httpx, and loads no tokenizer on import."""

import subprocess
import sys


def test_engine_imports_no_ui_or_network():
    code = ("import sys, tui.context, tui.context.assemble, tui.context.tokens.counting;"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'httpx', 'tiktoken', 'tokenizers')];"
            "print(','.join(bad))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
