"""A study's runs (sga_core/projects/study.py): sustain chains request k on request k-1's
model, scale starts every forget set from the starting model (the scal parts, or the sust
folds joined), each on its own forget part; what cannot run is refused before anything is
written, and the local backend holds a chained request until the one before has its model."""

from __future__ import annotations

import json

import pytest

from sga_core.data import load_dataset
from sga_core.params import ConfigError
from sga_core.projects.benchmarks import import_benchmark
from sga_core.projects.study import list_studies, study_configs, submit_study
from sga_core.runs import upstream
from sga_core.runs.folder import RunFolder
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import published_files, study_files, sust_fold


@pytest.fixture
def news(tmp_path):
    files = {**published_files(), **study_files()}
    return import_benchmark("muse-news", folder=write_folder(tmp_path / "news", files),
                            root=tmp_path / "ws", study_splits=True)


def texts(path) -> list[str]:
    return [r["text"] for r in load_dataset(path).rows]


SETTINGS = {"method": "ga", "training": {"max_steps": 2}, "model": "/models/original"}


def test_sustain_chains_each_request_on_the_last_runs_model(news, tmp_path):
    runs = tmp_path / "runs"
    study, cfgs = study_configs(news, "sustain", name="s", root=runs, **SETTINGS)
    assert study.runs == ["s-r1", "s-r2", "s-r3", "s-r4"]
    assert study.parts == [f"sust/forget_{k}" for k in range(1, 5)]
    assert [c.model for c in cfgs] == ["/models/original"] + \
        [str(RunFolder(runs / f"s-r{k}").model_dir) for k in range(1, 4)]
    for k, cfg in enumerate(cfgs, 1):
        assert texts(cfg.data.forget) == sust_fold(k)
        assert cfg.data.retain == str(news.retain_path)
        assert cfg.eval.protocol == "muse" and "forget_qa" in cfg.eval.sets
        assert cfg.run_id == f"s-r{k}"


def test_scale_starts_every_forget_set_from_the_original(news, tmp_path):
    study, cfgs = study_configs(news, "scale", name="g", root=tmp_path / "runs",
                                requests=3, **SETTINGS)
    assert study.parts == ["scal/forget_1", "scal/forget_2", "scal/forget_3"]
    assert {c.model for c in cfgs} == {"/models/original"}
    assert [len(texts(c.data.forget)) for c in cfgs] == [6, 12, 18]


def test_scale_without_scal_parts_joins_the_sust_folds(tmp_path):
    files = {k: v for k, v in {**published_files(), **study_files()}.items()
             if not k.startswith("scal/")}
    p = import_benchmark("muse-news", folder=write_folder(tmp_path / "n", files),
                         root=tmp_path / "ws", study_splits=True)
    study, cfgs = study_configs(p, "scale", name="g", root=tmp_path / "runs", **SETTINGS)
    assert study.parts == [f"sust/forget_1..{k}" for k in range(1, 5)]
    assert texts(cfgs[2].data.forget) == sust_fold(1) + sust_fold(2) + sust_fold(3)


def test_sga_trains_on_idk_normals_for_each_requests_rows(news, tmp_path):
    _, cfgs = study_configs(news, "sustain", name="s", root=tmp_path / "runs",
                            requests=2, method="sga", model="/m")
    for cfg in cfgs:
        lines = open(cfg.data.normals).read().splitlines()
        indices = {json.loads(x)["forget_index"] for x in lines}
        assert indices == set(range(len(sust_fold(1))))


