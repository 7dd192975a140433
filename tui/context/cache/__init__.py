"""Which prefix a server's prompt cache will reuse, and why it breaks where it does."""
