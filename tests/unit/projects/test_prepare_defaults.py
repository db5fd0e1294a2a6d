"""Prepare's settings suit the task
(docs/measurability.md#what-the-prepared-models-should-reach): text passages get more
passes and longer sequences than QA answers, so the prepared Original memorises its forget
passages; both sets of settings are valid training settings."""

from __future__ import annotations

from sga_core.config import TrainingArgs
from sga_core.params import from_dict
from sga_core.projects.prepare import PREPARE_DEFAULTS, prepare_defaults


def test_text_prepare_trains_longer_on_longer_sequences():
    qa, text = prepare_defaults("qa"), prepare_defaults("text")
    assert qa == PREPARE_DEFAULTS
    assert text["epochs"] > qa["epochs"] and text["max_length"] >= 1024
    assert text["max_length"] > TrainingArgs().max_length  # the QA default cuts at 256
    for settings in (qa, text):
        args = from_dict(TrainingArgs, settings)
        assert args.epochs == settings["epochs"]
    prepare_defaults("text")["epochs"] = 0  # a copy: the defaults stay as they are
    assert prepare_defaults("text")["epochs"] == text["epochs"]
