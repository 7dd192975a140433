"""The context engine: messages -> the document the model receives -> tokens.

Pure Python: no Textual, no network. Everything the context pane shows is computed here.
Names are loaded on first use, so importing one part (say, `visible`, which the first frame needs) loads no
other. `assemble` is both a module and its main function: import it from tui.context.assemble.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Document": "document", "Span": "document", "build_document": "document",
    "Message": "messages", "Provenance": "messages", "message_from_dict": "messages",
    "messages_from_list": "messages",
    "ChatTemplate": "templates.library", "TemplateNotFound": "errors", "builtin_names": "templates.library",
    "builtin_template": "templates.library", "load_template": "templates.library",
    "TemplateRenderError": "errors", "render_template": "templates.hf_render",
    "TokenCounts": "tokens.counting", "get_tokenizer": "tokens.counting", "tokenizer_for_model": "families.registry",
    "Identity": "families.identity", "tokenizer_identity": "families.identity", "exact_counts": "families.identity",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
