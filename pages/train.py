"""Train: choose the model, method, r, K and settings; preview the exact command; launch a
background run or queue a sweep over r."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
import yaml

from pages._common import current_project, dataclass_form, set_form_values, show_error
from sga_core.config import ConfigError, LaunchConfig, TrainingArgs, dump_config
from sga_core.methods import get_method, method_names
from sga_core.model.losses import describe_coefficients
from sga_core.projects.training import (
    build_config,
    default_eval,
    parse_r_values,
    pending_model,
    prepared_model,
    submit_prepare,
)
from sga_core.runs import queue as jobs
from sga_core.runs.command import command_text
from sga_core.runs.folder import make_run_id, runs_root

from sga_core.assets import PRESETS_DIR as PRESETS  # noqa: E402

st.title("Train")
project = current_project()
if project is None:
    st.warning("Create or choose a project on the Data page first.")
    st.stop()

root = runs_root()

# ---------------------------------------------------------------- presets -------------------
def apply_preset(preset: dict) -> None:
    """Set every form widget from a preset (a config.yaml without run-specific fields)."""
    if not isinstance(preset, dict):
        raise ValueError("a preset must be a YAML mapping")
    st.session_state["train.loaded"] = preset
    if isinstance(preset.get("eval"), dict) and "enabled" in preset["eval"]:
        st.session_state["train.eval"] = bool(preset["eval"]["enabled"])
    if preset.get("model"):
        st.session_state["train.model_mode"] = "other model"
        st.session_state["train.model"] = str(preset["model"])
    method_name = preset.get("method", "sga")
    st.session_state["train.method"] = get_method(method_name).name
    margs = preset.get("method_args") or {}
    if "r" in margs:
        r = float(margs["r"])
        st.session_state["train.r"] = st.session_state["train.r_number"] = r
        st.session_state["train.r_slider"] = min(1.0, max(-10.0, r))
    set_form_values(get_method(method_name).Config, margs, f"train.f.m.{method_name}")
    set_form_values(TrainingArgs, preset.get("training") or {}, "train.f.t", advanced=False)
    set_form_values(TrainingArgs, preset.get("training") or {}, "train.f.ta", advanced=True)
    set_form_values(LaunchConfig, preset.get("launch") or {}, "train.f.l")


preset_files = sorted(PRESETS.glob("*.yaml")) + sorted((project.path / "presets").glob("*.yaml"))
DEMO_PRESET = PRESETS / "demo-sga.yaml"
if project.name == "demo" and DEMO_PRESET.exists() and not any(
        k in st.session_state for k in ("train.loaded", "train.method")):
    # the demo starts from the settings behind the README's figures (25 steps, probes of the
    # French rows) rather than the generic defaults (6 steps on 10 rows barely forget)
    apply_preset(yaml.safe_load(DEMO_PRESET.read_text()) or {})
    st.session_state["train.preset_choice"] = DEMO_PRESET.name
with st.expander("Presets (YAML)"):
    c1, c2 = st.columns(2)
    choice = c1.selectbox("preset", ["(none)"] + [p.name for p in preset_files],
                          key="train.preset_choice")
    if c1.button("Load preset", key="train.preset_load") and choice != "(none)":
        path = next(p for p in preset_files if p.name == choice)
        try:
            apply_preset(yaml.safe_load(path.read_text()) or {})
            st.rerun()
        except (yaml.YAMLError, KeyError, ValueError) as exc:
            show_error(exc, f"cannot load {choice}")
    preset_name = c2.text_input("save as (name)", key="train.preset_name")
    save_preset = c2.button("Save preset", key="train.preset_save")
# after the expander, so that the expander keeps its place (and its open state) when this
# caption comes and goes
if st.session_state.get("train.preset_choice") == DEMO_PRESET.name:
    st.caption(f"Settings from the preset `assets/presets/{DEMO_PRESET.name}` (Presets, above).")

loaded = st.session_state.get("train.loaded", {})

# ---------------------------------------------------------------- model ---------------------
st.subheader("Model")
original = prepared_model(project, root)
pending = pending_model(project, root)
options = (["prepared original"] if original or pending else []) + ["other model"]
mode = st.radio("model to unlearn", options, horizontal=True, key="train.model_mode")
if mode == "prepared original":
    model = str(original or pending)
    st.caption(f"`{model}`" + (" (being prepared now: runs you launch are queued behind it "
                                "and start once it is ready)" if pending else ""))
else:
    st.session_state.setdefault("train.model", "embedded:smollm2")
    model = st.text_input("model (HF id, local folder, or embedded:smollm2)", key="train.model")
if not original and not pending:
    st.info("This project has no prepared original model yet. **Prepare** fine-tunes the "
            "base model on forget + retain (the model to unlearn) and on retain only (the "
            "reference for Forget Quality); both run as queued jobs on the Runs page.")
    if st.button("Prepare models", key="train.prepare"):
        try:
            dirs = submit_prepare(project, model=model if mode == "other model" else
                                  "embedded:smollm2", root=root)
            st.session_state["train.model_mode"] = "prepared original"
            st.toast("Queued: " + ", ".join(d.name for d in dirs) + " (see Runs)")
            st.rerun()  # offer the original being prepared at once
        except (ConfigError, ValueError) as exc:
            show_error(exc, "cannot prepare")

# ---------------------------------------------------------------- method --------------------
st.subheader("Method")
names = method_names(unlearning_only=True)
st.session_state.setdefault("train.method", "sga")
method = st.selectbox("method", names, key="train.method",
                      format_func=lambda n: get_method(n).title or n)
cls = get_method(method)
margs_loaded = loaded.get("method_args", {}) if loaded.get("method") == method else {}
method_args = {}
if method == "sga":
    if "train.r" not in st.session_state:
        st.session_state["train.r"] = float(margs_loaded.get("r", -0.8))
    # Streamlit drops a widget's state when another page is shown: rebuild both r widgets
    # from the kept value, so they never come back at their minimum
    if "train.r_slider" not in st.session_state:
        st.session_state["train.r_slider"] = min(1.0, max(-10.0, st.session_state["train.r"]))
    if "train.r_number" not in st.session_state:
        st.session_state["train.r_number"] = st.session_state["train.r"]

    def _from_slider():
        st.session_state["train.r"] = st.session_state["train.r_number"] = \
            st.session_state["train.r_slider"]

    def _from_number():
        v = st.session_state["train.r_number"]
        st.session_state["train.r"] = v
        st.session_state["train.r_slider"] = min(1.0, max(-10.0, v))

    c1, c2 = st.columns([3, 1])
    c1.slider("smoothing rate r", -10.0, 1.0, step=0.05, key="train.r_slider",
              on_change=_from_slider, help="r = 0 is plain gradient ascent; negative r learns "
                                           "the normal answers.")
    c2.number_input("r (exact)", max_value=1.0, min_value=-100.0, step=0.1, format="%g",
                    key="train.r_number", on_change=_from_number)
    method_args["r"] = float(st.session_state["train.r"])
method_args.update(dataclass_form(cls.Config, margs_loaded, key=f"train.f.m.{method}",
                                  exclude=("r",)))
if method == "sga":
    st.info("**Coefficients:** " + describe_coefficients(method_args["r"], method_args["k"],
                                                         method_args["convention"]))

normals = None
if "normals" in cls.needs:
    table = project.normals()
    k_needed = method_args.get("k", 1)
    problems = table.problems(len(project.forget())) if table else ["no normal answers yet"]
    if table is not None and table.k < k_needed:
        problems = [f"the table has {table.k - 1} normal answers per row, K={k_needed} needs "
                    f"{k_needed - 1}"] + problems
    if table is not None and not problems:
        normals = str(project.normals_path)
        st.caption(f"Normal answers: {project.normals_path.name} (K={table.k}, complete)")
    else:
        st.warning("Normal answers are not ready: " + "; ".join(problems[:5]) +
                   (" ..." if len(problems) > 5 else "") +
                   ". Fix them on the Normal answers page, or train with generated "
                   "\"I don't know\" answers.")
        if st.checkbox("use generated \"I don't know\" normal answers instead",
                       key="train.idk_fallback"):
            from sga_core.normals.idk import idk_normals

            idk_path = project.path / "idk_normals.jsonl"
            idk_normals(len(project.forget()), max(2, k_needed)).save(idk_path)
            normals = str(idk_path)

# ---------------------------------------------------------------- settings ------------------
st.subheader("Training")
training = dataclass_form(TrainingArgs, loaded.get("training"), key="train.f.t", advanced=False)
with st.expander("Advanced training settings"):
    training.update(dataclass_form(TrainingArgs, loaded.get("training"), key="train.f.ta",
                                   advanced=True))
with st.expander("Accelerate (processes, precision, DeepSpeed/FSDP config)"):
    launch = dataclass_form(LaunchConfig, loaded.get("launch"), key="train.f.l")

st.session_state.setdefault("train.eval", True)
evaluate = st.checkbox("evaluate when the run completes (TOFU/MUSE metrics, token tables; "
                       "takes about as long as a short run)", key="train.eval")

if "train.run_id" not in st.session_state:
    st.session_state["train.run_id"] = ""
run_id = st.text_input("run id (empty = automatic)", key="train.run_id")


def make_cfg(run_id_value: str, sweep=None, r=None):
    args = dict(method_args)
    if r is not None:
        args["r"] = r
    return build_config(project, method=method, method_args=args, training=training,
                        launch=launch, model=model, run_id=run_id_value, sweep=sweep,
                        normals=normals, eval_cfg=default_eval(project, root, evaluate))


def resolved_id(cfg) -> str:
    return cfg.run_id or make_run_id(cfg, root)


if save_preset:
    try:
        cfg = make_cfg("")
        name = "".join(ch for ch in preset_name if ch.isalnum() or ch in "-_") or "preset"
        from sga_core.fileio import atomic_write_text

        data = cfg.to_dict()
        for key in ("run_id", "data", "sweep"):
            data.pop(key, None)
        atomic_write_text(project.path / "presets" / f"{name}.yaml",
                          yaml.safe_dump(data, sort_keys=False))
        st.success(f"Saved preset {name}.yaml")
    except (ConfigError, ValueError) as exc:
        show_error(exc, "cannot save preset")

c1, c2 = st.columns(2)
if c1.button("Preview command", key="train.preview"):
    try:
        cfg = make_cfg(run_id)
        st.session_state["train.previewed"] = (resolved_id(cfg), dump_config(make_cfg("")))
        cfg.run_id = st.session_state["train.previewed"][0]
        st.code(command_text(cfg, root / cfg.run_id), language="bash")
        with st.expander("config.yaml"):
            st.code(dump_config(cfg), language="yaml")
    except (ConfigError, ValueError) as exc:
        show_error(exc, "invalid settings")

if c2.button("Launch", type="primary", key="train.launch"):
    try:
        previewed = st.session_state.pop("train.previewed", None)
        # the previewed command's run id, if nothing changed since the preview
        same = (not run_id and previewed and previewed[1] == dump_config(make_cfg(""))
                and not (root / previewed[0]).exists())
        cfg = make_cfg(previewed[0] if same else run_id)
        run_dir = jobs.submit(cfg, root)
        st.success(f"Queued run **{run_dir.name}**. Watch it on the Runs page.")
        st.session_state["runs.selected"] = run_dir.name
    except (ConfigError, ValueError, OSError) as exc:
        show_error(exc, "cannot launch")

if method == "sga":
    with st.expander("Sweep over r"):
        text = st.text_input("r values: a list (-1, -0.8, 0, 0.4) or a range start:stop:step",
                             value="-1, -0.8, -0.4, 0, 0.4", key="train.sweep_values")
        sweep_name = st.text_input("sweep name", value="sweep", key="train.sweep_name")
        if st.button("Queue sweep", key="train.sweep"):
            try:
                values = parse_r_values(text)
                from datetime import datetime

                group = f"{sweep_name}-{datetime.now():%Y%m%d-%H%M%S}"
                queued = [jobs.submit(make_cfg("", sweep=group, r=v), root) for v in values]
                st.success(f"Queued {len(queued)} runs as sweep **{group}**: " +
                           ", ".join(q.name for q in queued))
            except (ConfigError, ValueError) as exc:
                show_error(exc, "cannot queue sweep")
