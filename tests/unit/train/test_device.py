"""Device-aware defaults (docs/spec.md#54-how-a-run-is-started): ``launch.device`` auto / cpu / gpu
is resolved when a run starts, on the machine that runs it; old configs' ``launch.cpu`` still reads;
command.sh and the Train page say which device a run will use; every run records its environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sga_core.config import TrainConfig, dump_config, load_config
from sga_core.model.device import DeviceError, describe, resolve
from sga_core.runs.command import launch_argv, write_command_sh

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("device, mp, state, expected", [
    ("auto", "auto", (False, False), (True, "no", "cpu")),
    ("auto", "auto", (True, True), (False, "bf16", "cuda")),
    ("auto", "auto", (True, False), (False, "no", "cuda")),  # a GPU without bf16
    ("cpu", "auto", (True, True), (True, "no", "cpu")),  # --cpu wins over the GPU
    ("gpu", "auto", (True, True), (False, "bf16", "cuda")),
    ("auto", "no", (True, True), (False, "no", "cuda")),
    ("auto", "fp16", (True, False), (False, "fp16", "cuda")),
    ("cpu", "bf16", (False, False), (True, "bf16", "cpu")),
])
def test_resolution_on_each_kind_of_machine(device, mp, state, expected):
    r = resolve(device, mp, state=state)
    assert (r.use_cpu, r.mixed_precision, r.device) == expected
    assert r.why


def test_impossible_settings_say_why():
    with pytest.raises(DeviceError, match="no usable CUDA GPU"):
        resolve("gpu", state=(False, False))
    with pytest.raises(DeviceError, match="fp16 needs a GPU"):
        resolve("auto", "fp16", state=(False, False))
    # an accelerate config file decides the precision under 'auto'
    assert resolve("auto", "auto", config_file="ds.yaml", state=(True, True)) \
        .mixed_precision is None


def test_this_machine_resolves_to_the_cpu():
    import torch

    r = resolve("auto")
    assert r.device == ("cuda" if torch.cuda.is_available() else "cpu")


def cfg_of(launch: dict) -> TrainConfig:
    return TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"},
                                  "launch": launch})


def test_defaults_and_old_configs():
    assert cfg_of({}).launch.device == "auto"
    assert cfg_of({}).launch.mixed_precision == "auto"
    old_cpu = cfg_of({"cpu": True})  # an old config.yaml: launch.cpu true
    assert old_cpu.launch.device == "cpu" and old_cpu.launch.cpu is None
    old_gpu = cfg_of({"cpu": False, "mixed_precision": "no"})  # old --no-cpu
    assert old_gpu.launch.device == "auto" and old_gpu.launch.mixed_precision == "no"
    assert cfg_of({"cpu": False, "device": "gpu"}).launch.device == "gpu"
    text = dump_config(old_cpu)
    assert "device: cpu" in text and "cpu: " not in text.replace("device: cpu", "")


def test_old_config_file_still_loads(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "method: ga\ndata: {forget: f.jsonl}\nlaunch: {num_processes: 1, mixed_precision: 'no',"
        " cpu: true, config_file: null}\n")
    cfg = load_config(tmp_path / "config.yaml")
    assert cfg.launch.device == "cpu"


def test_command_fixes_the_device_only_when_forced(tmp_path):
    auto = launch_argv(cfg_of({}), "c.yaml")
    assert "--cpu" not in auto and "--mixed_precision" not in auto
    cpu = launch_argv(cfg_of({"device": "cpu"}), "c.yaml")
    assert "--cpu" in cpu
    bf16 = launch_argv(cfg_of({"mixed_precision": "bf16"}), "c.yaml")
    assert bf16[bf16.index("--mixed_precision") + 1] == "bf16"
    two = launch_argv(cfg_of({"num_processes": 2, "device": "cpu"}), "c.yaml")
    assert "--multi_gpu" in two and "--cpu" not in two  # DDP over gloo (see README)
    sh = write_command_sh(cfg_of({}), tmp_path).read_text()
    assert "# device: auto: the GPU when the machine that runs it has one" in sh
    sh = write_command_sh(cfg_of({"device": "cpu"}), tmp_path).read_text()
    assert "# device: cpu (forced)" in sh


def test_cli_flags_cpu_device_and_no_cpu():
    from sga_core.cli import build_parser, build_train_config

    def launch_of(*flags):
        args = build_parser().parse_args(["train", "--method", "ga", "--forget", "f.jsonl",
                                          *flags])
        return TrainConfig.from_dict(build_train_config(args)).launch

    assert launch_of().device == "auto"
    assert launch_of("--cpu").device == "cpu"
    assert launch_of("--no-cpu").device == "auto"
    assert launch_of("--device", "gpu").device == "gpu"


def test_describe_names_this_machine():
    assert "this machine: no GPU found, so the CPU" in describe("auto", gpu=None)
    assert "this machine: NVIDIA H100" in describe("auto", gpu="NVIDIA H100")
    assert describe("cpu", gpu="NVIDIA H100") == "cpu (forced)"


def test_train_page_shows_the_device(ui_env):
    from tests.helpers.ui import open_page

    at = open_page("app_pages/train.py")
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Device: auto: the GPU when the machine that runs it has one")
               for c in captions), captions


def test_environment_record(tmp_path):
    from sga_core.runs.envrecord import write_env_record

    rec = write_env_record(tmp_path, 7, device="cpu", mixed_precision="no", num_processes=1)
    on_disk = json.loads((tmp_path / "env.json").read_text())
    assert on_disk == json.loads(json.dumps(rec))
    assert rec["seed"] == 7 and rec["device"] == "cpu"
    import torch
    import transformers

    assert rec["torch"] == torch.__version__ and "cuda" in rec and "gpus" in rec
    assert rec["packages"]["transformers"] == transformers.__version__
    assert rec["packages"]["peft"]  # pinned in requirements.txt
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode == 0:
        assert rec["workbench"]["commit"] == head.stdout.strip()
        assert isinstance(rec["workbench"]["dirty"], bool)


@pytest.mark.parametrize("kind, hf_name", [("constant", "constant_with_warmup"),
                                           ("linear", "linear"), ("cosine", "cosine")])
def test_schedules_are_transformers_formulas(kind, hf_name):
    import torch
    from transformers import get_scheduler

    from sga_core.train.schedule import make_scheduler

    def lrs(make):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        sched = make(opt)
        out = []
        for _ in range(12):
            out.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        return out

    ours = lrs(lambda o: make_scheduler(o, kind, 3, 10))
    theirs = lrs(lambda o: get_scheduler(hf_name, o, num_warmup_steps=3,
                                         num_training_steps=10))
    assert ours == theirs


def test_trainer_start_up_does_not_import_peft_or_the_hf_trainer():
    """Cutting start-up imports: the training entry point and the trainer's own
    imports pull in neither peft (only LoRA runs need it) nor transformers' Trainer code."""
    import sys

    code = ("import sys, torch; from accelerate import Accelerator; "
            "from transformers import AutoModelForCausalLM, AutoTokenizer; "
            "import sga_core.train.__main__, sga_core.train.trainer, sga_core.train.schedule; "
            "print(sorted(m for m in ('peft', 'transformers.trainer_utils', 'transformers.trainer')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_one_process_runs_start_the_trainer_directly():
    from sga_core.runs.command import DIRECT_ENV, start_argv

    argv, env = start_argv(cfg_of({}), "c.yaml")
    assert argv == ["python", "-m", "sga_core.train", "--config", "c.yaml"]
    assert env == {DIRECT_ENV: "1"}
    argv, env = start_argv(cfg_of({"num_processes": 2}), "c.yaml")
    assert argv[:2] == ["accelerate", "launch"] and env == {}
    argv, _ = start_argv(cfg_of({"config_file": "ds.yaml"}), "c.yaml")
    assert argv[:4] == ["accelerate", "launch", "--config_file", "ds.yaml"]
