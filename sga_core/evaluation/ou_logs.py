"""A retain model's published evaluation logs as the retain reference
(docs/spec.md#411-published-models-and-eval-logs).

open-unlearning (OU; ``src/evals/base.py`` ``Evaluator``) writes ``<BENCH>_EVAL.json``
(``TOFU_EVAL.json``, ``MUSE_EVAL.json``: each metric's result, per sample) and
``<BENCH>_SUMMARY.json`` (each listed metric's ``agg_value``), and publishes its retain
models' logs (``python setup_data.py --eval_logs``: the ``open-unlearning/eval`` dataset,
``saves/eval/tofu_<model>_retain90/TOFU_EVAL.json``), which its configs name as
``retain_logs_path``. A metric's result is ``{"agg_value": ..., "value_by_index": {"<row
index>": {...}}}`` (JSON turns the row indices into strings):

- ``forget_truth_ratio`` (``memorization.py`` ``truth_ratio``): ``value_by_index[i]
  ["score"]`` is row i's truth ratio, ``P(perturbed) / P(paraphrased)``, TOFU's and the
  workbench's per-row ``forget_truth_ratio``; Forget Quality is the KS test of these
  (``privacy.py`` ``ks_test``, ``reference_logs["retain_model_logs"]["retain"]``);
- ``forget_Q_A_ROUGE``: ``value_by_index[i]["ground_truth"]``, row i's answer, used here to
  check that the log's rows are the project's, in the same order;
- ``mia_min_k`` (``mia/utils.py`` ``mia_auc``): ``agg_value`` = ``auc``, the ROC-AUC with
  forget labelled 0 and holdout 1 over scores ``-mean(lowest k% log-probs)``, which is
  P(a forget text looks more likely than a holdout text): the workbench's ``mia_auc``
  convention (1 = memorised); ``forget`` / ``holdout`` hold each text's score by index.
  PrivLeak (``privacy.py`` ``privleak``) reads its ``agg_value``; ``mia_loss``,
  ``mia_zlib``, ``mia_min_k_plus_plus`` likewise for their attacks.

A summary file holds only aggregates: the MIA AUCs of the attacks it lists, never the
per-row truth ratios Forget Quality needs. Nothing here loads a model.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCHMARKS = ("TOFU", "MUSE")
LOG_FILE = re.compile(r"^(TOFU|MUSE)_(EVAL|SUMMARY)\.json$")
#: OU's attack metric -> the workbench's AUC metric (sga_core.metrics.catalog)
ATTACKS = {"mia_min_k": "mia_auc", "mia_loss": "mia_loss_auc", "mia_zlib": "mia_zlib_auc",
           "mia_min_k_plus_plus": "mia_min_k_plus_plus_auc"}
#: keys only one benchmark's logs have (to tell a renamed file's benchmark)
MARKERS = {"TOFU": ("forget_truth_ratio", "forget_Q_A_Prob", "forget_Q_A_ROUGE",
                    "model_utility", "forget_quality"),
           "MUSE": ("forget_knowmem_ROUGE", "retain_knowmem_ROUGE", "forget_verbmem_ROUGE")}
#: TOFU's forget splits by their row count (the retain model's log must be of the same one)
TOFU_SPLIT_ROWS = {40: "forget01 (retain99)", 200: "forget05 (retain95)",
                   400: "forget10 (retain90)"}
MAX_BYTES = 512 * 1024 * 1024


class LogError(ValueError):
    """An eval log that cannot serve as the reference; the message names the file, what is
    wrong and the fix."""


@dataclass
class OULogs:
    """What an OU eval log gives the reference."""

    path: Path
    benchmark: str  # "TOFU" or "MUSE"
    summary: bool  # a <BENCH>_SUMMARY.json (aggregates only)
    truth_ratios: dict[int, float | None] | None = None  # forget_truth_ratio by row
    tr_agg: float | None = None
    answers: dict[int, str] = field(default_factory=dict)  # forget_Q_A_ROUGE ground truths
    aucs: dict[str, float] = field(default_factory=dict)  # workbench AUC metric -> value
    attack_scores: dict[str, dict[str, dict[int, float | None]]] = field(default_factory=dict)
    losses: dict[int, tuple[float, float]] = field(default_factory=dict)  # (para, mean pert)

    @property
    def name(self) -> str:
        return self.path.name


def find_logs(folder: str | os.PathLike) -> Path | None:
    """The eval log in a folder (``saves/eval/tofu_<model>_retain90/``): its
    ``<BENCH>_EVAL.json``, else its summary; None when it has neither; LogError when it
    holds both benchmarks' logs."""
    folder = Path(folder)
    found = [folder / f"{b}_{s}.json" for s in ("EVAL", "SUMMARY") for b in BENCHMARKS
             if (folder / f"{b}_{s}.json").is_file()]
    evals = [p for p in found if p.name.endswith("_EVAL.json")]
    if len({p.name.split("_")[0] for p in found}) > 1:
        raise LogError(f"{folder} holds the logs of both TOFU and MUSE ("
                       f"{', '.join(p.name for p in found)}): name the file")
    return (evals or found or [None])[0]


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _by_index(where: str, value_by_index, key: str) -> dict[int, float | None]:
    if not isinstance(value_by_index, Mapping) or not value_by_index:
        raise LogError(f"{where}: value_by_index must be a non-empty object of rows")
    out: dict[int, float | None] = {}
    for k, v in value_by_index.items():
        try:
            i = int(k)
        except (TypeError, ValueError):
            raise LogError(f"{where}: row index {str(k)[:20]!r} is not a number") from None
        out[i] = _number(v.get(key)) if isinstance(v, Mapping) else None
    return out


