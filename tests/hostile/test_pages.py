"""Hostile files through the pages: a representative subset of the
generated corpus (tests/helpers/hostile_corpus.py) goes through the Data page (new project), the
Normal answers page (import) and every hostile preset through the Train page. No exception
element, a clear error naming the file, nothing written on failure, and the page stays
usable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.hostile_corpus import hostile_files, representative
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow
PAGES = sorted(f"app_pages/{p.name}" for p in (Path(__file__).resolve().parents[2] /
                                               "app_pages").glob("*.py"))


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return hostile_files(tmp_path_factory.mktemp("hostile"))


def test_data_page_new_project(ui_env, corpus, capsys):
    """Each accepted file's project renders on all nine pages: an accepted input never
    breaks a page."""
    at = open_page("app_pages/data.py")
    pages = 0
    ws = ui_env / "workspace"
    files = [f for f in representative(corpus) if f.target == "dataset"]
    assert len(files) >= 20
    for n, f in enumerate(files):
        before = tree(ws)
        name = f"h{n}"
        at.text_input(key="data.name").set_value(name).run()
        at.get("file_uploader")[0].set_value((f.path.name, f.path.read_bytes(),
                                              "application/octet-stream")).run()
        at.button(key="data.create").click().run()
        assert not at.exception, (f.path.name, at.exception)
        errors = [shown(e.value) for e in at.error]
        if f.expect == "error":
            assert errors and f.path.name in errors[0], (f.path.name, errors)
            assert "/tmp" not in errors[0]  # never a server-side temporary path
            assert tree(ws) == before, f.path.name  # nothing written
        else:
            assert not errors, (f.path.name, errors)
            assert (ws / name / "project.json").exists()
            for page in PAGES:  # the new project (now the current one) loads on every page
                at.switch_page(page).run()
                assert not at.exception, (f.path.name, page, at.exception)
                pages += 1
            at.switch_page("app_pages/data.py").run()
    with capsys.disabled():
        print(f"\nhostile pages: {len(files)} datasets through the Data page "
              f"({sum(f.expect == 'error' for f in files)} clear errors, nothing written), "
              f"{sum(f.expect == 'load' for f in files)} accepted, each rendered on every "
              f"page: {pages} page renders, 0 exceptions")


def test_normals_page_import(ui_env, corpus):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=ui_env / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    at = open_page("app_pages/normals.py")
    files = [f for f in representative(corpus) if f.target == "normals"]
    assert files  # each is checked below
    for f in files:
        before = tree(project.path)
        at.get("file_uploader")[0].set_value((f.path.name, f.path.read_bytes(),
                                              "application/octet-stream")).run()
        at.button(key="normals.do_import").click().run()
        assert not at.exception, (f.path.name, at.exception)
        errors = [shown(e.value) for e in at.error]
        if f.expect == "error":
            assert errors and f.path.name in errors[0], (f.path.name, errors)
            assert tree(project.path) == before, f.path.name
        else:
            assert not errors, (f.path.name, errors)
        project.save_normals(idk_normals(10, 4), "reset")  # the next file starts from K=4
        at.run()
        assert not at.exception


def test_train_page_presets(ui_env, corpus):
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=ui_env / "workspace")
    presets = project.path / "presets"
    presets.mkdir()
    files = [f for f in corpus if f.target == "preset"]
    assert len(files) >= 20
    for f in files:
        shutil.copyfile(f.path, presets / f"{f.path.stem}.yaml")
    at = open_page("app_pages/train.py")
    for f in files:
        at.selectbox(key="train.preset_choice").set_value(f"{f.path.stem}.yaml").run()
        at.button(key="train.preset_load").click().run()
        assert not at.exception, (f.path.name, at.exception)
        errors = [shown(e.value) for e in at.error]
        if f.expect == "error":
            assert any(f"{f.path.stem}.yaml" in e for e in errors), (f.path.name, errors)
        else:
            assert not any("cannot load" in e for e in errors), (f.path.name, errors)
        # the page stays usable: another page and back, then a preview
        at.switch_page("app_pages/runs.py").run()
        at.switch_page("app_pages/train.py").run()
        assert not at.exception, (f.path.name, at.exception)


@pytest.mark.parametrize("spec", ["0:inf:1", "nan", "0:1:0", "1:0:1", "0:1000000:1e-9", "x"])
def test_train_page_sweep_specs_are_bounded(ui_env, spec):
    at = open_page("app_pages/train.py")
    at.text_input(key="train.sweep_values").set_value(spec).run()
    at.button(key="train.sweep").click().run()
    assert not at.exception, at.exception
    assert any("sweep" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert not [p for p in (ui_env / "runs").glob("*") if not p.name.startswith(".")]
