"""Seeds as a first-class dimension (docs/spec.md#57-seeds-and-groups): launches, presets and sweeps
repeat over seeds as groups; the Results rows pool per configuration (mean, sd, 95%
interval, n); metric-versus-r carries intervals; the r suggestion says how sure it is; the
export keeps one row per seed and one per group."""

from __future__ import annotations

import math

import pytest
import yaml

from sga_core.config import TrainConfig, load_config
from sga_core.params import ConfigError
from sga_core.report import export, sweeps
from sga_core.report import seeds as pooled
from sga_core.report.stats import t_quantile
from sga_core.runs.seeds import expand_seeds, seed_run_id, sweep_configs


def row(run_id, r, seed, group, fq, mu=0.4, method="sga", sweep="sw", created=""):
    return {"run": run_id, "run_id": run_id, "method": method, "r": r, "K": 4,
            "sweep": sweep, "state": "completed", "seed": seed, "group": group, "FQ": fq,
            "MU": mu, "created_at": created}


ROWS = [
    {**row("demo-original", None, 0, None, 0.002, method="-", sweep=None), "run": "Original"},
    {**row("demo-retain-ref", None, 0, None, 1.0, method="-", sweep=None), "run": "Retained"},
    row("a0", -0.8, 0, "g-a", 0.40), row("a1", -0.8, 1, "g-a", 0.58),
    row("a2", -0.8, 2, "g-a", 0.58),
    row("b0", 0.0, 0, "g-b", 0.10), row("b1", 0.0, 1, "g-b", 0.20),
    row("b2", 0.0, 2, "g-b", 0.15),
    row("c0", 0.4, 0, "g-c", 0.42), row("c1", 0.4, 1, "g-c", 0.60),
    row("c2", 0.4, 2, "g-c", 0.50),
    row("single", -2.0, 0, None, 0.3, sweep=None),
]


def test_groups_pool_seeds_with_mean_sd_and_t_interval():
    gs = {g["label"]: g for g in pooled.groups(ROWS)}
    assert list(gs)[:2] == ["Original", "Retained"]
    g = gs["sga r=-0.8"]
    assert (g["n"], g["seeds"]) == (3, [0, 1, 2])
    fq = g["FQ"]
    m = (0.40 + 0.58 + 0.58) / 3
    sd = math.sqrt(((0.40 - m) ** 2 + 2 * (0.58 - m) ** 2) / 2)
    assert fq.mean == pytest.approx(m) and fq.sd == pytest.approx(sd)
    assert fq.hi - fq.mean == pytest.approx(t_quantile(0.975, 2) * sd / math.sqrt(3))
    assert gs["sga r=-2"]["n"] == 1 and gs["sga r=-2"]["FQ"].lo is None
    assert pooled.has_seed_groups(ROWS) and not pooled.has_seed_groups(ROWS[-1:])


def test_a_rerun_of_a_seed_counts_once_the_newest():
    rows = [row("x0", 0.0, 0, "g", 0.1, created="2026-01-01T00:00:00Z"),
            row("x1", 0.0, 1, "g", 0.3, created="2026-01-01T00:00:00Z"),
            row("x0b", 0.0, 0, "g", 0.5, created="2026-01-02T00:00:00Z")]
    (g,) = pooled.groups(rows)
    assert g["n"] == 2 and g["FQ"].mean == pytest.approx(0.4)


def test_display_and_export_rows():
    shown = {d["configuration"]: d for d in pooled.group_display(ROWS)}
    a = shown["sga r=-0.8"]
    assert a["n"] == 3 and a["seeds"] == "0, 1, 2"
    assert a["FQ"].startswith("0.52 [") and " sd " in a["FQ"]
    assert shown["sga r=-2"]["FQ"] == "0.3"  # one run: no interval
    out = export.export_rows(ROWS)
    seeds = [o for o in out if o["level"] == "seed"]
    groups = [o for o in out if o["level"] == "group"]
    assert len(seeds) == len(ROWS) and len(groups) == 6
    assert {o["configuration"] for o in seeds if o["group"] == "g-b"} == {"sga r=0"}
    gb = next(o for o in groups if o["group"] == "g-b")
    assert gb["FQ"] == pytest.approx(0.15) and gb["FQ n"] == 3
    assert gb["FQ 95% low"] < 0.15 < gb["FQ 95% high"] and gb["FQ sd"] == pytest.approx(0.05)


