"""Damaged stress result files (``RUN_DIR/stress/<key>.json``): each is
checked as the other run-folder files are (sga_core.runs.validate), so a mistyped one is
named in the run's damage warning while every other result, and every other run, still
shows; the Results page ("Does it hold?") and the Token probabilities page (with the
stress-tested variants) render without an exception."""

from __future__ import annotations

import copy
import json

import pytest

from sga_core.fileio import atomic_write_json
from sga_core.runs.folder import STRESS_DIR
from tests.helpers.own_data import TEXT_TOKENS, text_token_project
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow

PROBS = [0.85, 0.9, 0.5, 0.95, 0.95, 0.65, 0.3, 0.5, 0.6, 0.4]


def good(key: str = "quant8") -> dict:
    """A sound result whose token record lines up with the text project's forget row 0."""
    return {
        "version": 1, "attack": key, "family": "quant8", "kind": "text",
        "recovery": 0.2, "recovery_reason": None,
        "summary": {"probability": {"recovery": {"n": 1, "mean": 0.2, "lo": None, "hi": None},
                                    "unlearned": 0.2, "attacked": {"n": 1, "mean": 0.3},
                                    "original": 0.7, "undefined": 0, "reason": None}},
        "cases": [{"label": "", "seed": None, "eval_rows": [0], "attack_rows": [],
                   "metrics": {"probability": {"attacked": 0.3, "unlearned": 0.2,
                                               "original": 0.7, "recovery": 0.2,
                                               "reason": None}},
                   "info": {"from_data": 0, "generated": 1, "paraphraser": "local: x",
                            "left_out": {"3": "the paraphraser repeated the question"}}}],
        "samples": [{"case": 0, "index": 0, "prob": 0.3, "tokens": {
            "tokens": TEXT_TOKENS, "probs": PROBS,
            "top": [[[t, p], [" the", 0.05]] for t, p in zip(TEXT_TOKENS, PROBS)]}}]}


def _set(path: str, value):
    """A mutation of :func:`good`: ``path`` ("summary.probability.recovery.mean",
    "samples.0.tokens.probs") set to ``value`` (``DEL``: removed)."""
    def apply(res: dict) -> dict:
        obj = res
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        for k in keys[:-1]:
            obj = obj[k]
        if value is DEL:
            del obj[keys[-1]]
        else:
            obj[keys[-1]] = value
        return res
    return apply


DEL = object()
REC = "summary.probability.recovery"
TOK = "samples.0.tokens"
MUTATIONS = [
    _set("attack", DEL), _set("attack", 5), _set("attack", None), _set("attack", ["q"]),
    _set("attack", "another-name"),
    _set("summary", []), _set("summary", "x"), _set("summary", 5),
    _set("summary.probability", []), _set("summary.probability", "x"),
    _set(REC, []), _set(REC, "x"), _set(f"{REC}.mean", "x"), _set(f"{REC}.mean", True),
    _set(f"{REC}.mean", [0.2]), _set(f"{REC}.mean", 10**400), _set(f"{REC}.lo", "x"),
    _set(f"{REC}.hi", {}), _set(f"{REC}.n", "3"), _set(f"{REC}.n", -1),
    _set("summary.probability.unlearned", "x"), _set("summary.probability.original", []),
    _set("summary.probability.attacked", []), _set("summary.probability.attacked.mean", "x"),
    _set("recovery_reason", 5), _set("recovery_reason", ["why"]), _set("recovery", "x"),
    _set("cases", {}), _set("cases", "x"), _set("cases", [5]), _set("cases.0.info", []),
    _set("cases.0.info.left_out", []), _set("cases.0.info.left_out", {"3": 5}),
    _set("cases.0.info.from_data", "x"), _set("cases.0.info.generated", -2),
    _set("cases.0.label", 5), _set("cases.0.metrics", []),
    _set("cases.0.metrics.probability.recovery", "x"),
    _set("samples", {}), _set("samples", "x"), _set("samples", [5]),
    _set("samples.0.index", "0"), _set("samples.0.case", 7), _set("samples.0.case", -1),
    _set("samples.0.case", "0"), _set("samples.0.prob", "x"),
    _set(TOK, []), _set(TOK, "x"), _set(f"{TOK}.probs", "x"), _set(f"{TOK}.probs", ["x"] * 10),
    _set(f"{TOK}.probs", PROBS[:3]), _set(f"{TOK}.top", [[["a"]]] * 10),
    _set(f"{TOK}.top", [[[5, 0.1]]] * 10), _set(f"{TOK}.top", [[["a", "x"]]] * 10),
    _set(f"{TOK}.top", "x"), _set(f"{TOK}.tokens", [5] * 10), _set(f"{TOK}.tokens", DEL),
    _set("kind", "video"), _set("timings", []), _set("settings", "x"), _set("version", "1"),
]
RAW = [b"", b"{", b"\xff\xfe{}", b"[]", b'"x"', b"5", b"null", b"[" * 100_000 + b"]" * 100_000,
       b'{"attack": "raw-%d", "recovery": NaN}', b'{"attack": "raw-%d", "summary": '
       b'{"probability": {"recovery": {"mean": Infinity}}}}']


def test_damaged_stress_results_are_named_and_every_page_renders(ui_env, demo_dir):
    text_token_project(ui_env, demo_dir)
    run_dir = ui_env / "runs" / "sga-text"
    stress = run_dir / STRESS_DIR
    atomic_write_json(stress / "quant8.json", good())  # the sound result: shown throughout
    bad = []
    for i, mutate in enumerate(MUTATIONS):
        key = f"bad-{i}"
        atomic_write_json(stress / f"{key}.json", mutate(copy.deepcopy(good(key))))
        bad.append(key)
    for i, raw in enumerate(RAW):
        key = f"raw-{i}"
        (stress / f"{key}.json").write_bytes(raw.replace(b"%d", str(i).encode()))
        bad.append(key)
    (stress / "folder.json").mkdir()
    bad.append("folder")

    from sga_core.runs.damage import run_damage
    from sga_core.stress.results import attacked_token_tables, read_results

    assert sorted(read_results(run_dir)) == ["quant8"]
    damage = run_damage(run_dir)
    missing = [k for k in bad if f"stress/{k}.json: " not in damage]
    assert not missing, (missing, damage)
    assert "stress/bad-5.json: summary must be an object, got []" in damage
    assert "stress/bad-12.json: summary entry 'probability' recovery mean must be a " \
           "number, got 'x'" in damage
    assert list(attacked_token_tables(run_dir, 0)) == ["quant8"]

    at = open_page("app_pages/results.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert not at.exception, at.exception
    warned = " ".join(shown(w.value) for w in at.warning)
    assert "run sga-text is damaged" in warned and "stress/bad-5.json" in warned, warned
    table = next(h.proto.body for h in at.html if "data-band" in h.proto.body)
    assert 'data-col="quant8"' in table and "bad-" not in table  # the sound one still shows

    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert not at.exception, at.exception
    at.toggle(key="tokens.stressed").set_value(True).run()
    assert not at.exception, at.exception
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert [y.split(" · ")[1] for y in heat["y"] if " · " in y] == ["quant8"], heat["y"]
    assert "stress/bad-5.json" in " ".join(shown(w.value) for w in at.warning)