def _benchmark(path: Path, logs: Mapping) -> str:
    by_keys = {b for b, keys in MARKERS.items() if any(k in logs for k in keys)}
    named = LOG_FILE.match(path.name)
    if len(by_keys) > 1:
        raise LogError(f"{path.name} mixes TOFU and MUSE metrics: not one of OU's logs")
    if named and by_keys and named.group(1) not in by_keys:
        raise LogError(f"{path.name} is named for {named.group(1)} but holds "
                       f"{by_keys.pop()}'s metrics")
    if by_keys:
        return by_keys.pop()
    if named:
        return named.group(1)
    raise LogError(f"{path.name}: not an open-unlearning eval log (TOFU_EVAL.json, "
                   "MUSE_EVAL.json or their _SUMMARY.json; it holds none of their metrics)")


def read_logs(path: str | os.PathLike) -> OULogs:
    """Parse an OU eval log (or a folder holding one); LogError says what is wrong."""
    try:
        return _read_logs(Path(path).expanduser())
    except OSError as exc:  # a name the system refuses, a file it will not read
        raise LogError(f"{str(path)[:80]}: {exc.strerror or exc}") from None


def _read_logs(path: Path) -> OULogs:
    if path.is_dir():
        found = find_logs(path)
        if found is None:
            raise LogError(f"{path} holds no open-unlearning eval log (TOFU_EVAL.json or "
                           "MUSE_EVAL.json)")
        path = found
    if not path.is_file():
        raise LogError(f"the eval log {path} does not exist")
    if path.stat().st_size > MAX_BYTES:
        raise LogError(f"{path.name} is larger than {MAX_BYTES >> 20} MB: not an eval log")
    try:
        logs = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise LogError(f"{path.name} is not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise LogError(f"{path.name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise LogError(f"{path.name} is nested too deeply") from None
    if not isinstance(logs, dict):
        raise LogError(f"{path.name} must hold an object of metrics, got "
                       f"{type(logs).__name__}")
    bench = _benchmark(path, logs)
    # a summary maps each metric to its agg_value (a number); an eval log to a result object
    summary = bool(LOG_FILE.match(path.name) and path.name.endswith("_SUMMARY.json")) or (
        bool(logs) and not any(isinstance(v, Mapping) for v in logs.values()))
    out = OULogs(path, bench, summary)
    for ou, name in ATTACKS.items():
        res = logs.get(ou)
        if summary:
            if _number(res) is not None:
                out.aucs[name] = _number(res)
            continue
        if isinstance(res, Mapping) and _number(res.get("agg_value")) is not None:
            out.aucs[name] = _number(res["agg_value"])
            out.attack_scores[name] = {
                s: _by_index(f"{path.name}: {ou}.{s}", res[s].get("value_by_index"), "score")
                for s in ("forget", "holdout") if isinstance(res.get(s), Mapping)}
    if summary:
        return out
    tr = logs.get("forget_truth_ratio")
    if isinstance(tr, Mapping):
        out.truth_ratios = _by_index(f"{path.name}: forget_truth_ratio",
                                     tr.get("value_by_index"), "score")
        out.tr_agg = _number(tr.get("agg_value"))
    out.losses = _losses(logs)
    rouge = logs.get("forget_Q_A_ROUGE")
    if isinstance(rouge, Mapping) and isinstance(rouge.get("value_by_index"), Mapping):
        for k, v in rouge["value_by_index"].items():
            if isinstance(v, Mapping) and isinstance(v.get("ground_truth"), str) and \
                    str(k).isdigit():
                out.answers[int(k)] = v["ground_truth"]
    return out


def _losses(logs: Mapping) -> dict[int, tuple[float, float]]:
    """Each row's (paraphrased, mean perturbed) answer loss from the truth ratio's
    pre_compute results (``forget_Q_A_PARA_Prob``, ``forget_Q_A_PERT_Prob``), if there."""
    para, pert = (logs.get(k) for k in ("forget_Q_A_PARA_Prob", "forget_Q_A_PERT_Prob"))
    if not (isinstance(para, Mapping) and isinstance(pert, Mapping)):
        return {}
    a, b = para.get("value_by_index"), pert.get("value_by_index")
    if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return {}
    out = {}
    for k, v in a.items():
        w = b.get(k)
        if not (str(k).isdigit() and isinstance(v, Mapping) and isinstance(w, Mapping)):
            continue
        c, ws = _number(v.get("avg_loss")), w.get("avg_loss")
        ws = [_number(x) for x in (ws if isinstance(ws, list) else [ws])]
        if c is not None and ws and None not in ws:
            out[int(k)] = (c, sum(ws) / len(ws))
    return out


def _squash(text: str) -> str:
    """Letters and digits only, lower case: a decoded ground truth against a row's answer
    (tokenizers change spaces)."""
    return re.sub(r"[^0-9a-z]", "", str(text).lower())


def _contiguous(where: str, by_index: Mapping[int, object]) -> int:
    n = len(by_index)
    if sorted(by_index) != list(range(n)):
        gaps = sorted(set(range(max(by_index) + 1)) - set(by_index))[:3]
        raise LogError(f"{where}: its row indices are not 0..{n - 1}"
                       + (f" (missing {', '.join(map(str, gaps))})" if gaps else ""))
    return n


def _split(n: int) -> str:
    return f" (TOFU {TOFU_SPLIT_ROWS[n]})" if n in TOFU_SPLIT_ROWS else ""


def _wrong_benchmark(logs: OULogs, kind: str) -> str | None:
    want = "TOFU" if kind == "qa" else "MUSE"
    if logs.benchmark != want:
        return (f"{logs.name} is {logs.benchmark}'s evaluation log, and this is a "
                f"{'QA (TOFU)' if kind == 'qa' else 'text (MUSE)'} project: give the retain "
                f"model's {want}_EVAL.json")
    return None


def check_tr_aggregator(logs: OULogs) -> None:
    """The log's truth ratios are TOFU's (P(false) / P(true), aggregated
    ``closer_to_1_better``), not the ``prob_mean`` form P(true) / (P(true) + P(false))."""
    def near(a: float, b: float) -> bool:
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))

    rows = [(i, v) for i, v in (logs.truth_ratios or {}).items()
            if v is not None and i in logs.losses][:50]
    prob_mean = bool(rows)  # read off the pre_compute losses where the log has them
    for i, v in rows:
        c, w = (math.exp(-x) for x in logs.losses[i])
        if not near(v, c / (c + w + 1e-10)) or near(v, w / (c + 1e-10)):
            prob_mean = False
            break
    vals = [v for v in (logs.truth_ratios or {}).values() if v is not None]
    if not rows and vals and logs.tr_agg is not None:  # else off the aggregate
        closer = sum(min(v, 1 / (v + 1e-10)) for v in vals) / len(vals)
        prob_mean = not near(closer, logs.tr_agg) and near(sum(vals) / len(vals), logs.tr_agg)
    if prob_mean:
        raise LogError(f"{logs.name}: forget_truth_ratio was aggregated with prob_mean "
                       "(P(true) / (P(true) + P(false))), not TOFU's truth ratio that "
                       "Forget Quality compares: give a log of the default forget_truth_ratio")