def test_r_bands_have_an_interval_per_r_and_every_seed():
    bands = sweeps.r_bands(ROWS, "sw")
    assert bands["r"] == [-0.8, 0.0, 0.4]
    assert [iv.n for iv in bands["FQ"]] == [3, 3, 3]
    assert len(bands["points"]["FQ"]) == 9
    all_runs = sweeps.r_bands(ROWS, "all sga runs")
    assert all_runs["r"] == [-2.0, -0.8, 0.0, 0.4]


def test_seeds_are_replicates_of_one_r_group_not_settings_that_split_it():
    """Runs whose settings differ only in their seed form one r group (the seeds are its
    replicates); a different learning rate splits it."""
    def with_settings(r, lr):
        return {**r, "settings": {"seed": r["seed"], "lr": lr, "length": "20 steps"}}

    same = [with_settings(r, 1e-5) if r["run"] not in ("Original", "Retained") else r
            for r in ROWS]
    assert sweeps.r_groups(same) == ["sw", "all sga runs"]
    assert [iv.n for iv in sweeps.r_bands(same, "sw")["FQ"]] == [3, 3, 3]
    split = [with_settings(r, 1e-4 if r["run_id"] in ("a0", "b0") else 1e-5)
             if r["run"] not in ("Original", "Retained") else r for r in ROWS]
    groups = sweeps.r_groups(split)
    assert "sw · lr 1e-05" in groups and "sw · lr 0.0001" in groups, groups
    assert [iv.n for iv in sweeps.r_bands(split, "sw · lr 1e-05")["FQ"]] == [2, 2, 3]


def test_suggestion_says_what_is_clear_and_what_is_noise():
    s = sweeps.suggest_r(ROWS, "sw", "FQ")
    assert s["r"] == -0.8  # the highest mean FQ: 0.52 (r = 0.4: 0.507)
    assert s["best"].mean == pytest.approx(0.52) and s["n_min"] == 3
    others = {o["r"]: o for o in s["others"]}
    assert others[0.0]["clear"] and others[0.0]["diff"].method == "paired t"
    assert others[0.0]["diff"].mean == pytest.approx((-0.30 - 0.38 - 0.43) / 3)
    assert not others[0.4]["clear"]  # seed by seed: +0.02, +0.02, -0.08
    # 0.52 against 0.507 is within FQ's negligible ratio: said so, not "not distinguishable"
    assert others[0.4]["negligible"] and not others[0.0]["negligible"]
    text = sweeps.suggestion_text(s)
    assert "Within FQ's negligible gap of it" in text and "r = 0.4." in text
    assert "Not distinguishable" not in text and "Clearly different (that r" in text
    assert "): r = 0" in text
    # r = 0.4 at 0.45, 0.30, 0.35: beyond the gap, but seed by seed -0.05, +0.28, +0.23
    noisy = [{**r, "FQ": {"c0": 0.45, "c1": 0.30, "c2": 0.35}.get(r["run_id"], r["FQ"])}
             for r in ROWS]
    text = sweeps.suggestion_text(sweeps.suggest_r(noisy, "sw", "FQ"))
    assert "Not distinguishable from it at 95% (the interval of the difference holds 0): " \
        "r = 0.4." in text and "negligible" not in text
    # every other value within the gap: no best at all
    close = [{**r, "FQ": 0.5} if r["run_id"][:1] in "bc" and r["run"] not in
             ("Original", "Retained") else r for r in ROWS]
    text = sweeps.suggestion_text(sweeps.suggest_r(close, "sw", "FQ"))
    assert text.startswith("No best r by FQ: r = 0, 0.4 lie within its negligible gap of "
                           "r = -0.8")
    one = sweeps.suggest_r([r for r in ROWS if r["seed"] == 0], "sw", "FQ")
    assert "single run" in sweeps.suggestion_text(one)
    assert sweeps.suggest_r(ROWS, "sw", "nope") is None


def tiny_cfg(tmp_path, **training):
    forget = tmp_path / "forget.jsonl"
    forget.write_text('{"question": "q", "answer": "a"}\n')
    return TrainConfig.from_dict({"method": "ga", "data": {"forget": str(forget)},
                                  "training": training, "eval": {"enabled": False}})


def test_expand_seeds_makes_one_grouped_config_per_seed(tmp_path):
    cfgs = expand_seeds(tiny_cfg(tmp_path, seeds="3", seed=5), tmp_path / "runs")
    assert [c.training.seed for c in cfgs] == [5, 6, 7]
    assert {c.group for c in cfgs} == {cfgs[0].run_id[:-3]}
    assert [c.run_id[-3:] for c in cfgs] == ["-s5", "-s6", "-s7"]
    assert all(c.training.seeds == "5, 6, 7" for c in cfgs)
    (one,) = expand_seeds(tiny_cfg(tmp_path, seed=2), tmp_path / "runs")
    assert one.group is None and one.run_id == ""
    named = tiny_cfg(tmp_path, seeds="0, 4")
    named.run_id, named.group = "mine", "my-group"
    assert [(c.run_id, c.group) for c in expand_seeds(named)] == [("mine-s0", "my-group"),
                                                                 ("mine-s4", "my-group")]
    assert len(seed_run_id("x" * 64, 2147483647)) == 64


