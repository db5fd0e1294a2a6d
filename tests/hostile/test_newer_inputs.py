"""Hostile inputs of the checks added after the new users' MUSE-Books studies, counted like the
rest of the hostile suite: a wrong-type training setting (a form or preset), a file that is
not a normal-answers table given as one, and the stress forms' settings as typed text. Each
is a clear error naming the setting or the file; never another exception, never a file
written on failure."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from sga_core.config import TrainingArgs
from sga_core.params import ConfigError, field_specs, from_dict
from sga_core.projects import create_project
from sga_core.projects.uploads import import_normals
from sga_core.runs.folder import RunFolder

BAD_VALUES = ["banana", "", "1.5.2", "inf", "-inf", "nan", "1e400", [], {}, [1, 2],
              {"a": 1}, "\u0663", "1_0_", "0x10", True, None, "\x00", "9" * 400]


def test_wrong_type_training_settings_are_named_in_words():
    counts: Counter = Counter()
    fields = [s["name"] for s in field_specs(TrainingArgs)
              if s["kind"] in ("int", "float", "bool")]
    assert fields, "no number or bool settings found to try"
    for name in fields:
        for bad in BAD_VALUES:
            counts["tried"] += 1
            try:
                from_dict(TrainingArgs, {name: bad})
            except ConfigError as exc:
                assert name in str(exc), (name, bad, str(exc))
                assert "Traceback" not in str(exc)
                counts["clear"] += 1
            except Exception as exc:  # noqa: BLE001 - what the suite counts
                pytest.fail(f"{name}={bad!r}: {type(exc).__name__}: {exc}")
            else:
                counts["accepted"] += 1  # a value the field can take (None, True, ...)
    print(f"\ntraining settings: {counts['tried']} inputs tried, {counts['clear']} clear "
          f"errors, {counts['accepted']} accepted as valid, 0 uncaught")
    assert counts["clear"] > counts["accepted"]


def test_true_is_no_number_and_a_list_is_no_true_or_false():
    # they read as lr = 1.0 and save_model = true
    with pytest.raises(ConfigError, match="lr: True is not a number"):
        from_dict(TrainingArgs, {"lr": True})
    with pytest.raises(ConfigError, match="save_model: \\[1, 2\\] is not true or false"):
        from_dict(TrainingArgs, {"save_model": [1, 2]})
    assert from_dict(TrainingArgs, {"save_model": 0, "lr": 0.5}).save_model is False


def _files(tmp_path):
    qa = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    return {
        "qa.jsonl": "".join(json.dumps(r) + "\n" for r in qa),
        "text.jsonl": "".join(json.dumps({"text": f"passage {i}"}) + "\n" for i in range(3)),
        "empty.jsonl": "",
        "garbage.jsonl": "{not json\n",
        "list.json": "[1, 2, 3]",
        "nul.jsonl": '{"forget_index": 0, "k": 0, "answer": "a\\u0000"}\n',
        "wrong-index.jsonl": '{"forget_index": 99, "k": 0, "answer": "a"}\n',
        "negative-k.jsonl": '{"forget_index": 0, "k": -1, "answer": "a"}\n',
        "string-k.jsonl": '{"forget_index": 0, "k": "one", "answer": "a"}\n',
        "binary.jsonl": "\udcff\udcfe",
    }


def test_files_that_are_not_normal_answers_are_refused_and_nothing_is_written(tmp_path):
    forget = tmp_path / "forget.jsonl"
    forget.write_text("".join(json.dumps({"question": f"q{i}", "answer": f"a{i}"}) + "\n"
                              for i in range(3)))
    project = create_project("hostile", forget, root=tmp_path / "ws")
    before = {p: p.read_bytes() for p in project.path.rglob("*") if p.is_file()}
    counts: Counter = Counter()
    for name, text in _files(tmp_path).items():
        counts["tried"] += 1
        data = text.encode("utf-8", "surrogateescape")
        try:
            import_normals(project, name, data)
        except (ValueError, OSError) as exc:
            assert name in str(exc), (name, str(exc))
            counts["clear"] += 1
        except Exception as exc:  # noqa: BLE001 - what the suite counts
            pytest.fail(f"{name}: {type(exc).__name__}: {exc}")
        else:
            pytest.fail(f"{name}: imported as normal answers")
    after = {p: p.read_bytes() for p in project.path.rglob("*") if p.is_file()}
    assert after == before  # nothing written on failure
    print(f"\nnormal-answer files: {counts['tried']} inputs tried, {counts['clear']} clear "
          "errors, 0 uncaught, 0 files written")


STRESS_TEXT = {"seeds": ["", "x", "-1", "1e9", "3000000000", "1.5", ",".join(
    map(str, range(50)))], "relearn_steps": ["0", "-5", "abc", "1e9", "10;rm -rf /"],
    "relearn_lr": ["inf", "nan", "-1", "1e308", "2"], "relearn_share": ["1.5", "-0.1", "x"],
    "relearn_batch_size": ["0", "100000", "x"], "fewshot_k": ["-1", "x"]}


def test_stress_settings_typed_in_a_form_are_refused_by_name(tmp_path):
    from sga_core.runs import queue

    counts: Counter = Counter()
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    for name, values in STRESS_TEXT.items():
        for bad in values:
            counts["tried"] += 1
            try:
                queue.typed_settings({name: bad})
            except ConfigError as exc:
                assert name in str(exc).replace("-", "_"), (name, bad, str(exc))
                counts["clear"] += 1
            except Exception as exc:  # noqa: BLE001 - what the suite counts
                pytest.fail(f"{name}={bad!r}: {type(exc).__name__}: {exc}")
            else:
                pytest.fail(f"{name}={bad!r}: accepted")
    assert not RunFolder(run).stress_requested()
    print(f"\nstress form settings: {counts['tried']} inputs tried, {counts['clear']} clear "
          "errors, 0 uncaught")
