"""The context engine: messages -> the document the model receives -> tokens.

Pure Python: no Textual, no network. Everything the context pane shows is computed here.
Names are loaded on first use, so importing one part (say, the reader) does not load Jinja.
"""

from importlib import import_module

# `assemble` is both a module and its main function: bind the function now (the module is light).
from .assemble import Snapshot as Snapshot, assemble as assemble

_EXPORTS = {
    "Document": "document", "Span": "document", "build_document": "document",
    "Message": "messages", "Provenance": "messages", "message_from_dict": "messages",
    "messages_from_list": "messages",
    "ChatTemplate": "template_library", "TemplateNotFound": "errors", "builtin_names": "template_library",
    "builtin_template": "template_library", "load_template": "template_library",
    "TemplateRenderError": "errors", "render_template": "templates",
    "TokenCounts": "tokens", "get_tokenizer": "tokens", "tokenizer_for_model": "registry",
    "Identity": "identity", "tokenizer_identity": "identity", "exact_counts": "identity",
}
__all__ = sorted([*_EXPORTS, "Snapshot", "assemble"])


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
