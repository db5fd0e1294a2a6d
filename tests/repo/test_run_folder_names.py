"""The names of a run folder's files are spelled in one place, ``sga_core/runs/folder.py``
(docs/decisions/001-run-folder-is-the-contract.md): every other module asks
:class:`~sga_core.runs.folder.RunFolder` for a path, or imports the name. The list of names
is read from the module itself, so a name added there is checked at once.

Only code counts, read with :mod:`ast`: docstrings, comments and prose (a message or help
text with a space in it, "eval/summary.json counts them") may name a file for a reader. A
string literal that *is* a name, or a path made of names ("eval/summary.json"), is code
spelling it. A name that is also an ordinary word ("model", "eval", "data") counts only
where it builds a path: joined with ``/``, or given to ``Path``, ``joinpath`` or
``os.path.join``, or bound to an upper-case constant.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sga_core.runs import folder

ROOT = Path(__file__).resolve().parents[2]
OWNER = ROOT / "sga_core" / "runs" / "folder.py"
NAMES = frozenset(folder.NAMES)
# names that are file names and nothing else: any literal that is one spells it
DISTINCT = frozenset(n for n in NAMES if "." in n or n.isupper())
PATH_CALLS = {"Path", "PurePath", "PosixPath", "joinpath", "join"}
#: a folder that is not a run folder but shares a word with one: (file, name) -> why
OTHER_FOLDERS = {
    ("sga_core/projects/project.py", "eval"): "a project's evaluation sets, not a run's eval/",
    ("sga_core/projects/create.py", "eval"): "a new project's evaluation sets, not a run's eval/",
}


def sources() -> list[Path]:
    files = [ROOT / "app.py"]
    for top in ("sga_core", "ui", "app_pages", "bench"):
        files += sorted((ROOT / top).rglob("*.py"))
    return [f for f in files if f.exists() and f != OWNER]


def docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}


def is_name_path(value: str) -> bool:
    """A literal that is a run-folder name or a path of them: "metrics.jsonl",
    "eval/summary.json", "./eval/" (with at least one name that is a file name only, or
    all of its parts names)."""
    parts = [p for p in re.split(r"[/\\]", value.strip()) if p not in ("", ".")]
    if not parts or any(" " in p for p in parts):
        return False
    if parts[-1] in DISTINCT and all(p in NAMES or p == ".." for p in parts[:-1]):
        return True
    return len(parts) > 1 and all(p in NAMES for p in parts)


def path_literals(tree: ast.AST) -> list[ast.Constant]:
    """String constants that build a path: operands of ``/``, arguments of a path call,
    values of an upper-case constant."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            out += [n for n in (node.left, node.right) if isinstance(n, ast.Constant)]
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            if name in PATH_CALLS:
                out += [a for a in node.args if isinstance(a, ast.Constant)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id.isupper() for t in targets) and \
                    isinstance(node.value, ast.Constant):
                out.append(node.value)
    return [n for n in out if isinstance(n.value, str)]


def spellings(path: Path, root: Path = ROOT) -> list[str]:
    rel = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in skip and is_name_path(node.value):
            found.add((node.lineno, node.value))
    for node in path_literals(tree):
        if node.value.strip("/") in NAMES and (rel, node.value.strip("/")) not in OTHER_FOLDERS:
            found.add((node.lineno, node.value))
    return [f"{rel}:{line}: {value!r}" for line, value in sorted(found)]


def test_no_module_but_the_run_folder_spells_a_run_folder_name():
    offenders = [s for path in sources() for s in spellings(path)]
    assert offenders == [], "spell these through sga_core.runs.folder:\n" + "\n".join(offenders)


def test_the_names_cover_every_file_the_run_folder_holds():
    """The names the check looks for are the run folder's own: every path RunFolder gives
    ends in one of them, and each is listed once."""
    run = folder.RunFolder("/r")
    paths = [getattr(run, a) for a in dir(folder.RunFolder)
             if isinstance(getattr(folder.RunFolder, a, None), property) and a != "run_id"]
    assert len(paths) >= 20
    assert all(p.name in NAMES for p in paths), [p for p in paths if p.name not in NAMES]
    assert len(set(folder.NAMES)) == len(folder.NAMES)


def test_the_check_finds_each_way_of_spelling_a_name(tmp_path):
    """The check is not blind: each way code could spell a name is found, prose is not."""
    code = tmp_path / "x.py"
    code.write_text(
        '"""Docstring naming eval/summary.json is fine."""\n'
        'from pathlib import Path\n'
        'MODEL = "model"\n'
        'a = run / "metrics.jsonl"\n'
        'b = Path("eval") / name\n'
        'c = run.joinpath("model")\n'
        'd = "eval/summary.json"\n'
        'e = f"{run}/{\'CANCEL\'}"\n'
        'f = {"model": 1, "eval": {}}  # config keys, not paths\n'
        'g = "see eval/summary.json for the numbers"\n')
    found = spellings(code, tmp_path)
    assert [s.split(":")[1] for s in found] == ["3", "4", "5", "6", "7", "8"], found
