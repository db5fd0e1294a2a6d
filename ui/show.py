"""Display helpers: user text shown as text (never Markdown: no bold, no formulas, no
remote images from a dataset), errors, run states, and the progress of background jobs."""

from __future__ import annotations

import re

import streamlit as st

from sga_core.text import plural

STATES = {  # text first, so a state reads right even where an icon cannot be drawn
    "queued": ("queued", ":material/schedule:"),
    "running": ("running", ":material/play_circle:"),
    "cancelling": ("cancelling", ":material/hourglass_top:"),  # asked to stop, not stopped yet
    "completed": ("completed", ":material/check_circle:"),
    "failed": ("failed", ":material/error:"),
    "cancelled": ("cancelled", ":material/cancel:"),
    "diverged": ("diverged", ":material/warning:"),
    "damaged": ("damaged", ":material/broken_image:"),  # a status file that cannot be used
}


_INLINE = re.compile(r"([\\`*_\[\]()<>#!|~$:&])")  # emphasis, code, links, images, HTML,
# headings, tables, strikethrough, formulas, emoji shortcodes and entities
_LINE_MARK = re.compile(r"^(\s*)([-+=>])", re.M)  # lists, quotes, setext underlines
_LINE_NUMBER = re.compile(r"^(\s*\d+)([.)])", re.M)  # numbered lists


def panel(label: str, key: str, expanded: bool = False):
    """An expander that stays open while the person works in it: its open state lives in
    the session under ``key`` (``expanded``: its state the first time), so a field that
    changes, in it or above it (a note that comes or goes moves it down the page), never
    redraws it folded, as a keyless expander is. Use it for every panel with fields."""
    st.session_state.setdefault(key, expanded)
    return st.expander(label, key=key, on_change="rerun")


def plain(text) -> str:
    """``text`` escaped so that Markdown shows it as typed: no emphasis, links, images,
    formulas ($...$), HTML or emoji shortcodes come from user data."""
    out = _INLINE.sub(r"\\\1", str(text))
    out = _LINE_MARK.sub(r"\1\\\2", out)
    return _LINE_NUMBER.sub(r"\1\\\2", out)


def as_list(items: list[str], most: int = 0) -> str:
    """``items`` as a Markdown list, one a line, each shown as text (:func:`plain`); past
    ``most`` (0: no limit), one last line says how many more there are."""
    shown = items[:most] if most else items
    more = len(items) - len(shown)
    return "\n".join([f"- {plain(item)}" for item in shown] +
                     ([f"- ... and {more} more"] if more else []))


def state_text(state: str | None) -> str:
    """A run state as plain text (tables, where icons do not render)."""
    return STATES.get(state or "", (state or "unknown", ""))[0]


def state_badge(state: str | None) -> str:
    """A run state for Markdown: an icon that always renders, then the word."""
    text, icon = STATES.get(state or "", (state or "unknown", ":material/help:"))
    return f"{icon} {text}"


FLASH = "flash"  # a confirmation to show after the rerun that follows an action


def flash(markdown: str) -> None:
    """Show ``markdown`` (user text already escaped with :func:`plain`) as a success message
    on the next run: an action that ends in ``st.rerun()`` would otherwise lose it."""
    st.session_state[FLASH] = markdown


def show_flash() -> None:
    """The confirmation left by :func:`flash`, once."""
    message = st.session_state.pop(FLASH, None)
    if message:
        st.success(message)


def created_flash(project) -> None:
    """Confirm a new project by name, with what it holds, after the rerun."""
    flash(f"Created project **{plain(project.name)}** "
          f"({plural(len(project.forget()), 'forget row')}, "
          f"{plural(len(project.retain()), 'retain row')}); every page now works on it.")


def demo_reset_flash(project) -> None:
    """Confirm a reset of the demo, after the rerun: what was written afresh, and that its
    normal-answer history was kept (how many versions, where to restore one)."""
    kept = len(project.history())
    flash(f"Reset the demo project **{plain(project.name)}**: its forget data "
          f"({plural(len(project.forget()), 'row')}), retain data "
          f"({plural(len(project.retain()), 'row')}) and evaluation sets "
          f"({plain(', '.join(project.eval_sets()))}) are written afresh, with no normal "
          "answers. " + (f"Its normal-answer history is kept ({plural(kept, 'version')}): "
                         "restore one on the Normal answers page." if kept else
                         "It had no normal answers to keep."))


def show_error(exc: Exception | str, what: str = "") -> None:
    """An error message, its user-supplied parts (file names, values) shown as text."""
    st.error(plain(f"{what}{': ' if what else ''}{exc}"))


def job_progress(js: dict, what: str) -> None:
    """Progress of a background job: a bar with done/total and its stage."""
    total = js.get("total") or 0
    done = js.get("done") or 0
    stage = js.get("stage") or "starting"
    count = f"{done}/{total}" if total else ""
    st.progress(min(1.0, done / total) if total else 0.0,
                text=plain(f"{what}: {stage} {count}"))


def follow_job(status, render) -> None:
    """Show a background job with ``render(status)``, refreshing every second while it
    runs; when it ends, the whole page reruns once to show its results."""
    first = status()

    @st.fragment(run_every=1.0 if first.get("state") == "running" else None)
    def panel():
        js = status()
        render(js)
        if first.get("state") == "running" and js.get("state") != "running":
            st.rerun(scope="app")

    panel()