@pytest.mark.parametrize("change, message", [
    ({"requests": 5}, "5 asked for, but project muse-news has 4 sust parts"),
    ({"training": {"seeds": "2"}}, "a study runs one seed"),
    ({"name": "Bad Name"}, "study name 'Bad Name'"),
    ({"model": None}, "has no Original to start the study from"),
])
def test_what_cannot_run_is_refused(news, tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        study_configs(news, "sustain", root=tmp_path / "runs", **{**SETTINGS, **change})


def test_a_project_without_parts_is_told_how_to_import_them(tmp_path):
    p = import_benchmark("muse-news", folder=write_folder(tmp_path / "n", published_files()),
                         root=tmp_path / "ws")
    with pytest.raises(ConfigError, match="--study-splits"):
        study_configs(p, "sustain", root=tmp_path / "runs", **SETTINGS)


def test_submitted_the_chain_waits_on_its_upstream(news, tmp_path, tiny_model_dir,
                                                   monkeypatch):
    from sga_core.runs import queue

    monkeypatch.setattr(queue, "ensure_runner", lambda *a, **k: None)  # no runner process
    runs = tmp_path / "runs"
    study, dirs = submit_study(news, "sustain", root=runs, name="q", requests=2,
                               method="ga", model=str(tiny_model_dir))
    assert [d.name for d in dirs] == ["q-r1", "q-r2"]
    assert upstream.gate(dirs[0])[0] == upstream.GO
    state, why = upstream.gate(dirs[1])
    assert state == upstream.WAIT and "q-r1" in why
    assert [s.name for s in list_studies(news)] == ["q"]
    with pytest.raises(ConfigError, match="already has a study named 'q'"):
        study_configs(news, "sustain", root=runs, name="q", method="ga", model="/m")


def test_on_slurm_each_request_is_held_on_the_one_before(news, tmp_path, tiny_model_dir,
                                                         monkeypatch):
    """The same study through the SLURM backend (its tools stubbed, tests/helpers/
    slurm_stub.py): one job per request, request 2's held until request 1's ended well."""
    from tests.helpers.slurm_stub import StubSlurm

    stub = StubSlurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", stub.env()["PATH"])
    stub.answer("sbatch", out=b"4242\n")
    runs = tmp_path / "runs"
    _, dirs = submit_study(news, "sustain", backend="slurm", root=runs,
                           workspace=tmp_path / "ws", name="c", requests=2, method="ga",
                           model=str(tiny_model_dir))
    submitted = [c for c in stub.calls("sbatch") if "--parsable" in c]
    assert [c[-1] for c in submitted] == [str(d / "slurm.sh") for d in dirs]
    assert not any(a.startswith("--dependency") for a in submitted[0])
    assert "--dependency=afterok:4242" in submitted[1]
    assert RunFolder(dirs[1]).config().model == str(RunFolder(dirs[0]).model_dir)


@pytest.mark.parametrize("bad", [
    "{not json", "[]", '{"name": "x"}',
    '{"name": "x", "mode": "sustain", "method": "ga", "parts": ["a"], "runs": ["../etc"], '
    '"start_model": "/m"}',
    '{"name": "x", "mode": "sustain", "method": "ga", "parts": "ab", "runs": ["r1", "r2"], '
    '"start_model": "/m"}',
    '{"name": "x", "mode": "forget", "method": "ga", "parts": ["a"], "runs": ["r1"], '
    '"start_model": "/m"}',
])
def test_a_damaged_study_file_is_left_out_and_the_rest_shows(news, tmp_path, bad):
    from sga_core.projects.study import Study, save_study, study_path

    save_study(news, Study("good", "sustain", "ga", ["sust/forget_1"], ["good-r1"], "/m"))
    study_path(news, "bad").write_text(bad)
    assert [s.name for s in list_studies(news)] == ["good"]


def test_a_refused_study_leaves_nothing_behind(tmp_path):
    files = {k: v for k, v in {**published_files(), **study_files()}.items()
             if not k.startswith("scal/")}
    p = import_benchmark("muse-news", folder=write_folder(tmp_path / "n", files),
                         root=tmp_path / "ws", study_splits=True)
    runs = tmp_path / "runs"
    (runs / "g-r3").mkdir(parents=True)  # a run of that name already exists
    with pytest.raises(ConfigError, match="run g-r3 already exists"):
        study_configs(p, "scale", name="g", root=runs, **SETTINGS)
    assert not (p.path / "studies").exists() or not any((p.path / "studies").iterdir())
