"""Every expander with fields in it keeps its open state in the session (``ui.show.panel``,
or ``st.expander(..., key=..., on_change="rerun")``): a keyless one is drawn anew, folded,
when a field changes the page above it (tests/browser/test_expanders_stay_open.py shows it
in a real browser). Read from the source: one rule for every page."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what puts a field on the page: Streamlit's inputs and the workbench's form helpers
FIELDS = {"selectbox", "multiselect", "text_input", "text_area", "number_input", "checkbox",
          "radio", "toggle", "slider", "select_slider", "button", "file_uploader",
          "data_editor", "date_input", "color_picker", "kept", "dataclass_form",
          "metric_vs_r", "generation_settings"}


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def unkept_panels() -> list[str]:
    out = []
    for path in sorted([*(ROOT / "ui").glob("*.py"), *(ROOT / "app_pages").glob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.With):
                continue
            for item in node.items:
                call = item.context_expr
                if not (isinstance(call, ast.Call) and _name(call) == "expander"):
                    continue
                kw = {k.arg: k.value for k in call.keywords}
                if "key" in kw and isinstance(kw.get("on_change"), ast.Constant) and \
                        kw["on_change"].value == "rerun":
                    continue
                fields = {_name(c) for stmt in node.body for c in ast.walk(stmt)
                          if isinstance(c, ast.Call)} & FIELDS
                if fields:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    out.append(f"{where} ({', '.join(sorted(fields))})")
    return out


def test_every_panel_with_fields_keeps_its_open_state():
    assert unkept_panels() == [], ("expanders with fields but no kept open state (use "
                                   "ui.show.panel)")