def truth_ratios(logs: OULogs, forget_rows: Sequence[dict],
                 indices: Sequence[int] | None = None) -> list[float | None]:
    """The retain model's forget truth ratios for the evaluated forget rows (``indices``:
    their own row numbers when only a subset is evaluated; the rows are then the ones at
    those indices). LogError when the log is of another benchmark or split, or its rows are
    not the project's."""
    why = _wrong_benchmark(logs, "qa")
    if why:
        raise LogError(why)
    if logs.summary or logs.truth_ratios is None:
        raise LogError(f"{logs.name} holds no per-row forget truth ratios "
                       + ("(a summary holds only aggregates: give TOFU_EVAL.json, written "
                          "beside it)" if logs.summary else
                          "(its forget_truth_ratio metric: evaluate the retain model with "
                          "forget_quality or forget_Truth_Ratio)"))
    n = _contiguous(f"{logs.name}: forget_truth_ratio", logs.truth_ratios)
    indices = list(indices) if indices is not None else list(range(len(forget_rows)))
    total = len(forget_rows) if indices == list(range(len(forget_rows))) else None
    if total is not None and total != n:
        raise LogError(f"{logs.name} has {n} forget truth ratios{_split(n)}, the project's "
                       f"forget set {total} rows{_split(total)}: give the log of the retain "
                       "model of this forget split")
    if indices and max(indices) >= n:
        raise LogError(f"{logs.name} has {n} forget truth ratios{_split(n)}, fewer than the "
                       f"project's forget rows (row {max(indices)} is evaluated)")
    check_tr_aggregator(logs)
    for i, row in zip(indices, forget_rows):
        gt = logs.answers.get(i)
        if gt is not None and _squash(gt) != _squash(row.get("answer", "")):
            raise LogError(f"{logs.name}: row {i}'s answer is {gt[:60]!r}, the project's "
                           f"forget row {i} is {str(row.get('answer', ''))[:60]!r}: the log "
                           "was computed on other rows (another split, or another order)")
    return [logs.truth_ratios[i] for i in indices]


