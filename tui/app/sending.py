"""Talking to the server: finding it, loading a tokenizer, sending, streaming, stopping."""


from __future__ import annotations

import asyncio
import time

from textual import work

from tui.client.endpoint import Endpoint, EndpointError
from tui.client.errors import ClientError
from tui.client.reply import ReplyAssembler
from tui.context.safety import visible
from tui.context.errors import TemplateRenderError
from tui.context.tokens import TokenizerNotFound, get_tokenizer

from .chat_panel import ChatPanel
from .composer import Composer
from .message_item import MessageItem
from .samples import sample_session



class SendingMixin:
    """Methods of CtxpaneApp, kept in their own file."""

    # -- tokenizer and server ----------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="tokenizer")
    def load_tokenizer(self, name: str | None = None) -> None:
        from tui.sessions.replay import offline_tokenizer_name
        # A tokenizer named in a session file is a shipped one or none: a path there is never opened.
        spec = name or self.settings.tokenizer or offline_tokenizer_name(self.wb.session.tokenizer, self.wb.template)
        try:
            tokenizer = get_tokenizer(spec)
        except TokenizerNotFound as exc:
            self.call_from_thread(self.notify, visible(str(exc)), severity="error")
            self.call_from_thread(self._tokenizer_failed)
            return
        self.call_from_thread(self._use_tokenizer, tokenizer, None)

    def _tokenizer_failed(self) -> None:
        """No tokenizer: the estimate stays, and the boundary is read with it."""
        self._tokenizer_settled = True
        if self.wb.tokenizer_pending:
            self.wb.tokenizer_pending = False
            self._schedule_rebuild(0.0)

    def _use_tokenizer(self, tokenizer, exact) -> None:
        self._tokenizer_settled = True
        self.wb.set_tokenizer(tokenizer, exact)
        self._schedule_rebuild(0.0)

    @work(exclusive=True, group="connect")
    async def connect_endpoint(self) -> None:
        from tui.client.connect import connect, scan_local
        from tui.context.registry import cache_rule
        chat = self.query_one(ChatPanel)
        base = self.settings.base_url or self.wb.session.base_url
        source = self.settings.source.get("base_url", "session")
        if not base and self.settings.scan_local:
            chat.set_status("looking for a local server on 8080, 11434, 1234, 8000…")
            found = await scan_local()
            if found:
                base, source = found[0], f"found {found[1]} on {found[0]}"
        if not base:
            if not self.wb.session.messages:
                self._adopt(sample_session(), None)
                self.refresh_all()
            chat.set_status("offline: no server found. Connect with --base-url URL (or $OPENAI_BASE_URL); "
                            "the pane works on what you type.", "yellow")
            return
        try:
            endpoint = self._endpoint_for(base, source)
        except EndpointError as exc:
            chat.set_status(f"bad base URL: {exc}", "red")
            return
        chat.set_status(f"connecting to {endpoint.base_url} ({source})…")
        try:
            connection = await connect(endpoint)
        except ClientError as exc:
            chat.set_status(f"offline: {visible(str(exc))}", "red")
            return
        self.connection, self.client = connection, connection.client
        session = self.wb.session
        session.base_url, session.model = endpoint.base_url, endpoint.model
        info = connection.info
        if connection.template is not None and not self.settings.template:
            self.wb.set_template(connection.template)
        if info.n_ctx and not self.wb.policy.context_window:
            self.wb.set_policy(context_window=int(info.n_ctx))
        self.wb.cache_rule = cache_rule(info.kind, endpoint.model)
        chat.set_status(f"{info.kind} at {endpoint.base_url} · model {endpoint.model} · context "
                        f"{info.n_ctx or '?'} · {connection.note} ({source}){self._key_note(endpoint)}")
        if not self.settings.tokenizer:
            if connection.on_server:
                self._use_tokenizer(await self._server_tokenizer(endpoint), True)
            else:
                tokenizer = await asyncio.to_thread(get_tokenizer, connection.tokenizer)
                self._use_tokenizer(tokenizer, connection.exact)

    async def _server_tokenizer(self, endpoint: Endpoint):
        """The server's /tokenize, with a local tokenizer standing in (an estimate) while it is away."""
        from tui.client.server_tokenizer import ServerTokenizer
        from tui.context.registry import tokenizer_for_family
        from .tokenizer_fallback import FallbackTokenizer
        local = await asyncio.to_thread(get_tokenizer, tokenizer_for_family(self.wb.template.identity.family))
        server = ServerTokenizer(endpoint, set(self.wb.template.special_strings()))
        return FallbackTokenizer(server, local, self._tokenizer_source_changed)

    def _tokenizer_source_changed(self, falling_back: bool) -> None:
        """Called from the counting worker when the server's tokenizer goes away or comes back."""
        import threading
        if threading.current_thread() is not threading.main_thread():
            self.call_from_thread(self._tokenizer_source_changed, falling_back)
            return
        from tui.context.tokens import SegmentCache
        self.wb.cache = SegmentCache()  # counts cached so far came from the other tokenizer
        if falling_back:
            self.query_one(ChatPanel).set_status("the server's tokenizer does not answer: counting locally "
                                                 "(estimate) until it is back", "yellow")
        else:
            self.query_one(ChatPanel).set_status("the server's tokenizer is back: counts are exact again", "green")
        self._schedule_rebuild(0.0)

    def retry_server_tokenizer(self) -> None:
        """On a timer: while counting locally, ask the server again once its back-off has passed."""
        if getattr(self.wb.tokenizer, "retry_due", lambda: False)():
            self._schedule_rebuild(0.0)

    def _endpoint_for(self, base: str, source: str) -> Endpoint:
        """The key goes only where the user pointed: a flag, the environment, config.toml, or a URL they
        confirmed in the app. A URL from a session file or found by scanning gets no key."""
        from tui.client.endpoint import endpoint_for, normalise_base_url
        if normalise_base_url(base) in self.trusted_urls:
            source = "user"
        return endpoint_for(base, source, self.settings.model or self.wb.session.model, self.settings.api_key_env)

    def _key_note(self, endpoint: Endpoint) -> str:
        if not endpoint.key_withheld:
            return ""
        return (f" · without ${self.settings.api_key_env}: this URL came from the session, not from you "
                "(palette: 'Send my API key to this endpoint')")

    def action_trust_endpoint(self) -> None:
        """Send the key to the endpoint the session named, after the user says yes."""
        from tui.client.endpoint import normalise_base_url
        from .confirm_screen import ConfirmScreen
        base = self.client.endpoint.base_url if self.client else (self.settings.base_url or self.wb.session.base_url)
        if not base:
            self.notify("no endpoint to trust: connect with --base-url URL", severity="warning")
            return

        def done(yes: bool) -> None:
            if yes:
                self.trusted_urls.add(normalise_base_url(base))
                self.connect_endpoint()
        self.push_screen(ConfirmScreen(f"Send ${self.settings.api_key_env} to {base}? Only do this if you trust "
                                       "that server: it will receive your API key with every request."), done)

    # -- sending -------------------------------------------------------------------------------------
    def on_composer_submitted(self, event: Composer.Submitted) -> None:
        if self._streaming:
            self.notify("a reply is still streaming: Esc stops it", severity="warning")
            return
        if not event.text.strip():
            return
        if self.client is None:
            self.notify("offline: start with --base-url URL to send; the pane shows what would be sent",
                        severity="warning")
            return
        self.query_one(Composer).clear()
        self.wb.commit_text(event.text)
        self._show_chat()
        self._streaming = True  # one request at a time, from now until the reply ends
        self.prepare_and_send()

    @work(thread=True, exclusive=True, group="prepare")
    def prepare_and_send(self) -> None:
        """Render the request off the event loop (a template from outside may be slow), then send it."""
        try:
            view = self.wb.compute(with_draft=False)
        except TemplateRenderError as exc:
            self._streaming = False
            self.call_from_thread(self.notify, f"not sent: template {self.wb.template.name} rejects the "
                                  f"conversation: {exc}", severity="error", timeout=10)
            self.call_from_thread(self.autosave)
            return
        self.call_from_thread(self._send_prepared, view)

    def _send_prepared(self, view) -> None:
        self.wb.view = view
        if self.wb.summary_needed(view):
            self.summarise_then_send()
            return
        self.send(self.wb.request_body(view), view)

    @work(exclusive=True, group="summary")
    async def summarise_then_send(self) -> None:
        """The summarise policy: one model call makes the summary that stands for the dropped turns."""
        chat = self.query_one(ChatPanel)
        for _ in range(3):  # the summary takes room too: it may push one more message out, then it is redone
            dropped = self.wb.summary_needed(await asyncio.to_thread(self.wb.rebuild))
            if not dropped:
                break
            chat.set_status(f"summarising {len(dropped)} dropped messages with a model call…", "yellow")
            try:
                reply = await self.client.chat(self.wb.summary_request(dropped))
            except ClientError as exc:
                chat.set_status(f"could not summarise ({visible(str(exc))}): sending with the placeholder", "red")
                break
            cost = int((reply.usage or {}).get("total_tokens") or 0)
            self.wb.set_summary(reply.content, cost, dropped)
            chat.set_status(f"summary made: {cost} tokens spent on it", "yellow")
        try:
            view = await asyncio.to_thread(self.wb.rebuild)
        except TemplateRenderError as exc:
            self._streaming = False
            self.notify(f"not sent: template {self.wb.template.name} rejects the conversation: {exc}",
                        severity="error", timeout=10)
            return
        self.send(self.wb.request_body(view), view)

    def send(self, body: dict, view) -> None:
        record = self.wb.start_record(body, view)
        chat = self.query_one(ChatPanel)
        chat.show_messages(self.wb.session.messages, self._dropped())
        self.refresh_pane()
        from tui.context.messages import Message
        item = chat.add_message(Message("assistant", ""), len(self.wb.session.messages))
        self._streaming = True
        self.autosave(now=True)
        self.stream_reply(body, record, item)

    @work(exclusive=True, group="reply")
    async def stream_reply(self, body: dict, record, item: MessageItem) -> None:
        assembler = ReplyAssembler()
        last_paint, last_save, note = 0.0, 0.0, ""  # the first piece of a reply is saved at once
        chat = self.query_one(ChatPanel)

        def on_delta(_text: str, progress: ReplyAssembler) -> None:
            nonlocal last_paint, last_save
            now = time.monotonic()
            if now - last_paint > 0.025:
                reply = progress.reply
                item.set_reply(reply.content, reply.reasoning, reply.tool_calls)
                last_paint = now
            if now - last_save > 1.0:  # a kill mid-reply loses at most a second
                self.wb.update_record(record, progress.reply)
                self._save_in_background()
                last_save = now

        try:
            await self.client.chat(body, assembler, on_delta, lambda text: chat.set_status(visible(text), "yellow"))
        except asyncio.CancelledError:
            note = "■ stopped: the reply is kept, marked incomplete"
            assembler.reply.incomplete = True
        except ClientError as exc:
            note = f"✗ {visible(str(exc))}"
            assembler.reply.incomplete = True
            assembler.reply.error = str(exc)
        finally:
            self._streaming = False
            reply = assembler.reply
            self.wb.finish_reply(record, reply)
            self._save()
            if note:  # the error stays under the reply it cut short, and in the status line
                chat.set_status(note, "yellow" if note.startswith("■") else "red")
                last = self.wb.session.messages[-1] if self.wb.session.messages else None
                if last is not None and last.role == "assistant":
                    self.reply_notes[last.id] = note
            self.refresh_all()

    def action_stop(self) -> None:
        if self._streaming:
            self.workers.cancel_group(self, "reply")

