"""The layer view of stress-tested variants (docs/token-probabilities.md#the-layer-view): an
attacked model's scoring reads the logit lens in the same forward, so each sample's token
record holds its ``layers`` (as eval/layers.jsonl holds a run's), the last layer its own
output; the Token probabilities page reads them back as the variant's layer record. A
result whose layers do not fit its tokens is damaged and named."""

from __future__ import annotations

import json

import pytest

from sga_core.report.layers import attacked_layer_record, layer_facts
from sga_core.runs.folder import RunFolder
from sga_core.stress import StressSettings
from sga_core.stress.results import attacked_token_tables
from tests.helpers.stress import tiny_run

pytestmark = pytest.mark.slow


def test_an_attacked_models_samples_hold_its_layers(tmp_path, tiny_model_dir, demo_dir):
    from sga_core.stress.run import stress_run

    run = tiny_run(tmp_path / "runs", tiny_model_dir, demo_dir, "ga-run")
    res = stress_run(run, ["quant4"], StressSettings(rouge=False),
                     overrides={"original": str(tiny_model_dir)})["quant4"]
    samples = res["samples"]
    assert samples and all(s["tokens"]["layers"] for s in samples)
    for s in samples:
        tok = s["tokens"]
        lay = attacked_layer_record(tok)
        assert len(lay["probs"]) == len(lay["ranks"]) == len(lay["top1"]) == 2  # 2 blocks
        assert all(len(layer) == len(tok["tokens"]) for layer in lay["probs"])
        # the last layer is the attacked model's own output, its top-1 its first alternative
        assert lay["probs"][-1] == pytest.approx(tok["probs"], abs=1e-5)
        assert [a[0][0] for a in tok["top"]] == lay["top1"][-1]
        assert layer_facts(lay, 0)["output_p"] == pytest.approx(tok["probs"][0], abs=1e-5)
    # read back as the page does: the variant's token record, with its layers
    (rec,) = attacked_token_tables(run, samples[0]["index"]).values()
    assert attacked_layer_record(rec)["ranks"] == samples[0]["tokens"]["layers"]["ranks"]

    # layers that do not fit the tokens: the result is damaged, named, never drawn
    path = RunFolder(run).stress_dir / "quant4.json"
    data = json.loads(path.read_text())
    data["samples"][0]["tokens"]["layers"]["probs"][1] = [0.5]
    path.write_text(json.dumps(data))
    good, bad = RunFolder(run).stress_results()
    assert "quant4" not in good
    assert "layers probs of layer 2 has 1 values for" in str(bad[0])
    assert attacked_token_tables(run, samples[0]["index"]) == {}


def test_a_token_record_without_layers_has_no_layer_record():
    assert attacked_layer_record({"tokens": ["a"], "probs": [0.5], "top": [[]]}) is None
