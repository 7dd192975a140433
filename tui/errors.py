"""Errors shared by the command line and the app."""


class UsageError(Exception):
    """Bad input from the user: printed as one line on stderr, exit status 2."""
