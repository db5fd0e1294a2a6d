"""The docs' recipes work as written:

- "Add a method" (docs/contributing.md): its example file, dropped into the methods package,
  is found by discovery and offered by the CLI and the Train page, and it meets the method
  contract (tests/helpers/method_contract.py);
- "Add an attack" (docs/stress-tests.md): its example file, dropped into the attacks package
  (and into a copy of the package, for the processes a job starts), is the whole of the
  attack: the ``stress`` command and the reference offer it with its setting, the Runs page
  offers it and its choice, a stress test of it asked there runs as a job on the tiny model,
  and its result shows in Results' "Does it hold?" with its words."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import sga_core.methods as methods
from tests.helpers import method_contract as contract
from tests.helpers.ui import open_page

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "contributing.md"


def recipe(heading: str) -> tuple[str, str]:
    """(file name, code) of the first python block after ``heading`` in the contributing guide."""
    text = GUIDE.read_text()
    section = text[text.index(heading):]
    name = re.search(r"`sga_core/methods/(\w+\.py)`", section).group(1)
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return name, code


@pytest.fixture()
def guide_method(tmp_path):
    name, code = recipe("## Add a method")
    assert len(code.splitlines()) < 80
    folder = tmp_path / "more_methods"
    folder.mkdir()
    (folder / name).write_text(code)
    methods.__path__.append(str(folder))
    before = set(methods.REGISTRY)
    methods._discover()
    added = set(methods.REGISTRY) - before
    yield added
    methods.__path__.remove(str(folder))
    for n in added:
        methods.REGISTRY.pop(n)
    sys.modules.pop(f"sga_core.methods.{name[:-3]}", None)


def test_the_example_method_is_discovered_and_meets_the_contract(
        guide_method, tiny_model_dir, demo_dir, idk_normals_file, tmp_path, capsys):
    assert guide_method == {"ga-ceiling"}
    from sga_core.cli import main
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    with pytest.raises(SystemExit):
        main(["train", "--method", "ga-ceiling", "--help"])
    assert "(default: 8.0)" in capsys.readouterr().out
    contract.check_flags_and_yaml("ga-ceiling", demo_dir / "forget.jsonl", idk_normals_file)
    model = load_model(str(tiny_model_dir))
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    contract.check_units_loss_and_gradients("ga-ceiling", model, enc,
                                            contract.method_data(demo_dir))
    contract.check_one_training_step("ga-ceiling", tiny_model_dir, demo_dir / "forget.jsonl",
                                     demo_dir / "retain.jsonl", idk_normals_file,
                                     tmp_path / "run")


def test_the_train_page_offers_the_example_method(guide_method, ui_env):
    at = open_page("app_pages/train.py")
    assert "GA with a ceiling (bounded gradient ascent)" in at.selectbox(key="train.method").options
    at.selectbox(key="train.method").set_value("ga-ceiling").run()
    assert not at.exception
    assert at.number_input(key="train.f.m.ga-ceiling.ceiling").value == 8.0


# --- Add an attack --------------------------------------------------------------------------

STRESS_GUIDE = GUIDE.parent / "stress-tests.md"


def attack_recipe() -> tuple[str, str]:
    """(file name, code) of the python block of the stress tests' "Add an attack"."""
    text = STRESS_GUIDE.read_text()
    section = text[text.index("## Add an attack"):]
    name = re.search(r"`sga_core/stress/attacks/(\w+\.py)`", section).group(1)
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return name, code


