"""What a request is rendered and counted with when nobody shows the model's own template: decided by the model.

One function for every place that must guess (the app against a server that shows no template, `render`,
`import`, `replay` of a body, the tap): the model a request names picks its family, the family its built-in
template (a hosted family's is the shape of its provider's published accounting) and its tokenizer. Counts are
"exact" only when that is proven: the model's family is the template's and the tokenizer's own.
"""

from __future__ import annotations

from tui.context.families.registry import family_for_model, template_for_model, tokenizer_for_family, tokenizer_for_model
from tui.context.templates.library import ChatTemplate, builtin_template, plain_chatml


def assumed_template(model: object) -> tuple[ChatTemplate, str | None]:
    """The built-in for the model's family and its name, or ChatML with no default system prompt and None."""
    builtin = template_for_model(model)
    if builtin is None:
        return plain_chatml(), None
    return builtin_template(builtin), builtin


def assumed_tokenizer(model: object, template: ChatTemplate, chosen: bool = False) -> str:
    """The model's own tokenizer when its family has one shipped (else the estimate tokenizer, o200k_base); for a
    model of no known family, the family's of a template the user chose, else the estimate tokenizer: the same
    choice the app makes when it connects (registry.tokenizer_for_model)."""
    if family_for_model(model) is not None or not chosen:
        return tokenizer_for_model(model if isinstance(model, str) else "")
    return tokenizer_for_family(template.identity.family)


def provably_exact(model: object, template: ChatTemplate, chosen: bool = False) -> bool | None:
    """None (let the identities decide) when the model's family is the template's, or when the model names no
    family and the user chose the template (saying which family it is); False otherwise: a model of another
    family than the template's, or a guess on both sides, is counted as an estimate."""
    found = family_for_model(model)
    if found is None:
        return None if chosen else False
    return None if found.key == template.identity.family else False
