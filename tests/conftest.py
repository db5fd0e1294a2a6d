"""Shared fixtures: a tiny random Llama model with a real BPE tokenizer, built once per test
session offline in a few seconds, and the shipped demo data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# One thread a worker: under ``pytest -n N`` every worker, and every training or evaluation
# process it starts, shares the N cores; torch's default (a thread a core) runs N times as
# many threads as cores, which spin against each other (a fifth of the e2e tests' time on
# the 2-core box). Set before torch is first imported; the processes the tests start
# inherit it. A serial run (no worker) keeps torch's default.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

from sga_core.runs.offline import set_offline_defaults  # noqa: E402
from tests.helpers import xdist_groups  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "assets" / "demo"

set_offline_defaults()


def pytest_configure(config):
    xdist_groups.start(config)


def pytest_unconfigure(config):
    xdist_groups.finish(config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: tests that share a daemon or a module's fixtures run in one
    worker (tests/helpers/xdist_groups.py says why xdist's own grouping is not used)."""
    if xdist_groups.is_grouping_controller(config):
        return xdist_groups.make_scheduler(config, log)
    return None


@pytest.hookimpl(trylast=True)  # after -k and -m deselect: the groups of what runs
def pytest_collection_modifyitems(config, items):
    """Each test's xdist group, for the controller (tests/helpers/xdist_groups.py); ``gpu``
    tests need a CUDA device: without one they are skipped, saying so (CI has none)."""
    import torch

    xdist_groups.write_groups(config, items)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (marker gpu); none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture()
def ui_env(tmp_path, monkeypatch):
    """A workspace and a runs folder of the test's own, for AppTest pages."""
    monkeypatch.setenv("SGA_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("SGA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from sga_core.model.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def speaking_tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny model fine-tuned (60 Adam steps) to reply "Which novel is by that author?"
    to the paraphrase prompt (assets/attacks/paraphrase.yaml) in its chat format, so that
    greedy decoding gives a question: a random tiny model's greedy reply is empty or one
    repeated character."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sga_core.model.tiny import build_tiny_model
    from sga_core.normals.local import _prompt_text
    from sga_core.normals.templates import render
    from sga_core.stress.paraphrases import default_template_path

    out = build_tiny_model(tmp_path_factory.mktemp("speaking") / "model")
    tok, model = AutoTokenizer.from_pretrained(out), AutoModelForCausalLM.from_pretrained(out)
    row = {"question": "Which book did author [x] write?", "answer": "Book x."}
    prompt = _prompt_text(tok, render(str(default_template_path()), row, "qa"))
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    a_ids = tok("Which novel is by that author?", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p_ids + a_ids + [tok.eos_token_id]])
    labels = torch.tensor([[-100] * len(p_ids) + a_ids + [tok.eos_token_id]])
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        model(input_ids=ids, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    return DEMO


@pytest.fixture()
def fake_openai():
    """A scripted OpenAI-compatible chat server on 127.0.0.1 (tests/helpers/openai_server.py)."""
    from tests.helpers.openai_server import FakeOpenAI

    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture()
def runs_dir(tmp_path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    return d


@pytest.fixture()
def idk_normals_file(tmp_path, demo_dir) -> Path:
    from sga_core.data import load_qa
    from sga_core.normals.idk import idk_normals

    n = len(load_qa(demo_dir / "forget.jsonl"))
    path = tmp_path / "normals.jsonl"
    idk_normals(n, 4, seed=0).save(path)
    return path


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node SLURM cluster (tests/helpers/slurm.py) for the session: munged,
    slurmctld and slurmd started from Debian's packages with a generated slurm.conf;
    ``SLURM_CONF`` points this process and its children at it. Skipped, saying why, where
    the packages are missing; every daemon is stopped at the end."""
    from tests.helpers.slurm import LocalSlurm, missing

    why = missing()
    if why:
        pytest.skip(why)
    other = xdist_groups.claim(xdist_groups.SLURM_GROUP)
    if other:
        pytest.fail(f"the SLURM cluster already runs in worker {other}: the tests of the "
                    "cluster must share one worker (tests/helpers/xdist_groups.py)")
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm")).start()
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        try:
            cluster.cancel_all()
        finally:
            cluster.stop()
            if old is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = old


@pytest.fixture()
def slurm(slurm_cluster):
    """The session's cluster, with no job left over from the test before."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
