"""The context engine: messages -> the document the model receives -> tokens.

Pure Python: no Textual, no network. Everything the context pane shows is computed here.
"""

from .assemble import Snapshot, assemble
from .document import Document, Span, build_document
from .messages import Message, Provenance, message_from_dict, messages_from_list
from .template_library import ChatTemplate, TemplateNotFound, builtin_names, builtin_template, load_template
from .templates import TemplateRenderError, render_template
from .tokens import TokenCounts, get_tokenizer, tokenizer_for_model

__all__ = [
    "ChatTemplate", "Document", "Message", "Provenance", "Snapshot", "Span", "TemplateNotFound",
    "TemplateRenderError", "TokenCounts", "assemble", "build_document", "builtin_names", "builtin_template",
    "get_tokenizer", "load_template", "message_from_dict", "messages_from_list", "render_template",
    "tokenizer_for_model",
]