def attack_auc(logs: OULogs, name: str, n_forget: int, n_holdout: int,
               indices: Mapping[str, Sequence[int]] | None = None) -> float:
    """The retain model's AUC of the workbench attack ``name`` (``mia_auc`` = OU's
    ``mia_min_k``) for ``n_forget`` forget and ``n_holdout`` holdout texts; with
    ``indices`` (a subset evaluated: ``{"forget": [...], "holdout": [...]}``), the AUC of
    those rows' scores in the log. LogError when the log lacks it or counts differ."""
    ou = next((k for k, v in ATTACKS.items() if v == name), name)
    if name not in logs.aucs:
        raise LogError(f"{logs.name} holds no {ou} result (the attack behind {name}): "
                       f"evaluate the retain model with {ou} (or privleak)")
    scores = logs.attack_scores.get(name) or {}
    counts = {s: len(v) for s, v in scores.items()}
    for s, want in (("forget", n_forget), ("holdout", n_holdout)):
        if s in counts and counts[s] != want and not (indices and indices.get(s)):
            raise LogError(f"{logs.name}: {ou} scored {counts[s]} {s} texts, the project "
                           f"has {want}: give the log of the same {s} set")
    if not indices or not any(indices.values()):
        return logs.aucs[name]
    if set(scores) != {"forget", "holdout"}:
        raise LogError(f"{logs.name}: {ou} has no per-text scores, so the AUC of a subset "
                       "of rows (eval.max_rows) cannot be taken from it: evaluate all rows")
    from sga_core.metrics import muse

    picked = {}
    for s in ("forget", "holdout"):
        ids = list(indices.get(s) or range(len(scores[s])))
        missing = [i for i in ids if i not in scores[s]]
        if missing:
            raise LogError(f"{logs.name}: {ou} has no {s} row {missing[0]}")
        # OU's score is higher for non-members; the workbench's AUC takes member scores
        picked[s] = [-scores[s][i] if scores[s][i] is not None else None for i in ids]
    value = muse.auc(picked["forget"], picked["holdout"]).value
    if value is None:
        raise LogError(f"{logs.name}: {ou} has no finite scores for these rows")
    return value


