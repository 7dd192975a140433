"""Request: the JSON body exactly as sent, and the same as a curl command with the key redacted."""

from __future__ import annotations

import json
import shlex

from .safe_inputs import SafeTextArea


def curl_command(url: str, body: dict, key_env: str) -> str:
    """A curl command for the body; the key is referenced by its variable, never written out."""
    return (f"curl {shlex.quote(url)} \\\n  -H 'Content-Type: application/json' \\\n"
            f"  -H \"Authorization: Bearer ${key_env}\" \\\n  -d {shlex.quote(json.dumps(body, ensure_ascii=False))}")


class RequestView(SafeTextArea):
    DEFAULT_CSS = "RequestView { height: 1fr; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(read_only=True, soft_wrap=False, show_line_numbers=False, **kwargs)

    def show(self, url: str, body: dict, key_env: str, what_if: str = "") -> None:
        text = json.dumps(body, ensure_ascii=False, indent=2) + "\n\n# as curl\n" + curl_command(url, body, key_env)
        if what_if:
            text = f"# {what_if}\n" + text
        if text != self.text:
            self.load_text(text)
