"""Editors that show what they hold without letting a control character reach the terminal, and that take a
burst of keys in the order it was typed."""

from __future__ import annotations

from typing import Callable

from textual import events
from textual.widgets import Input, TextArea

from tui.app.shown import VisibleLines


async def pass_on(app, event: events.Key) -> None:
    """Deliver a key as the App would now: its priority bindings, then the focused widget (or, nothing focused
    yet, the screen, which holds it: KeysBeforeFocus).

    A widget that types nothing (a list, a button, the transcript) only passes a key up to the bindings, which
    act after the keys behind it: its binding acts here instead (Tab on the policy list sent the next field's
    keys to the list)."""
    if app.focused is None and isinstance(app.screen, KeysBeforeFocus):  # a dialog still opening: held, in order
        app.screen._forward_event(events.Key(event.key, event.character))  # (a Tab run now would find no field)
        return
    with app._context():  # as the App runs a binding: see OrderedKeys._on_key
        if await app._check_bindings(event.key, priority=True):
            return
        target = app.focused
        if target is not None and not isinstance(target, OrderedKeys) and await app._check_bindings(event.key):
            return
    (target or app.screen)._forward_event(events.Key(event.key, event.character))


class OrderedKeys:
    """Keys act in the order they were typed, also when one of them moves the focus.

    The App hands every key of a burst (a fast typist, tmux send-keys, a paste of keys) to the focused widget
    at once, and runs a binding only when its key has come back up to it: by then the keys behind it had been
    handled here, before the binding they followed. Three rules keep the order:
    - the editor's own bindings (End, Backspace, Delete, arrows…) run as their key arrives: `End BSpace 1 2`
      on "12345" gave "1", not "123412"; `5 BSpace 6` lost the 6 (found with a plain Textual Input);
    - so do the screen's and the App's bindings for a key the editor does not type (F8, Ctrl+S, Esc);
    - once such a binding has moved the focus away (a dialog opened or closed), the keys behind it go on to the
      widget focused now: after F8 they were typed into the composer, after Ctrl+S into the closed dialog.
      Only then: a key the App sent here before a later key moved the focus (Tab, a priority binding) is ours."""

    _moved_focus = False  # a binding run here sent the focus elsewhere: the keys queued behind it follow it

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and self._moved_focus:
            if self.app.focused is not self:  # type: ignore[attr-defined]
                await pass_on(self.app, event)  # type: ignore[attr-defined]
                return
            self._moved_focus = False  # the focus came back: keys are ours again
        await super().on_event(event)  # type: ignore[misc]

    async def _on_key(self, event: events.Key) -> None:
        app, focused = self.app, self.app.focused  # type: ignore[attr-defined]
        action = self._own_action(event.key)
        # Bindings run in the App's context, as Textual runs them: a dialog one opens reports its result to the
        # App. Reported to this editor, it was lost once the editor's own dialog had closed (Ctrl+S, then Ctrl+E
        # and a prompt at once: the prompt's Save did nothing).
        with app._context():
            # An action that skips (Ctrl+C with nothing selected) leaves the key to the App (Ctrl+C: how to quit).
            handled = action is not None and await app.run_action(action, self)
        if not handled:
            await super()._on_key(event)  # type: ignore[misc]
            if not event._stop_propagation:
                with app._context():
                    handled = await app._check_bindings(event.key)
        if handled:
            event.prevent_default()
            event.stop()
            self._moved_focus = app.focused is not focused

    def _own_action(self, key: str) -> str | None:
        bindings = self._bindings  # type: ignore[attr-defined]
        keymap = self.app._keymap  # type: ignore[attr-defined]
        if keymap:  # the keys as config.toml's [keys] remapped them (Textual applies them in its binding chain)
            bindings = bindings.copy()
            bindings.apply_keymap(keymap)
        for binding in bindings.key_to_bindings.get(key, []):
            name = binding.action.split("(", 1)[0]
            if hasattr(self, f"action_{name}") and self.check_action(name, ()) is not False:  # type: ignore
                return binding.action
        return None


