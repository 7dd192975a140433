"""An attached image's token estimate, reconciled with what a server reports after the reply.

The loopback server here is a vision model's: it reads each image's pixel size from the PNG header in the
data: URL, resizes it as a Qwen2-VL deployment capped at 28*28*256 pixels does, writes one <|image_pad|>
per 28x28 patch between the vision markers, and reports the prompt's tokens (Qwen3 tokenizer, read with
`tokenizers` directly). Its cap is lower than the default ctxpane estimates with, so estimate and server
differ, and the difference is the images'.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from controller_helpers import Harness
from image_bytes import png
from window_servers import tokenizer

CAP = 28 * 28 * 256  # this deployment's max_pixels


def patches(width: int, height: int) -> int:
    h, w = round(height / 28) * 28, round(width / 28) * 28
    if h * w > CAP:
        beta = math.sqrt(height * width / CAP)
        h, w = math.floor(height / beta / 28) * 28, math.floor(width / beta / 28) * 28
    return (h // 28) * (w // 28)


def prompt(messages: list[dict]) -> str:
    text = ""
    for message in messages:
        content = message.get("content") or ""
        if isinstance(content, list):
            pieces = []
            for part in content:
                if part.get("type") == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    width, height = struct.unpack(">II", data[16:24])
                    pieces.append("<|vision_start|>" + "<|image_pad|>" * patches(width, height) + "<|vision_end|>")
                else:
                    pieces.append(part.get("text", ""))
            content = "".join(pieces)
        text += f"<|im_start|>{message['role']}\n{content}<|im_end|>\n"
    return text + "<|im_start|>assistant\n"


class Vision(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, raw: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            return self._send(200, json.dumps({"object": "list", "data": [{"id": "qwen2-vl"}]}).encode(),
                              "application/json")
        self._send(404, b'{"error": {"message": "not found"}}', "application/json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/v1/chat/completions":
            return self._send(404, b'{"error": {"message": "not found"}}', "application/json")
        self.server.bodies.append(body)
        count = len(tokenizer().encode(prompt(body["messages"]), add_special_tokens=False).ids)
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "A black square."}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {"choices": [], "usage": {"prompt_tokens": count, "completion_tokens": 4,
                                            "total_tokens": count + 4}}]
        raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self._send(200, raw.encode(), "text/event-stream")


async def test_the_image_estimate_is_reconciled_with_the_servers_prompt_count(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Vision)
    server.daemon_threads, server.bodies = True, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tokenizer()
    try:
        made = Harness(tmp_path, base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", tokenizer="qwen3")
        ctl = await made.ready()
        ctl.connect()
        await made.idle()
        path = tmp_path / "square.png"
        path.write_bytes(png(1024, 768))
        ctl.attach(f"file:{path}", "")
        await made.idle()
        [image] = ctl.wb.view.hidden.images
        # the estimate (default Qwen-VL rule): 1036x756 -> 37 x 27 = 999 patches + 2 markers = 1001
        assert image.estimate.tokens == 1001
        assert ctl.sending.submit("What is in the picture?")
        await made.until_replied()
        assert ctl.wb.session.requests and ctl.wb.session.requests[-1].received
        ctl.close()
    finally:
        server.shutdown()
        server.server_close()
    sent = server.bodies[-1]["messages"]
    image_part = next(p for m in sent if isinstance(m["content"], list) for p in m["content"])
    assert set(image_part) == {"type", "image_url"}  # ctxpane's own keys (size, format, name) are not sent
    received = ctl.wb.session.requests[-1].received
    # the server capped 1024x768 at 200,704 pixels: beta = sqrt(786432 / 200704) = 1.98;
    # 768/1.98/28 = 13.86 -> 13 rows, 1024/1.98/28 = 18.48 -> 18 columns: 234 patches + 2 markers = 236
    assert patches(1024, 768) == 234
    assert received["images_estimate"] == 1001 and received["images_reconciled"] == 236
    assert any("images: 1001 tokens estimated, 236 by the server's count (reconciled: -765)" in note
               for note in received["notes"])
