"""Engine errors, importable without loading Jinja or a tokenizer."""


class TemplateRenderError(Exception):
    """A template refused the conversation or failed while rendering.

    `kind` keeps the original error's class name (TemplateError, UndefinedError, ...),
    so a caller can tell a deliberate `raise_exception` from a broken template.
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class TemplateNotFound(ValueError):
    """An unknown template name, or a file that holds no chat template."""


class TemplateLimitError(TemplateRenderError):
    """An untrusted template reached a limit: it ran too long, built too much, or nested too deep.

    `kind` is TimeLimit, MemoryLimit, SizeLimit or RecursionLimit; `message` is one line.
    """