class KeysBeforeFocus:
    """For a dialog screen: keys that reach it before it has focused its editor are typed there once it has.

    The App sends a key to the screen itself while nothing on it has focus: the keys typed right behind the
    one that opened the dialog (F8 1 2 3), and those a binding's editor passed on (OrderedKeys). The screen
    has no use for them, and they were lost. Set AUTO_FOCUS to the editor: Textual focuses it as the dialog
    is composed, and the keys are handed to it then, before any key typed later reaches it."""

    def _forward_event(self, event: events.Event) -> None:
        if not isinstance(event, events.Key) or event.is_forwarded:
            super()._forward_event(event)  # type: ignore[misc]
        elif self.focused is not None:  # type: ignore[attr-defined]
            self.focused._forward_event(event)  # type: ignore[attr-defined]
        else:
            self._early_keys = [*getattr(self, "_early_keys", []), event]

    def set_focus(self, widget, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        super().set_focus(widget, scroll_visible, from_app_focus)  # type: ignore[misc]
        early, focused = getattr(self, "_early_keys", []), self.focused  # type: ignore[attr-defined]
        if early and focused is not None:
            self._early_keys = []
            for key in early:
                focused._forward_event(key)


# Seconds a dialog that decides something is on screen, from its first paint, before it takes a key or a click.
# Keys typed for something else are in flight when it opens: the rest of a burst the terminal sent in one write, a
# fast typist's next keys. Handed to the dialog, they acted in it before the user had seen it (Ctrl+R, the composer's
# prompt search, ran a tool's command). Half a second is longer than such a burst takes to arrive and be handled,
# and shorter than reading the dialog's first line takes.
KEYS_AFTER_SHOWN = 0.5


class TakesKeysWhenSeen:
    """For a dialog whose keys decide something (run a command, send an answer): until it has been on screen for
    KEYS_AFTER_SHOWN seconds, its SEEN_BODY is disabled (nothing in it can be focused, typed into or pressed, and it
    is drawn dimmed: it is not ready yet), keys that reach the screen are dropped, not held, and its actions do
    nothing. Then the body is enabled and SEEN_FOCUS focused. Put it first among the screen's bases."""

    SEEN_BODY = "#body"
    SEEN_FOCUS = ""
    taking_keys = False

    def _on_mount(self) -> None:
        self.query_one(self.SEEN_BODY).disabled = True  # type: ignore[attr-defined]
        self.call_after_refresh(self._painted)  # type: ignore[attr-defined]

    def _painted(self) -> None:
        self.set_timer(KEYS_AFTER_SHOWN, self._take_keys)  # type: ignore[attr-defined]

    def _take_keys(self) -> None:
        self.taking_keys = True
        self.query_one(self.SEEN_BODY).disabled = False  # type: ignore[attr-defined]
        if self.SEEN_FOCUS:
            self.query_one(self.SEEN_FOCUS).focus()  # type: ignore[attr-defined]

    def _forward_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not self.taking_keys:
            return  # a key in flight as the dialog opened: not the user's answer to it
        super()._forward_event(event)  # type: ignore[misc]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not self.taking_keys:
            return False
        return super().check_action(action, parameters)  # type: ignore[misc]


class SafeTextArea(OrderedKeys, VisibleLines, TextArea):
    """A TextArea for text from outside (a pasted file, a message being edited)."""


class SafeInput(OrderedKeys, VisibleLines, Input):
    """An Input for text from outside (a label, a title, a search).

    `submit_now`: what Enter does, run as the key arrives (a Submitted message is handled after the keys typed
    behind Enter: they went into a field of a form that was closing)."""

    def __init__(self, *args, submit_now: Callable[[], object] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.submit_now = submit_now

    async def action_submit(self) -> None:
        if self.submit_now is None:
            await super().action_submit()
        else:
            self.submit_now()