def attack_aucs(logs: OULogs, n_forget: int, n_holdout: int,
                indices: Mapping[str, Sequence[int]] | None = None) -> dict[str, float]:
    """The AUC of every attack the log holds, by the workbench's metric name
    (``mia_auc``, ``mia_loss_auc``, ...), for these rows (:func:`attack_auc`)."""
    return {name: attack_auc(logs, name, n_forget, n_holdout, indices)
            for name in ATTACKS.values() if name in logs.aucs}


def logs_reference(ref, kind: str, options: Mapping, forget_rows: Sequence[dict],
                   set_rows: Mapping[str, Sequence[dict]],
                   row_ids: Mapping[str, Sequence[int]] | None = None) -> dict:
    """The reference info an evaluation takes (:func:`~sga_core.evaluation.reference.
    reference_value`'s shape) from the published log ``ref.logs``: the forget truth ratios
    (QA) or the Min-K% AUC (text) of the rows evaluated, or why not (``reason``)."""
    info: dict = {"value": None, "source": None, "reason": None, "path": ref.given,
                  "model": None}
    row_ids = row_ids or {}
    try:
        logs = read_logs(ref.logs)
        if kind == "qa":
            value = truth_ratios(logs, forget_rows, row_ids.get("forget"))
        elif options.get("name") == "copyright":
            raise LogError("open-unlearning's logs hold no copyright-task completion scores: "
                           "use a retain model (a folder or hub id) as the reference")
        else:
            return logs_mia_reference(ref, kind, forget_rows, set_rows.get("holdout") or [],
                                      row_ids)
    except LogError as exc:
        info["reason"] = f"the reference's eval log: {exc}"
        return info
    info.update(value=value, source=f"published eval log ({logs.name})")
    return info


def attack_of(name: str) -> str:
    """The catalog's attack key of an AUC metric (``mia_auc`` -> ``min_k``, ``mia_loss_auc``
    -> ``loss``)."""
    return "min_k" if name == "mia_auc" else name[len("mia_"):-len("_auc")]


def logs_mia_reference(ref, kind: str, forget_rows: Sequence[dict],
                       holdout: Sequence[dict],
                       row_ids: Mapping[str, Sequence[int]] | None = None) -> dict:
    """The retain model's attack AUCs from its published log, as the reference's MIA value
    (``{"aucs": {attack: AUC}}``, :func:`~sga_core.evaluation.task_reference.mia_reference`'s
    shape: each attack's PrivLeak takes its own; Min-K%'s must be there), or why not."""
    info: dict = {"value": None, "source": None, "reason": None, "path": ref.given,
                  "model": None}
    row_ids = row_ids or {}
    try:
        logs = read_logs(ref.logs)
        why = _wrong_benchmark(logs, kind)
        if why:
            raise LogError(why)
        ids = {s: row_ids[s] for s in ("forget", "holdout") if s in row_ids}
        attack_auc(logs, "mia_auc", len(forget_rows), len(holdout), ids)  # names what lacks
        aucs = {attack_of(n): v for n, v in
                attack_aucs(logs, len(forget_rows), len(holdout), ids).items()}
    except LogError as exc:
        info["reason"] = f"the reference's eval log: {exc}"
        return info
    info.update(value={"aucs": aucs}, source=f"published eval log ({logs.name})")
    return info
