"""From a document to token counts: the tokenizers, the counting, and the cheap recount of a draft."""
