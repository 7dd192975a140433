"""The session's switches, as the palette, F2-F5 and the slash commands make them: template, policy, model,
fences. Each is one change in the history (history.py), undone like any other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.context.policy.truncation import PolicyError
from tui.context.untrusted.visible import visible
from tui.context.templates.library import builtin_names, builtin_template

from tui.controller.history import Operation, OpKind
from tui.controller.events import Severity

if TYPE_CHECKING:
    from tui.controller.controller import Controller


def template_choices(ctl: "Controller") -> list[tuple[str, str]]:
    options = [(name, name) for name in builtin_names()]
    connection = ctl.link.connection
    if connection and connection.template:
        options.insert(0, ("@server", f"the server's own ({connection.info.kind})"))
    return options


def set_template(ctl: "Controller", choice: str) -> None:
    """A shipped template by name, or '@server': the server's own."""
    before, connection = ctl.wb.template, ctl.link.connection
    if choice != "@server":
        ctl.wb.set_template(builtin_template(choice))
    elif connection is not None and connection.template is not None:
        ctl.wb.set_template(connection.template)
    else:  # (offered only while the server has one)
        ctl.notify("the server shows no template of its own", severity=Severity.WARNING)
        return
    ctl.history.add(Operation(OpKind.TEMPLATE, f"template {visible(ctl.wb.template.name)}", before=before,
                               after=ctl.wb.template))
    ctl.tokenizing.say_how_counting_goes()
    ctl.changed()
    ctl.tuning.say_what_if()


def set_policy(ctl: "Controller", name: str) -> None:
    before = ctl.history.settings_before("policy")
    try:
        ctl.wb.set_policy(name=name)
    except PolicyError as exc:
        ctl.notify(str(exc), severity=Severity.ERROR)
        return
    ctl.history.settings_changed(f"policy {name}", before)
    ctl.changed()


def set_model(ctl: "Controller", name: str) -> None:
    before = ctl.history.settings_before("model")
    ctl.wb.session.model = name  # what the request body names; the link's, for its own calls
    if ctl.client is not None:
        ctl.client.endpoint.model = name
    ctl.history.settings_changed(f"model {visible(name[:80])}", before)
    ctl.changed()


async def models(ctl: "Controller") -> list[str] | None:
    """The server's models (None, and said why, when there are none to pick from)."""
    from tui.client.errors import ClientError
    if ctl.client is None:
        ctl.notify("offline: no server to list models from", severity=Severity.WARNING)
        return None
    try:
        names: list[str] = await ctl.client.list_models()
    except ClientError as exc:
        ctl.notify(visible(str(exc)), severity=Severity.ERROR)
        return None
    return names


def toggle_fences(ctl: "Controller") -> None:
    before = ctl.history.settings_before("fences")
    ctl.wb.session.fences = not ctl.wb.session.fences
    ctl.history.settings_changed(f"fences {'on' if ctl.wb.session.fences else 'off'}", before)
    ctl.notify(f"fences {'on' if ctl.wb.session.fences else 'off'}")
    ctl.changed()
