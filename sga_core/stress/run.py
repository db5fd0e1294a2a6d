"""Running stress tests on a run folder or a model, and writing their results
(docs/stress-tests.md, docs/spec.md#5-the-run-directory).

Per result key (an attack's name, or one per step count of a relearning attack) one file
``<out>/<key>.json``, written atomically by the one stress process that holds the folder
(a second one is refused): the settings, each case (seed or template) with its rows, the
attacked, unlearned and Original means on those rows and the recovery, the summary over
the cases, and the per-row samples. For a run folder ``<out>`` is ``RUN_DIR/stress/``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sga_core.stress.attacks import attack_names, default_attacks, get_attack
from sga_core.stress.context import StressContext
from sga_core.stress.scoring import case_metrics, summarise
from sga_core.stress.settings import settings_class

RESULT_VERSION = 1


def parse_attacks(text: str | Sequence[str]) -> list[str]:
    """Attack names, comma-separated (or a list), checked against the registry; "all" =
    every one, "default" = :func:`~sga_core.stress.attacks.default_attacks`."""
    from sga_core.params import ConfigError

    items = text.split(",") if isinstance(text, str) else list(text)
    names = [s.strip() for s in items if s.strip()]
    known = attack_names()
    if names == ["all"]:
        return known
    if names == ["default"]:
        return default_attacks()
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ConfigError(f"--attacks: unknown attack {', '.join(bad) or '(none given)'}; "
                          f"known: {', '.join(known)} (or all)")
    return list(dict.fromkeys(names))


def result_keys(attacks: Sequence[str], settings) -> list[str]:
    return [k for a in attacks for k in get_attack(a).keys(settings)]


@contextlib.contextmanager
def writer_lock(out_dir: Path) -> Iterator[None]:
    """Hold ``out_dir`` as its one writer for the block (a non-blocking ``flock`` on the
    folder itself, released when the process ends however it ends); a second stress
    process on the same folder gets a one-line error at once."""
    import fcntl

    from sga_core.params import ConfigError

    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"{out_dir}: another stress test is writing there; wait for "
                              "it to end") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def stress_model(model: str, out_dir: str | os.PathLike, forget, retain=None, *,
                 original: str | None = None, attacks: Sequence[str] | None = None,
                 settings=None, eval_settings=None, retained: str | None = None,
                 progress=None, run_id: str | None = None, train_lr: float | None = None,
                 original_scores: list[dict] | None = None,
                 meta: Mapping[str, Any] | None = None, job=None) -> dict[str, dict]:
    """Stress-test ``model`` (a folder, hub id or ``embedded:...``) on ``forget`` /
    ``retain`` rows (files or lists; QA pairs, or text passages as
    :mod:`sga_core.stress.rows` reads them); ``original`` is the model it was unlearned
    from (the recovery's far end; None leaves every recovery undefined); ``retained`` the
    Retained model (the probe's floor: :mod:`sga_core.stress.attacks.probe`).
    ``original_scores``: the
    Original's plain scores of every forget row, already computed (a sweep scores it once).
    ``attacks``: names (None: the default ones); ``settings``: a StressSettings
    (:mod:`sga_core.stress.settings`; None: the defaults).
    Writes ``out_dir/<key>.json`` per result key; returns key -> result. ``job``: a
    :class:`sga_core.stress.job.JobRecord` told the parts, the progress and each file
    written, once the folder is held (a run's stress test as a job)."""
    from sga_core.evaluation.common import free_memory
    from sga_core.evaluation.run import choose_device, load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.rows import load_rows, text_retain, text_rows

    st = settings or settings_class()()
    st.check()  # before any model loads: a bad setting costs nothing
    proto, es, _ = (eval_settings or EvalSettings()).resolve()
    device = check_device(choose_device(es.device))
    forget_rows, retain_rows, kind = load_rows(forget, retain)
    attacks = parse_attacks(default_attacks() if attacks is None else attacks)
    out = Path(out_dir)
    verbmem = proto.verbmem_new_tokens
    new_tokens = generated_tokens(kind, es, verbmem, st.rouge)
    results: dict[str, dict] = {}
    with writer_lock(out):
        clear_leftovers(out)
        original_part = original_scores is None and bool(original)
        parts = ["original model"] * original_part + ["unlearned model", *attacks]
        if job is not None:
            job.started(parts)
            progress = _following(job, progress)
        t0 = time.time()
        if original_part:
            _part(job, 0)
            original_scores = score_original(original, forget_rows, es, device, st.rouge,
                                             progress, kind=kind, n_tokens=verbmem)
        baseline_s = time.time() - t0
        m, tok = load_model_and_tokenizer(model, dtype=es.dtype, device=device)
        try:
            if kind == "text":
                forget_rows = text_rows(tok, forget_rows, verbmem)
                retain_rows = text_retain(retain_rows)
            ctx = StressContext(m, es.encoder(tok, m), forget_rows, retain_rows, st, device,
                                es.batch_size, new_tokens, train_lr, out / _kept(),
                                progress, kind, original=original, dtype=es.dtype,
                                retained=retained)
            t1 = time.time()
            _part(job, int(original_part))
            unlearned = ctx.score(m, list(range(len(forget_rows))), stage="unlearned model",
                                  layers=False)
            baseline_s += time.time() - t1
            for i, name in enumerate(attacks):
                _part(job, int(original_part) + 1 + i)
                ta = time.time()
                cases = get_attack(name)().cases(ctx)
                elapsed = time.time() - ta
                for key, case_list in cases.items():
                    res = _result(key, name, case_list, unlearned, original_scores, st, es,
                                  model, original, run_id, elapsed,
                                  {"kind": kind, **(meta or {})})
                    res["timings"]["baselines_s"] = round(baseline_s, 3)
                    res["settings"]["max_new_tokens"] = new_tokens
                    if kind == "text":  # the continuation scored: this many tokens at most
                        res["settings"]["verbmem_new_tokens"] = verbmem
                    _write(out, key, res)
                    results[key] = res
                    if job is not None:
                        job.wrote(key)
        finally:
            del m
            free_memory()
    return results


def clear_leftovers(out: Path) -> list[str]:
    """Remove what a stress process killed mid-write left in ``out`` (held: no other writer
    is there): a result's temporary ``.<key>.json.*.tmp`` and a kept copy's ``.<name>.tmp``
    folder. Every ``<key>.json`` is written whole or not at all (atomic), so after this no
    part of a result is left. Returns the names removed."""
    import shutil

    gone = []
    for folder in (out, out / _kept()):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for p in entries:
            if not (p.name.startswith(".") and p.name.endswith(".tmp")):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    p.unlink()
            gone.append(str(p.relative_to(out)))
    return gone


def check_device(device: str) -> str:
    """``device`` if this machine has it, else ConfigError saying what it has ("--device
    cuda:99: this machine has 1 CUDA device (cuda:0)"), never torch's traceback."""
    import torch

    from sga_core.params import ConfigError

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ConfigError(f"--device {device!r}: not a device (cpu, cuda, cuda:0, mps)") \
            from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0 or (dev.index is not None and dev.index >= n):
            have = (f"{n} CUDA device{'s' if n != 1 else ''} (cuda:0..cuda:{n - 1})" if n
                    else "no CUDA device")
            raise ConfigError(f"--device {device}: this machine has {have}")
    elif dev.type == "mps" and not (getattr(torch.backends, "mps", None)
                                    and torch.backends.mps.is_available()):
        raise ConfigError(f"--device {device}: MPS is not available on this machine")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"--device {device}: use cpu, cuda, cuda:N or mps")
    return device


def _part(job, index: int) -> None:
    if job is not None:
        job.part(index)


def _following(job, progress):
    """``progress``, with ``job`` told each stage's progress first."""
    def follow(stage: str, done: int, total: int) -> None:
        job.progress(stage, done, total)
        if progress is not None:
            progress(stage, done, total)
    return follow


def _kept() -> str:
    from sga_core.runs.folder import STRESS_KEPT

    return STRESS_KEPT


def generated_tokens(kind: str, es, verbmem: int, rouge: bool) -> int:
    """Tokens generated per re-scored row for ROUGE-L: none without ROUGE, the VerbMem
    length for a text passage's continuation, the evaluation's for a QA answer."""
    if not rouge:
        return 0
    return verbmem if kind == "text" else es.max_new_tokens


def score_original(original: str, forget_rows: list[dict], es, device: str, rouge: bool,
                   progress=None, *, kind: str = "qa", n_tokens: int = 128) -> list[dict]:
    """The Original's plain scores of every forget row (loaded, scored, freed); text rows
    (``kind="text"``) as :func:`sga_core.stress.rows.text_rows` cuts them at ``n_tokens``."""
    from sga_core.evaluation.common import free_memory
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.stress.rows import text_rows
    from sga_core.stress.scoring import score_rows

    om, otok = load_model_and_tokenizer(original, dtype=es.dtype, device=device)
    try:
        rows = text_rows(otok, forget_rows, n_tokens) if kind == "text" else forget_rows
        new_tokens = generated_tokens(kind, es, n_tokens, rouge)
        return score_rows(om, es.encoder(otok, om), [r["question"] for r in rows],
                          [r["answer"] for r in rows], device, es.batch_size, new_tokens,
                          progress=progress, stage="original model", kind=kind)
    finally:
        del om
        free_memory()


def _result(key, family, cases, unlearned, original, st, es, model, original_spec, run_id,
            elapsed, meta) -> dict:
    from dataclasses import asdict

    from sga_core.evaluation.common import finite
    from sga_core.fileio import now_iso

    case_out, samples = [], []
    for ci, c in enumerate(cases):
        if c.reason:
            case_out.append({"label": c.label, "seed": c.seed, "reason": c.reason,
                             "eval_rows": [], "attack_rows": [], **_info(c)})
            continue
        base_u = [unlearned[i] for i in c.eval_rows]
        base_o = [original[i] for i in c.eval_rows] if original is not None else None
        if c.baselines is not None:  # the attack's own ends (the probe's controls)
            base_u = c.baselines.get("unlearned") or [{} for _ in c.eval_rows]
            base_o = c.baselines.get("original")
        metrics = case_metrics(c.scores, base_u, base_o)
        if c.baselines is not None and c.baselines.get("reason"):
            for m in metrics.values():
                m["recovery"], m["reason"] = None, m["reason"] or c.baselines["reason"]
            metrics["probability"]["reason"] = c.baselines["reason"]
        elif c.baselines is not None and (metrics["probability"]["reason"] or "").startswith(
                "gap ~0"):  # its own ends: a gap relative to their size, not MIN_GAP
            m = metrics["probability"]
            gap = m["original"] - m["unlearned"]
            if abs(gap) >= REL_GAP * max(abs(m["original"]), abs(m["unlearned"])) > 0:
                m["recovery"], m["reason"] = (m["attacked"] - m["unlearned"]) / gap, None
            else:  # the controls read alike: the attack cannot tell them apart
                m["reason"] = (
                    f"it reads the Original ({m['original']:.3g}) and the Retained model "
                    f"({m['unlearned']:.3g}) alike (within {REL_GAP:.0%} of each other): it "
                    "cannot tell a model that learned these answers from one that never saw "
                    "them")
        case_out.append({"label": c.label, "seed": c.seed, "eval_rows": c.eval_rows,
                         "attack_rows": c.attack_rows, "attack_set": c.attack_set,
                         "metrics": metrics, "reason": None, **_info(c)})
        for j, i in enumerate(c.eval_rows):
            s = c.scores[j]
            samples.append({"case": ci, "index": i,
                            "question": c.questions[j] if c.questions else None,
                            "prob": s.get("prob"), "rouge": s.get("rouge"),
                            "tokens": s.get("tokens"),
                            "generated": s.get("generated"),
                            "prob_unlearned": base_u[j].get("prob"),
                            "rouge_unlearned": base_u[j].get("rouge"),
                            "prob_original": base_o[j].get("prob") if base_o else None,
                            "rouge_original": base_o[j].get("rouge") if base_o else None})
    run_cases = [c["metrics"] for c in case_out if c.get("metrics")]
    summary = summarise(run_cases) if run_cases else None
    head = (summary or {}).get("probability") or {}
    reason = None
    if summary is None:
        reason = "; ".join(sorted({c["reason"] for c in case_out if c.get("reason")}))
    elif head["recovery"]["mean"] is None:
        reason = head["reason"]
    cls = get_attack(family)
    return finite({
        "version": RESULT_VERSION, "attack": key, "family": family, "label": cls.label,
        "description": cls.description, "model": model, "original": original_spec,
        "run_id": run_id, "ended_at": now_iso(),
        "metric": "probability",
        "recovery": head.get("recovery", {}).get("mean") if summary else None,
        "recovery_reason": reason,
        "summary": summary, "cases": case_out,
        **({"baselines": cls.baselines} if getattr(cls, "baselines", None) else {}),
        "settings": {**asdict(st), "max_new_tokens": es.max_new_tokens if st.rouge else 0,
                     "batch_size": es.batch_size, "max_length": es.max_length,
                     "prompt_format": es.prompt_format, "dtype": es.dtype},
        "timings": {"attack_s": round(elapsed, 3)},
        "samples": samples, **(meta or {})})


#: an attack with its own ends (the probe: two control models read alike) measures a
#: recovery when they differ by this share of the larger: its readings can be far below
#: the outputs' MIN_GAP (a probe of a small model reads answers at 0.001-0.01) and still
#: tell the Original from the Retained model apart
REL_GAP = 0.1


def _info(case) -> dict:
    return {"info": case.info} if case.info else {}


def _write(out: Path, key: str, res: dict) -> None:
    from sga_core.fileio import atomic_write_json

    atomic_write_json(out / f"{key}.json", res)


def retained_model(given) -> str | None:
    """The Retained model's spec from a run's ``eval.reference`` or ``--retained`` (a run
    folder, a model folder, a hub id); None when it names no model (an eval log, nothing)."""
    from sga_core.evaluation.reference import resolve_reference

    ref = resolve_reference(str(given)) if given else None
    return ref.model if ref is not None and not ref.problem else None


def stress_run(run_dir: str | os.PathLike, attacks: Sequence[str], settings=None, *,
               overrides: Mapping[str, Any] | None = None, out_dir=None, progress=None,
               original_scores: list[dict] | None = None) -> dict[str, dict]:
    """Stress-test a run folder's ``model/`` on its data snapshot and evaluation settings;
    the Original is the model the run unlearned from (its config's ``model``, or
    ``overrides['original']``). Results go to ``RUN_DIR/stress/`` (or ``out_dir``); a test
    written there is recorded in the run's stress_status.json as it goes
    (:class:`~sga_core.stress.job.JobRecord`)."""
    from sga_core.evaluation.common import EvalError
    from sga_core.evaluation.settings import settings_from_config
    from sga_core.model.loading import is_model_folder
    from sga_core.runs.folder import RunFolder
    from sga_core.stress.job import JobRecord

    run_dir = Path(run_dir).resolve()
    run = RunFolder(run_dir)
    cfg, model_dir = run.config(), run.model_dir
    if not is_model_folder(model_dir):
        raise EvalError(f"run {run_dir.name} has no saved model ({model_dir})")
    ov = dict(overrides or {})
    original = ov.get("original") or cfg.model
    if original and not str(original).startswith("embedded:"):
        candidate = cfg.resolve(original)
        original = str(candidate) if candidate is not None and Path(candidate).exists() \
            else original
    forget = cfg.resolve(cfg.data.forget)
    retain = cfg.resolve(cfg.data.retain)
    retained = retained_model(ov.get("retained") or (
        cfg.resolve(cfg.eval.reference) if cfg.eval.reference else None))
    out = Path(out_dir) if out_dir is not None else run.stress_dir
    # the run's own stress folder: the run's stress_status.json follows this test
    job = JobRecord(run_dir, parse_attacks(attacks)) \
        if out.resolve() == run.stress_dir.resolve() else None
    try:
        results = stress_model(
            str(model_dir), out, str(forget), str(retain) if retain else None,
            original=original, attacks=attacks, settings=settings, retained=retained,
            eval_settings=settings_from_config(cfg, ov), progress=progress,
            run_id=cfg.run_id or run_dir.name, train_lr=cfg.training.lr,
            original_scores=original_scores, job=job,
            meta={"run_dir": str(run_dir), "method": cfg.method,
                  "method_args": cfg.method_args})
    except BaseException as exc:
        if job is not None:
            job.ended(exc)
        raise
    if job is not None:
        job.ended()
    return results