@pytest.fixture()
def guide_attack(tmp_path):
    """The example attack registered here (its file in a folder of the attacks package's
    path, as the methods' recipe does) and in a copy of the package (``checkout``), where
    the runner and the stress process a job starts find it: (names added, checkout)."""
    import shutil

    import sga_core.stress.attacks as attacks
    from sga_core.stress.base import REGISTRY

    name, code = attack_recipe()
    assert len(code.splitlines()) < 80
    folder = tmp_path / "more_attacks"
    folder.mkdir()
    (folder / name).write_text(code)
    checkout = tmp_path / "checkout"
    shutil.copytree(GUIDE.parents[1] / "sga_core", checkout / "sga_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "sga_core" / "stress" / "attacks" / name).write_text(code)
    for shared in ("assets", "configs"):
        (checkout / shared).symlink_to(GUIDE.parents[1] / shared)
    attacks.__path__.append(str(folder))
    before = set(REGISTRY)
    attacks._discover()
    added = set(REGISTRY) - before
    yield added, checkout
    attacks.__path__.remove(str(folder))
    for n in added:
        REGISTRY.pop(n)
    sys.modules.pop(f"sga_core.stress.attacks.{name[:-3]}", None)


def test_the_example_attack_is_offered_by_the_command_and_the_reference(guide_attack, capsys):
    added, _ = guide_attack
    assert added == {"caps"}
    from sga_core.cli import main
    from sga_core.params import ConfigError, from_dict
    from sga_core.stress import StressSettings
    from sga_core.stress.run import parse_attacks
    from tools.docs_reference import attacks_page

    with pytest.raises(SystemExit):
        main(["stress", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "caps: each forget question in capital letters" in out  # the description
    assert "--caps-style" in out and "(default: 'upper')" in out
    choices = re.search(r"--attacks ATTACKS comma-separated, of: (.*?), or all", out).group(1)
    assert "caps" in choices.split(", ")
    assert parse_attacks("caps") == ["caps"] and "caps" not in parse_attacks("default")
    assert from_dict(StressSettings, {"caps_style": "title"}).caps_style == "title"
    with pytest.raises(ConfigError, match="caps_style"):
        from_dict(StressSettings, {"caps_style": "lower"})
    page = attacks_page()
    assert "## `caps`" in page and "`--caps-style`" in page and "| `caps` | question-answer" \
        in page


@pytest.mark.slow
def test_the_example_attack_runs_as_a_job_from_the_page_to_results(guide_attack, ui_env,
                                                                   tiny_model_dir):
    import json
    import os
    import shutil
    import subprocess

    from sga_core.runs.folder import RunFolder
    from sga_core.runs.progress import stress_progress
    from sga_core.runs.queue import wait_until
    from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
    from tests.helpers.stress import runner_lock
    from tests.helpers.ui import shown

    _, checkout = guide_attack
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    run = fake_run(runs, project, "sga-caps", model=str(tiny_model_dir), metrics=metrics())
    shutil.copytree(tiny_model_dir, RunFolder(run).model_dir)
    with runner_lock(runs):  # the page writes the request; no runner of this checkout takes it
        at = open_page("app_pages/runs.py")
        at.radio(key="runs.filter").set_value("all projects").run()
        at.selectbox(key="runs.select").set_value("sga-caps").run()
        assert not at.exception, at.exception
        chosen = at.multiselect(key="runs.stress_attacks")
        assert "caps" in chosen.options and "caps" not in chosen.value  # not a default one
        chosen.set_value(["caps"])
        assert at.selectbox(key="runs.stress_caps").options == ["ALL CAPITALS", "Title Case"]
        at.selectbox(key="runs.stress_caps").set_value("title")
        next(b for b in at.button if b.label == "Stress-test").click().run()
        assert not at.exception, at.exception
        assert any("Queued a stress test of sga-caps (caps; questions in title case)"
                   in shown(s.value) for s in at.success), [s.value for s in at.success]
    request = RunFolder(run).stress_request()
    assert request["attacks"] == ["caps"] and request["settings"] == {"caps_style": "title"}

    # the copy's runner takes the request and starts `python -m sga_core stress` there
    runner = subprocess.Popen(
        [sys.executable, "-m", "sga_core.runs.runner", "--runs-dir", str(runs),
         "--idle-exit", "5"], env={**os.environ, "PYTHONPATH": str(checkout)},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        assert wait_until(lambda: stress_progress(run)["state"] in ("completed", "failed"),
                          300), RunFolder(run).stress_log(30)
        assert stress_progress(run)["state"] == "completed", RunFolder(run).stress_log(30)
    finally:
        runner.terminate()
        runner.wait(30)
    res = json.loads((RunFolder(run).stress_dir / "caps.json").read_text())
    assert res["family"] == "caps" and res["settings"]["caps_style"] == "title"
    asked = [s["question"] for s in res["samples"]]
    assert asked and all(q == q.title() for q in asked)
    assert res["cases"][0]["info"]["changed"] == len(asked)

    at = open_page("app_pages/results.py")
    at.selectbox(key="_project_picker").set_value("mine").run()
    assert not at.exception, at.exception
    table = next(h.proto.body for h in at.html if "data-band" in h.proto.body)
    assert 'data-col="caps"' in table
    assert f"{len(asked)} questions changed by the capitals" in table
