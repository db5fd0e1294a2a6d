"""Hostile inputs to the memory check and the evaluation's row limit
(docs/large-models.md, docs/text-unlearning.md): a run that asks for more memory than any
machine has is failed with the reason before any process starts; a model folder whose
config.json is damaged, empty, a list, or holds nonsense sizes gives no estimate (the run is
started as before), never a traceback in the queue; a row limit that is negative,
fractional or text is refused naming the setting."""

from __future__ import annotations

import pytest

from sga_core.config import EvalConfig
from sga_core.params import ConfigError, from_dict
from sga_core.runs import memory


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '{"hidden_size": "x"}',
                                  '{"hidden_size": 0, "num_attention_heads": 0}',
                                  '{"vocab_size": -5, "hidden_size": 8, '
                                  '"num_hidden_layers": 1}',
                                  '{"text_config": 5}', "\x00\xff"])
def test_a_damaged_model_config_gives_no_estimate(tmp_path, text):
    (tmp_path / "config.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    assert memory.model_dims(str(tmp_path)) is None


def test_missing_models_give_no_estimate(tmp_path):
    assert memory.model_dims(str(tmp_path / "absent")) is None
    assert memory.model_dims("embedded:nonesuch") is None
    assert memory.model_dims("org/not-downloaded") is None
    assert memory.run_need(tmp_path / "not-a-run") is None


@pytest.mark.parametrize("value", [-1, 1.5, "many", [3]])
def test_row_limit_must_be_a_whole_number_from_zero(value):
    with pytest.raises(ConfigError) as err:
        from_dict(EvalConfig, {"max_rows": value}, "eval.")
    assert "eval.max_rows" in str(err.value)


@pytest.mark.parametrize("code", [-9, -15, -2, -64, 0, 1, 137, 255])
def test_every_exit_reads_in_words(code):
    text = memory.exit_cause(code)
    assert text and "None" not in text
    if code == -9:
        assert "out of memory" in text
