"""AppTest helpers shared by the page tests."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_page(page: str) -> AppTest:
    """Run the app, switch to ``page`` and check it rendered without an exception."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def shown(markdown: str) -> str:
    """The text a person reads in a Markdown element: backslash escapes removed (the pages
    escape user text, ui.show.plain, so it is never rendered as Markdown)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)
