"""The server's window before sending, and what the server says it took after."""
