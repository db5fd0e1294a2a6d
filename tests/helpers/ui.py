"""AppTest helpers shared by the page tests."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_page(page: str, project: str | None = None) -> AppTest:
    """Run the app (on ``project``, chosen in the sidebar, else the first project), switch
    to ``page`` and check it rendered without an exception."""
    at = AppTest.from_file(APP, default_timeout=60)
    if project:
        at.session_state["project"] = project
    at.run()
    at.switch_page(page).run()
    if project is not None:
        at.selectbox(key="_project_picker").set_value(project).run()
    assert not at.exception, at.exception
    return at


def shown(markdown: str) -> str:
    """The text a person reads in a Markdown element: backslash escapes removed (the pages
    escape user text, ui.show.plain, so it is never rendered as Markdown)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


class _Cells(HTMLParser):
    """The cells of the Results page's HTML table: {run: {column: [text, title, style]}}
    (each row also has "_style")."""

    def __init__(self):
        super().__init__()
        self.rows: dict[str, dict] = {}
        self._run = self._col = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-run" in a:
            self._run = a["data-run"]
            self.rows[self._run] = {"_style": a.get("style") or ""}
        elif tag == "td" and self._run:
            self._col = a.get("data-col")
            self.rows[self._run][self._col] = ["", a.get("title"), a.get("style") or ""]

    def handle_data(self, data):
        if self._run and self._col:
            self.rows[self._run][self._col][0] += data

    def handle_endtag(self, tag):
        if tag == "td":
            self._col = None


def results_cells(at: AppTest) -> dict[str, dict]:
    """The Results table as a person reads it (text, hover title and style per cell)."""
    table = next(h for h in at.html if "data-run" in h.proto.body)
    parser = _Cells()
    parser.feed(table.proto.body)
    return parser.rows


def results_frame(at: AppTest):
    """The Results table as a DataFrame: numbers as floats, "—" as missing."""
    import pandas as pd

    def value(text: str):
        if text in ("—", ""):
            return None
        try:
            return float(text)
        except ValueError:
            return text

    rows = [{col: value(cell[0]) for col, cell in cells.items() if col != "_style"}
            for cells in results_cells(at).values()]
    return pd.DataFrame(rows)
