"""The facade the pages import (``sga_core/workbench.py``) only re-exports: a docstring,
imports and ``__all__``. Logic lives in the package that owns it, so a reader who follows a
page's ``wb.name`` lands on the code, and no behaviour hides in the facade."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FACADE = ROOT / "sga_core" / "workbench.py"


def facade_problems(source: str) -> list[str]:
    """Each top-level statement of ``source`` that is not its docstring, an import or
    ``__all__ = [string, ...]`` (line: what it is)."""
    problems = []
    for i, node in enumerate(ast.parse(source).body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] \
                == ["__all__"] and isinstance(node.value, (ast.List, ast.Tuple)) \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                        for e in node.value.elts):
            continue
        problems.append(f"line {node.lineno}: {type(node).__name__}")
    return problems


def test_the_facade_holds_only_imports_all_and_a_docstring():
    assert facade_problems(FACADE.read_text()) == []


def test_every_name_the_facade_exports_resolves_to_code_elsewhere():
    wb = importlib.import_module("sga_core.workbench")
    assert len(wb.__all__) == len(set(wb.__all__)), "a name is listed twice"
    missing = [n for n in wb.__all__ if not hasattr(wb, n)]
    assert missing == []
    # whatever it exports was defined in another module (never in the facade itself)
    own = [n for n in wb.__all__ if getattr(getattr(wb, n), "__module__", None) == wb.__name__]
    assert own == []


def test_the_facade_exports_every_name_it_imports():
    """An import the facade does not list in ``__all__`` is a name no page can rely on."""
    wb = importlib.import_module("sga_core.workbench")
    imported = set()
    for node in ast.parse(FACADE.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported |= {a.asname or a.name for a in node.names}
    assert sorted(imported - set(wb.__all__)) == []


def test_the_checker_finds_logic():
    source = ('"""doc."""\nfrom x import y\n__all__ = ["y"]\nLIMIT = 3\n'
              'def f():\n    return 1\nclass C:\n    pass\nif y:\n    pass\n')
    assert facade_problems(source) == ["line 4: Assign", "line 5: FunctionDef",
                                       "line 7: ClassDef", "line 9: If"]
    assert facade_problems('"""doc."""\n__all__ = ["a", b]\n') == ["line 2: Assign"]
