"""A stress attack is named in one file, its own (``sga_core/stress/attacks/<name>.py``,
docs/stress-tests.md#add-an-attack): every list of attacks (the ``stress`` command's
choices and default, the pages' forms, the table's column order, the result checks, the
reference page) is read from the registry, so an attack added or removed is one file.

Checked for every registered attack, so a new one is checked at once:

- no code outside its own file has a string literal that *is* its name (code that picks
  it out: ``REGISTRY["..."]``, ``attacks=["..."]``); docstrings and prose may name it;
- nowhere outside its own file (code, comments, docstrings, the docs, the README) do two
  attacks' names stand within a few characters of each other: that is a list of attacks
  (``"a,b,c"``, "``a``, ``b``", a table of them), which goes stale when an attack is added.

Not read: the tests (they name the attacks they test), the reference pages generated from
the registry (``tests/repo/test_docs.py`` keeps them current), and ``bench/README.md``, a
log of the commands that were measured, each as it was run on its date.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sga_core.stress.attacks import attacks

ROOT = Path(__file__).resolve().parents[2]
#: a string literal that is an attack's name but means something else: (file, text) -> why
OTHER_MEANINGS = {
    ("sga_core/data/mapping.py", "paraphrase"): "a data column's name (TOFU-style field "
                                                "aliases), not the attack",
    ("sga_core/cli/report.py", "probe"): "the `probe` command (a run's token probabilities)",
    ("sga_core/projects/probe_job.py", "probe"): "the before/after probe job's name",
    ("sga_core/runs/jobs/probe.py", "probe"): "the before/after probe job's kind",
    ("sga_core/workbench.py", "probe"): "the workbench's probe function, exported",
}
#: two names closer than this (characters between them) make a list
NEAR = 40
UNREAD = {"bench/README.md"}


def own_files() -> dict[str, str]:
    """Attack name -> its own file, relative to the repository."""
    import sys

    return {c.name: str(Path(sys.modules[c.__module__].__file__).resolve().relative_to(ROOT))
            for c in attacks()}


def code_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for top in ("sga_core", "ui", "app_pages", "bench", "tools"):
        files += sorted((ROOT / top).rglob("*.py"))
    return [f for f in files if f.is_file()]


def text_files() -> list[Path]:
    files = code_files() + [ROOT / "README.md", ROOT / "mkdocs.yml"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    files += sorted((ROOT / "assets").rglob("*.yaml"))
    reference = ROOT / "docs" / "reference"
    return [f for f in files if f.is_file() and reference not in f.parents
            and str(f.relative_to(ROOT)) not in UNREAD]


def pattern(name: str) -> re.Pattern:
    """``name`` as a word: not inside a longer name or flag (``relearn_lr``, ``--relearn-lr``);
    a result key (``relearn-10``) counts as its attack."""
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w]|-[a-z])")


def literal_names(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each string literal in ``path`` that is an attack's name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and n.value in names and id(n) not in docs]


def lists_of_names(text: str, patterns: dict[str, re.Pattern]) -> list[tuple[int, str]]:
    """(line, excerpt) where two different attacks' names stand within :data:`NEAR`
    characters of each other."""
    hits = sorted((m.start(), m.end(), name) for name, p in patterns.items()
                  for m in p.finditer(text))
    out = []
    for (s1, e1, a), (s2, e2, b) in zip(hits, hits[1:]):
        if a != b and s2 - e1 <= NEAR:
            out.append((text.count("\n", 0, s1) + 1, text[s1:e2]))
    return out


def test_no_code_picks_an_attack_by_name_outside_its_own_file():
    own = own_files()
    offenders = []
    for path in code_files():
        rel = str(path.relative_to(ROOT))
        for line, name in literal_names(path, set(own)):
            if rel != own[name] and (rel, name) not in OTHER_MEANINGS:
                offenders.append(f"{rel}:{line}: {name!r}")
    assert offenders == [], "read the attacks from sga_core.stress.attacks instead"


def test_no_list_of_attacks_outside_the_registry():
    own = own_files()
    offenders = []
    for path in text_files():
        rel = str(path.relative_to(ROOT))
        patterns = {n: pattern(n) for n in own if own[n] != rel}
        for line, excerpt in lists_of_names(path.read_text(encoding="utf-8"), patterns):
            offenders.append(f"{rel}:{line}: {excerpt!r}")
    assert offenders == [], ("a list of attacks: read it from the registry, or link the "
                             "attack reference (docs/reference/attacks.md)")


def test_the_checks_find_a_list_and_a_literal(tmp_path):
    patterns = {n: pattern(n) for n in ("relearn", "quant4", "roleplay")}
    assert [e for _, e in lists_of_names('--attacks relearn,quant4 and "--relearn-lr"',
                                         patterns)] == ["relearn,quant4"]
    assert lists_of_names("`relearn-10` and --relearn-lr, relearn_lr, --quant4-x", patterns) == []
    assert lists_of_names("relearn" + " " * 50 + "quant4", patterns) == []
    code = tmp_path / "x.py"
    code.write_text('"""Docs may say quant4."""\nATTACKS = ["quant4"]\nHELP = "quant4 rounds"\n')
    assert literal_names(code, {"quant4"}) == [(2, "quant4")]
