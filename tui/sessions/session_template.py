"""A session's template: the text stored in the session, or a built-in; never a path the file names.

A session file is data someone may have sent: its `origin` ("file:/dev/zero", "file:~/.ssh/id_rsa")
only says where the template once came from. Reading that path would let the file choose what
ctxpane reads, so only the stored text is used; without text, the built-in of the same name.
"""

from __future__ import annotations

from typing import Any

from tui.context.errors import TemplateNotFound
from tui.context.json_types import JSONObject
from tui.context.templates.library import BUILTINS, ChatTemplate, builtin_template


def template_from_session(spec: JSONObject) -> ChatTemplate:
    """The template a session records; raises TemplateNotFound (one line) when there is none to use."""
    name = str(spec.get("name") or "chatml")
    origin = str(spec.get("origin") or "builtin")
    text = spec.get("text")
    if isinstance(text, str) and text:
        defaults = {k: v for k, v in (spec.get("defaults") or {}).items() if v is not None}
        return ChatTemplate(name, origin, text, defaults)
    try:
        template = builtin_template(name)
    except TemplateNotFound:
        where = f" (from {origin[:200]})" if origin != "builtin" else ""
        raise TemplateNotFound(f"the session's template {name[:80]!r}{where} has no stored text and is not "
                               f"built in: choose one with --template (built-in: {', '.join(BUILTINS)})") from None
    # The defaults it was used with (plain ChatML has default_system ''): checked names, bounded by the schema.
    template.defaults.update({k: v for k, v in (spec.get("defaults") or {}).items() if v is not None})
    return template


def builtin_defaults(name: str) -> dict[str, Any]:
    """A built-in template's own defaults ({} for a name that is not built in)."""
    try:
        return dict(builtin_template(name).defaults)
    except TemplateNotFound:
        return {}