def test_bad_seeds_and_groups_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="training.seeds: 'x'"):
        tiny_cfg(tmp_path, seeds="x")
    cfg = tiny_cfg(tmp_path)
    cfg.group = "no spaces"
    with pytest.raises(ConfigError, match="group"):
        cfg.validate()


def test_sweep_over_seeds_is_seed_major_one_group_per_value(tmp_path):
    base = tiny_cfg(tmp_path, seeds="2")

    def make(group, value):
        d = base.to_dict()
        d.update(method="sga", method_args={"r": value, "k": 1}, sweep=group)
        d["data"]["normals"] = d["data"]["forget"]  # only checked for presence here
        return TrainConfig.from_dict(d)

    cfgs = sweep_configs(make, [-0.8, 0.0, 0.4], "sw-1", tmp_path / "runs")
    assert [(c.method_args["r"], c.training.seed) for c in cfgs] == [
        (-0.8, 0), (0.0, 0), (0.4, 0), (-0.8, 1), (0.0, 1), (0.4, 1)]
    assert len({c.group for c in cfgs}) == 3 and {c.sweep for c in cfgs} == {"sw-1"}
    assert cfgs[0].group == "sw-1-r-0p8-k1"
    assert len({c.run_id for c in cfgs}) == 6


def test_cli_train_repeats_over_seeds_and_sweeps(tmp_path, demo_dir, capsys):
    from sga_core.cli import main
    from sga_core.runs.listing import list_runs

    runs = tmp_path / "runs"
    common = ["train", "--forget", str(demo_dir / "forget.jsonl"), "--runs-dir", str(runs),
              "--model", "embedded:smollm2", "--no-launch", "--no-eval"]
    assert main(common + ["--method", "ga", "--seeds", "0,1,2"]) == 0
    listed = list_runs(runs)
    assert sorted(r["seed"] for r in listed) == [0, 1, 2]
    assert len({r["group"] for r in listed}) == 1
    assert "3 runs, seeds 0, 1, 2 each" in capsys.readouterr().out
    assert main(common + ["--sweep-values", "-0.8, 0", "--seeds", "2", "--sweep",
                          "mysweep"]) == 0
    sweep = [r for r in list_runs(runs) if r["sweep"] == "mysweep"]
    assert len(sweep) == 4 and len({r["group"] for r in sweep}) == 2
    assert sorted((r["r"], r["seed"]) for r in sweep) == [(-0.8, 0), (-0.8, 1), (0.0, 0),
                                                         (0.0, 1)]
    # every run of a seed group trains on the same "I don't know" normals
    normals = {(runs / r["run_id"] / "data" / "normals.jsonl").read_text() for r in sweep}
    assert len(normals) == 1
    assert main(common + ["--method", "ga", "--sweep-values", "0,1"]) == 2
    assert "no sweep setting" in capsys.readouterr().err


def test_preset_with_seeds_and_a_run_config_as_preset(tmp_path, demo_dir):
    from sga_core.cli import main
    from sga_core.runs.listing import list_runs

    runs = tmp_path / "runs"
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump({"method": "ga", "training": {"seeds": 2,
                                                                   "max_steps": 1}}))
    common = ["--forget", str(demo_dir / "forget.jsonl"), "--runs-dir", str(runs),
              "--model", "embedded:smollm2", "--no-launch", "--no-eval"]
    assert main(["train", "--preset", str(preset), *common]) == 0
    first = list_runs(runs)
    assert len(first) == 2
    # a run's own config.yaml (with its group) loads as a preset: one more run per seed
    cfg_path = runs / first[0]["run_id"] / "config.yaml"
    assert load_config(cfg_path).group == first[0]["group"]
    assert main(["train", "--preset", str(cfg_path), *common, "--run-id", "again"]) == 0
    again = [r for r in list_runs(runs) if r["run_id"].startswith("again")]
    assert len(again) == 2 and {r["group"] for r in again} == {first[0]["group"]}


