"""Request: the JSON body exactly as sent, and the same as a curl command with the key redacted."""

from __future__ import annotations

import json

from tui.context.untrusted.redaction import Redactor
from tui.context.untrusted.visible import json_paste_safe
from tui.sessions.redacted import outside_words
from tui.context.request_bytes import request_text
from tui.sessions.sent_curl import sent_curl
from tui.sessions.transfer import curl_command

from tui.app.safe_inputs import SafeTextArea


DATA_SHOWN = 48  # characters of a data: URL shown; an image's base64 is never put on screen whole


def without_data(value, found: list | None = None):
    """`value` with every long data: URL cut to its start and its length; and how many were cut."""
    found = [] if found is None else found
    if isinstance(value, str) and value.startswith("data:") and len(value) > DATA_SHOWN:
        found.append(1)
        return f"{value[:DATA_SHOWN]}…({len(value)} characters)", len(found)
    if isinstance(value, dict):
        return {key: without_data(item, found)[0] for key, item in value.items()}, len(found)
    if isinstance(value, list):
        return [without_data(item, found)[0] for item in value], len(found)
    return value, len(found)


class RequestView(SafeTextArea):
    DEFAULT_CSS = "RequestView { height: 1fr; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(read_only=True, soft_wrap=False, show_line_numbers=False, **kwargs)

    def show(self, url: str, body: dict, key_env: str, what_if: str = "", sent: dict | None = None,
             sent_base: str = "") -> None:
        body = Redactor().value(body, outside_words, by_name=True)  # a key put in [params] is not shown
        body, cut = without_data(body)
        shown = json_paste_safe(json.dumps(body, ensure_ascii=False, indent=2))  # a selection copied is safe too
        if sent is not None:  # a tapped request: its curl is the client's own path, query and headers
            curl = sent_curl(sent_base, sent, request_text(body), key_env)
        else:
            curl = curl_command(url, body, key_env)
        text = shown + "\n\n# as curl\n" + curl
        if cut:
            many = cut > 1
            text = (f"# {cut} image data URL{'s' if many else ''} shortened here: the request sends "
                    f"{'them' if many else 'it'} whole\n") + text
        if what_if:
            text = f"# {what_if}\n" + text
        if text != self.text:
            self.load_text(text)
