"""Helpers for driving the app in tests: isolated XDG folders and plain-text reads of what is shown."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from textual.content import Content
from textual.widgets import Static

from tui.app.app import CtxpaneApp, LaunchOptions
from tui.app.pane.document_tab import DocumentView


def isolated(monkeypatch, tmp_path: Path) -> Path:
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "xdg_data_home" / "ctxpane" / "sessions"


def make_app(tmp_path: Path, **options) -> CtxpaneApp:
    flags = {"no_scan": True, **options.pop("flags", {})}
    return CtxpaneApp(LaunchOptions(flags=flags, sessions_folder=tmp_path / "sessions", **options))


def document_rows(app: CtxpaneApp) -> list[str]:
    """Every row the document view would draw, as plain text."""
    view = app.screen.query_one(DocumentView)
    rows = []
    for row in range(view.layout_model.height):
        strip = view._render_row(row)
        rows.append("".join(segment.text for segment in strip))
    return rows


def plain(shown) -> str:
    """Plain text of a Static widget's content, a Textual Content, or any Rich renderable."""
    if isinstance(shown, Static):
        shown = shown.content
    if isinstance(shown, Content):
        return shown.plain
    console = Console(width=200, record=True, color_system=None)
    console.print(shown)
    return console.export_text()


async def settle(pilot, app: CtxpaneApp, seconds: float = 30.0) -> None:
    """Wait until background work (tokenizer, rebuilds) has finished and the screen is drawn.

    A rebuild that a newer one replaced ends cancelled: that is the app working, not a failure.
    Work that starts more work (opening a file, then computing it) is waited for to the end.
    """
    import asyncio

    from textual.worker import WorkerCancelled, WorkerState

    def writer():  # saves are written by their own thread, not a Textual worker
        return app.controller.file.writer
    for round_ in range(int(seconds / 0.05)):
        busy = any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)
        if round_ >= 3 and not busy and (writer() is None or writer().idle):
            return
        for _attempt in range(10):
            try:
                await app.workers.wait_for_complete()
                break
            except WorkerCancelled:
                continue
        if writer() is not None:
            await asyncio.to_thread(writer().wait_idle, 10)
        await pilot.pause(0.05)  # the poll (three at least: work that what was just done starts has begun by then)
