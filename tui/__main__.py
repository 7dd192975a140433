from tui.cli import entry

entry()
