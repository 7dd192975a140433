"""The session's switches, as the palette, F2-F5 and the slash commands make them: template, policy, model,
fences. Each is one change in the history (history.py), undone like any other."""

from __future__ import annotations

from typing import Callable

from tui.context.policy.truncation import PolicyError
from tui.context.untrusted.visible import visible
from tui.context.templates.library import builtin_names, builtin_template

from tui.controller.history import Operation, OpKind
from tui.controller.events import Severity
from tui.controller.parts import Parts


class Switches:
    """`counting_said`: say again how tokens are counted; `what_if_said`: say what a template picked means while
    the server renders its own (both the tokenizing's and the tuning's)."""

    def __init__(self, parts: Parts, counting_said: Callable[[], None], what_if_said: Callable[[], None]) -> None:
        self.parts, self._counting_said, self._what_if_said = parts, counting_said, what_if_said

    def template_choices(self) -> list[tuple[str, str]]:
        options = [(name, name) for name in builtin_names()]
        connection = self.parts.link.connection
        if connection and connection.template:
            options.insert(0, ("@server", f"the server's own ({connection.info.kind})"))
        return options

    def set_template(self, choice: str) -> None:
        """A shipped template by name, or '@server': the server's own."""
        before, connection = self.parts.wb.template, self.parts.link.connection
        if choice != "@server":
            self.parts.wb.set_template(builtin_template(choice))
        elif connection is not None and connection.template is not None:
            self.parts.wb.set_template(connection.template)
        else:  # (offered only while the server has one)
            self.parts.notify("the server shows no template of its own", severity=Severity.WARNING)
            return
        template = self.parts.wb.template
        self.parts.history.add(Operation(OpKind.TEMPLATE, f"template {visible(template.name)}", before=before,
                                         after=template))
        self._counting_said()
        self.parts.changed()
        self._what_if_said()

    def set_policy(self, name: str) -> None:
        before = self.parts.history.settings_before("policy")
        try:
            self.parts.wb.set_policy(name=name)
        except PolicyError as exc:
            self.parts.notify(str(exc), severity=Severity.ERROR)
            return
        self.parts.history.settings_changed(f"policy {name}", before)
        self.parts.changed()

    def set_model(self, name: str) -> None:
        before = self.parts.history.settings_before("model")
        self.parts.wb.session.model = name  # what the request body names; the link's, for its own calls
        if self.parts.client is not None:
            self.parts.client.endpoint.model = name
        self.parts.history.settings_changed(f"model {visible(name[:80])}", before)
        self.parts.changed()

    async def models(self) -> list[str] | None:
        """The server's models (None, and said why, when there are none to pick from)."""
        from tui.client.errors import ClientError
        if self.parts.client is None:
            self.parts.notify("offline: no server to list models from", severity=Severity.WARNING)
            return None
        try:
            names: list[str] = await self.parts.client.list_models()
        except ClientError as exc:
            self.parts.notify(visible(str(exc)), severity=Severity.ERROR)
            return None
        return names

    def toggle_fences(self) -> None:
        before = self.parts.history.settings_before("fences")
        session = self.parts.wb.session
        session.fences = not session.fences
        said = f"fences {'on' if session.fences else 'off'}"
        self.parts.history.settings_changed(said, before)
        self.parts.notify(said)
        self.parts.changed()
