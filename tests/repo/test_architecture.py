"""The shape of the code (docs/decisions/001-run-folder-is-the-contract.md): no import cycle in the
library, one module that writes status files, no Streamlit in the library."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "sga_core"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in LIB.rglob("*.py")}


def imported_modules(path: Path) -> set[str]:
    """Every sga_core module ``path`` imports, at any depth of the file (function-level
    imports count: they form cycles too, only later)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        else:
            continue
        out |= {n for n in names if n in MODULES and n != me}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_the_library():
    graph = {name: imported_modules(path) for name, path in MODULES.items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_run_folder_module_names_status_files():
    """status.json is named by sga_core.runs.folder alone (RunFolder owns every run-folder
    name; sga_core.runs.status is the one writer): no other library module spells the file
    name outside its docstrings and comments."""
    allowed = {LIB / "runs" / "folder.py"}
    offenders = []
    for path in LIB.rglob("*.py"):
        if path in allowed:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                        ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)
                      and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.rstrip("/").endswith("status.json")
                    and " " not in node.value and id(node) not in docstrings):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_no_streamlit_in_the_library():
    users = [module_name(p) for p in LIB.rglob("*.py") if "streamlit" in
             {n.split(".")[0] for n in _all_imports(p)}]
    assert users == []


def _all_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


#: the modules at the top of the library: only what every layer shares (settings, config,
#: presets, files, shipped assets, statistics, text, the facade); a module that belongs to
#: one part of the library lives in that part's package
TOP_LEVEL_LIMIT = 8
HTML_TAGS = ("<div", "<span", "<table", "<br", "<wbr", "<p ", "<p>", "<style", "<script")


def test_the_top_level_holds_at_most_eight_shared_modules():
    top = sorted(p.stem for p in LIB.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= TOP_LEVEL_LIMIT, f"{len(top)} top-level modules: {top}"


def _html_strings(path: Path) -> list[str]:
    """Each string constant (f-string parts included) of ``path`` that holds an HTML tag."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            low = node.value.lower()
            if any(tag in low for tag in HTML_TAGS):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                out.append(f"{where}:{node.lineno}")
    return out


def test_the_report_package_imports_no_streamlit_and_builds_no_html():
    """sga_core/report/ returns data (rows, intervals, text); the pages render it."""
    files = sorted((LIB / "report").rglob("*.py"))
    assert len(files) >= 5  # the package is there, one module per thing it holds
    users = [module_name(p) for p in files
             if {"streamlit", "html"} & {n.split(".")[0] for n in _all_imports(p)}]
    assert users == []
    assert [hit for p in files for hit in _html_strings(p)] == []


def test_the_library_builds_no_html():
    """HTML is the UI's (ui/tokens.py colours answer tokens); the library returns data."""
    assert [hit for p in sorted(LIB.rglob("*.py")) for hit in _html_strings(p)] == []


def test_the_html_finder_finds_html(tmp_path):
    f = tmp_path / "page.py"
    f.write_text("X = '<span title=p>'\nY = f\"<DIV style='a'>{X}</div>\"\n")
    assert sorted(_html_strings(f)) == ["page.py:1", "page.py:2"]


PAGES = ROOT / "app_pages"
PAGE_IMPORTS = {"streamlit", "pandas", "plotly", "__future__", "html", "json", "re",
                "sga_core.workbench", "ui"}


def test_pages_are_thin_and_use_the_facade():
    """Each page is under 200 lines and imports the library only through its facade."""
    pages = sorted(PAGES.glob("*.py"))
    assert len(pages) == 9
    for page in pages:
        assert len(page.read_text().splitlines()) < 200, page.name
        for name in (_all_imports(page) - {"sga_core"}) | _from_imports(page):
            top = name.split(".")[0]
            allowed = name in PAGE_IMPORTS or top in PAGE_IMPORTS - {"sga_core"}
            assert allowed, f"{page.name} imports {name}"


def _from_imports(path: Path) -> set[str]:
    """``from sga_core import workbench`` counts as importing sga_core.workbench."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "sga_core":
            out |= {f"sga_core.{a.name}" for a in node.names}
    return out - {"sga_core"}


def test_no_pages_folder_beside_the_entry_script():
    """A pages/ folder would switch Streamlit into its legacy multipage mode."""
    assert not (ROOT / "pages").exists()
