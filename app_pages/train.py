"""Train: choose the model, method and its settings; preview the exact command; launch a
background run or queue a sweep over the method's sweep setting (r for SGA)."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui import forms
from ui.cluster import backend_choice, show_batch_script
from ui.context import project_note, require_project
from ui.forms import dataclass_form, kept, put, set_form_values
from ui.protocol import eval_rows_input, protocol_caption
from ui.show import panel, plain, show_error
from ui.train_model import OTHER, model_section
from ui.train_normals import normals_choice
from ui.train_sweep import sweep_panel

st.title("Train")
project = require_project()
root = wb.runs_root()


def apply_preset(preset: dict) -> None:
    """Set every form field from a preset (already validated: wb.load_preset)."""
    st.session_state["train.loaded"] = preset
    if "enabled" in preset.get("eval", {}):
        put("train.eval", bool(preset["eval"]["enabled"]))
    if preset.get("model"):
        forms.put_later("train.model_mode", OTHER)
        forms.remember("train.model_choice", OTHER)
        put("train.model", str(preset["model"]))
    method = wb.get_method(preset.get("method", "sga"))
    put("train.method", method.name)
    set_form_values(method.Config, preset.get("method_args", {}), f"train.f.m.{method.name}")
    set_form_values(wb.TrainingArgs, preset.get("training", {}), "train.f.t", advanced=False)
    set_form_values(wb.TrainingArgs, preset.get("training", {}), "train.f.ta", advanced=True)
    set_form_values(wb.LaunchConfig, preset.get("launch", {}), "train.f.l")


def start_values() -> None:
    """A project's first visit in this session: the values its form had last time (kept on
    disk, so a browser reload keeps them); else the demo data starts from the settings behind
    the README's figures (25 steps, probes of the French rows), and any other project from
    the generic defaults plus its own probe rows (its ★ rows, else its first rows)."""
    stored, notes = wb.load_train_form(project)
    st.session_state["train.form_notes"] = notes
    if stored:
        forms.restore(stored)
    elif project.is_demo:
        apply_preset(wb.load_preset(wb.DEMO_PRESET))
        put("train.preset_choice", wb.DEMO_PRESET.name)
    else:
        set_form_values(wb.TrainingArgs, {"probe_rows": project.default_probe_rows()},
                        "train.f.t", advanced=False)


forms.scope("train.", project.name, start_values)  # every field is kept per project
for note in st.session_state.pop("train.form_notes", None) or []:
    st.warning(plain(note))

with panel("Presets (YAML)", "train.presets_open"):
    files = {p.name: p for p in wb.list_presets(project)}
    c1, c2 = st.columns(2)
    choice = kept(c1.selectbox, "train.preset_choice", "(none)", label="preset",
                  options=["(none)", *files])
    if c1.button("Load preset", key="train.preset_load") and choice in files:
        try:
            apply_preset(wb.load_preset(files[choice]))
            st.rerun()
        except wb.ConfigError as exc:
            show_error(exc, f"cannot load {choice}")
    preset_name = kept(c2.text_input, "train.preset_name", "", label="save as (name)")
    save_preset = c2.button("Save preset", key="train.preset_save")
# after the expander, so that the expander keeps its place (and its open state)
if st.session_state.get("train.preset_choice") == wb.DEMO_PRESET.name:
    st.caption(f"Settings from the preset `assets/presets/{wb.DEMO_PRESET.name}` (Presets, "
               "above).")
loaded = st.session_state.get("train.loaded", {})

model = model_section(project, root)

# ---------------------------------------------------------------- method --------------------
st.subheader("Method")
names = wb.method_names(unlearning_only=True)
method = kept(st.selectbox, "train.method", "sga", label="method", options=names,
              format_func=lambda n: wb.get_method(n).title or n)
cls = wb.get_method(method)
method_args = dataclass_form(cls.Config, loaded.get("method_args", {}) if
                             loaded.get("method") == method else {}, key=f"train.f.m.{method}")
explain = wb.explain_method(method, method_args)
if explain:
    st.info(f"**{'Coefficients' if method == 'sga' else 'Settings'}:** {explain}")

normals = normals_choice(project, cls, method_args)

# ---------------------------------------------------------------- settings ------------------
st.subheader("Training")
training = dataclass_form(wb.TrainingArgs, loaded.get("training"), key="train.f.t",
                          advanced=False)
with panel("Advanced training settings", "train.advanced_open"):
    training.update(dataclass_form(wb.TrainingArgs, loaded.get("training"), key="train.f.ta",
                                   advanced=True))
with panel("Accelerate (processes, precision, DeepSpeed/FSDP config)", "train.accel_open"):
    launch = dataclass_form(wb.LaunchConfig, loaded.get("launch"), key="train.f.l")
st.caption(wb.device_note(launch))  # decided when the run starts, on the machine running it
evaluate = kept(st.checkbox, "train.eval", True, label="evaluate when the run completes "
                "(TOFU/MUSE metrics, token tables; on a CPU often several times as long as "
                "a short run: the benchmark protocols generate up to 128 tokens per row)")
protocol_caption(project, " The Data page changes it.")
eval_rows = eval_rows_input(project)  # a row limit for every evaluation set (QA and text)
run_id = kept(st.text_input, "train.run_id", "", label="run id (empty = automatic)")
backend = backend_choice()  # this machine's queue, or the SLURM cluster


def make_cfg(run_id_value: str, sweep=None, value=None):
    args = dict(method_args)
    if value is not None:
        args[cls.sweep_param] = value
    return wb.build_config(project, method=method, method_args=args, training=training,
                           launch=launch, model=model, run_id=run_id_value, sweep=sweep,
                           normals=normals,
                           eval_cfg={**wb.default_eval(project, root, evaluate),
                                     **({"max_rows": eval_rows} if eval_rows else {})})


if save_preset:
    try:
        st.success(f"Saved preset {wb.save_preset(project, preset_name, make_cfg('')).name}")
    except (wb.ConfigError, ValueError) as exc:
        show_error(exc, "cannot save preset")

project_note(project, "runs train on")
c1, c2 = st.columns(2)
if c1.button("Preview command", key="train.preview"):
    try:
        rid, command, config_yaml = wb.preview(make_cfg(run_id), root)
        st.session_state["train.previewed"] = (rid, wb.dump_config(make_cfg("")))
        st.code(command, language="bash")
        show_batch_script(backend, make_cfg(rid), root)
        with st.expander(wb.RunFolder(rid).config_path.name):
            st.code(config_yaml, language="yaml")
    except (wb.ConfigError, ValueError) as exc:
        show_error(exc, "invalid settings")

try:  # say how many runs Launch makes: 'repeat over seeds' is kept from an earlier launch
    n_seeds = len(wb.parse_seeds(training.get("seeds"), int(training.get("seed") or 0)))
except (wb.ConfigError, ValueError, TypeError):
    n_seeds = 1  # Launch names the problem
if c2.button("Launch" if n_seeds <= 1 else f"Launch {n_seeds} runs (one per seed)",
             type="primary", key="train.launch"):
    try:
        previewed = st.session_state.pop("train.previewed", None)
        # the previewed command's run id, if nothing changed since the preview
        same = (not run_id and previewed and previewed[1] == wb.dump_config(make_cfg("")))
        try:
            dirs = wb.submit_seeds(make_cfg(previewed[0] if same else run_id), root, backend)
        except wb.RunIdTaken:
            if not same:
                raise
            # another launch (a second tab, the CLI) took the previewed id first: this one
            # takes the next free id rather than being refused
            dirs = wb.submit_seeds(make_cfg(""), root, backend)
            st.info(f"Run id {previewed[0]} was taken by another launch since the preview; "
                    f"this run is {dirs[0].name}.")
        st.success(plain(wb.queued_text(dirs)) + " Watch on the Runs page (project "
                   f"**{plain(project.name)}**).")
        st.session_state["runs.selected"] = dirs[0].name
    except (wb.ConfigError, ValueError, OSError) as exc:
        show_error(exc, "cannot launch")

if cls.sweep_param:
    sweep_panel(method, cls.sweep_param, make_cfg, root, backend)

# the form's values, kept on disk per project: a reload or a new session starts from them
form_now = forms.values("train.")
if st.session_state.get("train.form_saved") != form_now:
    try:
        wb.save_train_form(project, form_now)
        st.session_state["train.form_saved"] = form_now
    except OSError as exc:
        st.warning(plain(f"The form's values are not kept on disk ({exc}); they last while "
                         "this browser tab is open."))
