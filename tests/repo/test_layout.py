"""The tests are arranged like the code: unit tests per library package, page tests (AppTest),
real-browser tests, end-to-end CLI/process tests, the hostile audit's corpus tests, repository
checks, and shared helpers. A test file dropped at the top of tests/ fails here."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LIB = TESTS.parent / "sga_core"
FOLDERS = {"unit", "ui", "browser", "e2e", "hostile", "repo", "helpers"}


def test_no_test_module_at_the_top_of_tests():
    top = sorted(p.name for p in TESTS.glob("*.py"))
    assert top == ["__init__.py", "conftest.py"]


def test_only_the_known_folders():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders <= FOLDERS, folders - FOLDERS


def test_unit_folders_name_library_packages_or_top_modules():
    names = {p.name for p in LIB.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in LIB.glob("*.py")}
    unit = {p.name for p in (TESTS / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert unit <= names, unit - names


def test_helpers_hold_no_tests():
    helpers = TESTS / "helpers"
    assert [p.name for p in helpers.glob("test_*.py")] == []


def test_every_test_folder_is_a_package():
    """Test modules in different folders may share a name (ui/test_results.py,
    unit/report/test_results.py) only if every folder is a package."""
    folders = [d for d in TESTS.rglob("*") if d.is_dir() and d.name != "__pycache__"]
    missing = [str(d.relative_to(TESTS)) for d in folders
               if any(d.glob("*.py")) and not (d / "__init__.py").exists()]
    assert missing == []