def test_cli_queue_hands_the_group_to_the_runner(tmp_path, demo_dir, monkeypatch, capsys):
    from sga_core.cli import main
    from sga_core.runs import queue
    from sga_core.runs.listing import list_runs

    started = []
    monkeypatch.setattr(queue, "ensure_runner", lambda root, **k: started.append(root))
    runs = tmp_path / "runs"
    assert main(["train", "--forget", str(demo_dir / "forget.jsonl"), "--runs-dir", str(runs),
                 "--method", "ga", "--seeds", "2", "--queue", "--no-eval"]) == 0
    listed = list_runs(runs)
    assert {(r["state"], r["mode"]) for r in listed} == {("queued", "queue")}
    assert len(listed) == 2 and started and "queued: the background runner" in \
        capsys.readouterr().out


def test_equal_means_are_a_tie_not_a_best_r():
    """A trial read "Best FQ at r = -0.8" where both runs had FQ 0.02597."""
    rows = [row("t0", -0.8, 0, None, 0.02597, sweep="tie"),
            row("t1", 0.0, 0, None, 0.02597, sweep="tie")]
    text = sweeps.suggestion_text(sweeps.suggest_r(rows, "tie", "FQ"))
    assert text.startswith("No best r by FQ: r = -0.8, 0 are tied at 0.026"), text


def test_pooled_table_and_export_keep_the_rows_protocol_and_lm_eval_columns():
    """Rows evaluated under the copyright protocol (BLEU, FQ gap, ...) and with an extra
    lm-eval task keep those columns in the pooled table and the export; the demo protocol's
    text columns alone would drop them."""
    def text_row(run_id, seed, bleu, mmlu):
        return {**row(run_id, -0.8, seed, "g-copy", None), "protocol": "copyright",
                "BLEU": bleu, "mmlu": mmlu, "lm_columns": ["mmlu"]}

    rows = [text_row("t0", 0, 10.0, 0.30), text_row("t1", 1, 14.0, 0.34)]
    shown = pooled.group_display(rows, "text")[0]
    assert shown["BLEU"].startswith("12 [") and shown["mmlu"].startswith("0.32 [")
    group = next(o for o in export.export_rows(rows, "text") if o["level"] == "group")
    assert group["BLEU"] == pytest.approx(12.0) and group["BLEU n"] == 2
    assert group["mmlu sd"] == pytest.approx(math.sqrt(0.0008))
    assert "FQ gap" in group and "VerbMem" not in group


def test_columns_shown_on_request_are_pooled_over_seeds_too():
    """Each attack's PrivLeak (a column shown on request) has its mean and interval over
    seeds where it is shown, and always in the download; it was left out of both."""
    from sga_core.report.columns import optional_column, optional_columns

    leaks = {"a0": -40.0, "a1": -20.0, "a2": -30.0}
    rows = [{**r, "PrivLeak (LOSS)": leaks.get(r["run_id"]),
             "optional_metrics": ["privleak_loss"] if r["run_id"] in leaks else []}
            for r in ROWS]
    column = optional_column("privleak_loss", "qa")
    assert optional_columns(rows) == [column]
    hidden = {d["configuration"]: d for d in pooled.group_display(rows)}
    assert "PrivLeak (LOSS)" not in hidden["sga r=-0.8"]  # not shown: not in the table
    shown = {d["configuration"]: d for d in pooled.group_display(rows, shown=[column])}
    assert shown["sga r=-0.8"]["PrivLeak (LOSS)"].startswith("-30 [")
    assert shown["sga r=0"]["PrivLeak (LOSS)"] is None  # no seed has it
    group = next(o for o in export.export_rows(rows) if o["level"] == "group"
                 and o["configuration"] == "sga r=-0.8")
    assert group["PrivLeak (LOSS)"] == pytest.approx(-30.0) and group["PrivLeak (LOSS) n"] == 3
    assert group["PrivLeak (LOSS) sd"] == pytest.approx(10.0)


def test_a_multiple_choice_accuracy_is_a_column_on_request_where_it_is_none():
    """MMLU's accuracy is a column of WMDP's protocol; under any other (MMLU as a TOFU
    project's utility set) it and any multiple-choice set's are offered on request."""
    from sga_core.report.columns import optional_column

    assert optional_column("mmlu_accuracy", "text", ["wmdp"]) is None  # the table's own
    assert optional_column("mmlu_accuracy", "qa", ["tofu"]).label == "MMLU acc"
    mine = optional_column("my_quiz_accuracy", "qa", ["demo"])
    assert (mine.label, mine.direction) == ("my_quiz acc", "higher")
    assert optional_column("forget_truth_ratio_prob_mean", "qa", ["tofu"]).label == \
        "forget TR (prob_mean)"
