"""Every ``st.form`` of the pages submits only by its button: ``enter_to_submit=False``. A form
submits on Enter in any of its text fields by default, and the stress forms' Enter queued a
test of hours before the person had set its other fields
(tests/browser/test_stress_form_enter.py shows it in a real browser). Read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_form_submits_by_its_button_only():
    forms, wrong = [], []
    for path in sorted([*(ROOT / "ui").glob("*.py"), *(ROOT / "app_pages").glob("*.py"),
                        ROOT / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "form":
                forms.append(f"{path.name}:{node.lineno}")
                kw = {k.arg: k.value for k in node.keywords}
                value = kw.get("enter_to_submit")
                if not (isinstance(value, ast.Constant) and value.value is False):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert forms, "no st.form found: the rule reads nothing"
    assert not wrong, "forms that submit on Enter (give enter_to_submit=False): " + \
        ", ".join(wrong)
