"""`python -m sga_core sustain`'s refusals: one line naming what is wrong and the fix, exit
code 2, and nothing written into the project."""

from __future__ import annotations

import pytest

from sga_core.cli import main
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import published_files, study_files


@pytest.fixture
def ws(tmp_path):
    folder = write_folder(tmp_path / "news", {**published_files(), **study_files()})
    import_benchmark("muse-news", folder=folder, root=tmp_path / "ws", study_splits=True)
    import_benchmark("muse-news", "plain", folder=folder, root=tmp_path / "ws")
    return tmp_path / "ws"


@pytest.mark.parametrize("args, message", [
    ([], "has no Original to start the study from: prepare it first"),
    (["--show"], "has no study yet: launch one with `python -m sga_core sustain"),
    (["--show", "zz"], "has no study 'zz'"),
    (["--model", "/m", "--requests", "5"], "5 asked for, but project muse-news has 4"),
    (["--model", "/m", "--scale", "--name", "x_y"], "study name 'x_y'"),
    (["--model", "/m", "--seeds", "2"], "a study runs one seed"),
])
def test_refusals_are_one_line(ws, tmp_path, capsys, args, message):
    assert main(["sustain", "--project", "muse-news", "--workspace", str(ws), "--runs-dir",
                 str(tmp_path / "runs"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (ws / "muse-news" / "studies").exists() or \
        not any((ws / "muse-news" / "studies").iterdir())


def test_a_project_without_parts_is_told_to_import_them(ws, tmp_path, capsys):
    assert main(["sustain", "--project", "plain", "--model", "/m", "--workspace", str(ws),
                 "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "import muse-news --study-splits" in capsys.readouterr().err
