"""Image parts: format and pixel size from the bytes, and the token estimate per family."""
