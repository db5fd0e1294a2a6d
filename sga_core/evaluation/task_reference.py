"""The retain reference's value an evaluation needs, by its task: the forget truth ratios
(QA; and the attacks' AUCs for its PrivLeak), the completions' scores (the copyright
protocol) or the attacks' AUCs (text), with the
key its cache keeps it under (:mod:`~sga_core.evaluation.reference`), and what the summary
says of it."""

from __future__ import annotations

from collections.abc import Callable

from sga_core.evaluation.common import Progress
from sga_core.evaluation.inputs import fill_token_inputs
from sga_core.evaluation.qa import answer_scoring, reference_truth_ratios
from sga_core.evaluation.reference import (
    completions_key,
    forget_rows_key,
    is_same_model,
    mia_key,
    reference_value,
    resolve_reference,
    self_reference_info,
)
from sga_core.evaluation.settings import EvalSettings
from sga_core.evaluation.text import (
    full_text,
    prompt_and_continuation,
    reference_completions,
    text_scoring,
)
from sga_core.metrics.catalog import (
    REFERENCE_ATTACKS,
    Instance,
    auc_name,
    mia_losses,
    spec_of,
)
from sga_core.metrics.context import MetricInputs, SetData


def task_reference(kind: str, reference: str | None, model: str, forget_rows: list[dict],
                   set_rows: dict[str, list[dict]], st: EvalSettings, device: str,
                   progress: Progress, options: dict, *,
                   load: Callable, row_ids: dict | None = None) -> tuple[dict, str, bool]:
    """The retain reference's value for this evaluation: ``(info, cache key, self)``, where
    ``self`` says the evaluated model is the reference itself; ``load(spec, dtype=, device=)``
    loads the reference model when its value must be computed. A published eval log as the
    reference gives its value for the evaluated rows (``row_ids``: their own indices where
    ``eval.max_rows`` kept a subset; :mod:`~sga_core.evaluation.ou_logs`)."""
    ref = resolve_reference(reference)
    self_ref = is_same_model(ref, model)
    if ref is not None and ref.logs is not None:  # a published eval log: its values, no model
        from sga_core.evaluation.ou_logs import logs_reference

        key = task_reference(kind, None, model, forget_rows, set_rows, st, device, progress,
                             options, load=load)[1]  # no reference: nothing is loaded
        return (logs_reference(ref, kind, options, forget_rows, set_rows, row_ids), key,
                False)

    if kind == "qa":
        extra = {k: v for k, v in (("prompt_format", st.prompt_format),
                                   ("epsilon", options.get("epsilon"))) if v not in ("chat", 0.0)}
        key = forget_rows_key(forget_rows, st.max_length, st.system_prompt, **extra)
        kind_key = "forget_truth_ratios"

        def compute(m, tok):
            return reference_truth_ratios(m, st.encoder(tok, m), forget_rows, st.batch_size,
                                          device, progress, options)
    elif options.get("name") == "copyright":
        pairs = [prompt_and_continuation(r) for r in forget_rows]
        key = completions_key(pairs, st.max_length, options.get("completion_new_tokens"))
        kind_key = "copyright_scores"

        def compute(m, tok):
            return reference_completions(m, st.encoder(tok, m), forget_rows, st.batch_size,
                                         device, options, progress)
    else:
        info, key = mia_reference(kind, reference, model, forget_rows, set_rows, st, device,
                                  progress, load=load)
        return info, key, self_ref
    if self_ref:
        return self_reference_info(ref), key, self_ref
    return (reference_value(ref, kind_key, key, compute, load=load, dtype=st.dtype,
                            device=device, progress=progress), key, self_ref)


def reference_aucs(model, enc, kind: str, forget_rows: list[dict], holdout: list[dict],
                   batch_size: int = 16, device="cpu", progress: Progress = None,
                   gradnorm: bool = False) -> dict | None:
    """A (reference) model's MIA value on the forget against the holdout rows, scored as
    the evaluation scores them: ``{"aucs": {attack: AUC}, "losses": {"forget": [...],
    "holdout": [...]}}``, the AUC of each of :data:`~sga_core.metrics.catalog.
    REFERENCE_ATTACKS` (GradNorm's too with ``gradnorm``; Reference's is the model against
    itself, 0.5) and each row's mean token NLL (what the Reference attack compares with)."""
    attacks = [*REFERENCE_ATTACKS[:-1], *(["gradnorm"] if gradnorm else [])]
    specs = [spec_of(auc_name(a), kind) for a in attacks]
    data = {"forget": SetData("forget", list(forget_rows)),
            "holdout": SetData("holdout", list(holdout))}
    scoring = answer_scoring if kind == "qa" else text_scoring
    fill_token_inputs(model, enc, data, [Instance(s.name, s, s.on) for s in specs],
                      *scoring(enc), device=device, batch_size=batch_size, progress=progress,
                      stage="reference: scoring " + ("answers (MIA)" if kind == "qa"
                                                     else "texts"),
                      grad_norms=gradnorm, drop_last=kind == "qa")
    opt = {"mia_gradnorm": gradnorm}
    aucs = {a: s.compute(MetricInputs(s.name, data, s.on, options=opt)).value
            for a, s in zip(attacks, specs)}
    spec = spec_of(auc_name("reference"), kind)
    aucs["reference"] = spec.compute(MetricInputs(spec.name, data, spec.on,
                                                  self_reference=True)).value
    if None in aucs.values():
        return None
    return {"aucs": aucs, "losses": mia_losses(data)}


def mia_reference(kind: str, reference: str | None, model: str, forget_rows: list[dict],
                  set_rows: dict[str, list[dict]], st: EvalSettings, device: str,
                  progress: Progress, *, load: Callable) -> tuple[dict, str]:
    """The retain reference's MIA value (:func:`reference_aucs`: each attack's AUC for its
    PrivLeak, each row's loss for the Reference attack), cached (kind ``mia_aucs``) under
    the forget and holdout rows, the attacks and the encoding: ``(info, cache key)``."""
    ref = resolve_reference(reference)
    holdout = set_rows.get("holdout") or []
    gradnorm = bool(st.mia_gradnorm)
    attacks = {"attacks": [*REFERENCE_ATTACKS, *(["gradnorm"] if gradnorm else [])]}
    if kind == "qa":
        key = mia_key([[r["question"], r["answer"]] for r in forget_rows],
                      [[r["question"], r["answer"]] for r in holdout], st.max_length,
                      system_prompt=st.system_prompt, prompt_format=st.prompt_format,
                      **attacks)
    else:
        key = mia_key([full_text(r) for r in forget_rows], [full_text(r) for r in holdout],
                      st.max_length, **attacks)
    if is_same_model(ref, model):
        return self_reference_info(ref), key
    if ref is not None and ref.logs is not None:  # a published eval log: its attacks' AUCs
        from sga_core.evaluation.ou_logs import logs_mia_reference

        return logs_mia_reference(ref, kind, forget_rows, holdout), key
    if not holdout:
        return ({"value": None, "source": None, "path": reference,
                 "model": ref.model if ref else None,
                 "reason": "no holdout set (eval.sets.holdout)"}, key)

    def compute(m, tok):
        return reference_aucs(m, st.encoder(tok, m), kind, forget_rows, holdout,
                              st.batch_size, device, progress, gradnorm)

    return reference_value(ref, "mia_aucs", key, compute, load=load, dtype=st.dtype,
                           device=device, progress=progress), key


def reference_kind(kind: str, options: dict) -> str:
    """The cache kind of the reference's value for a task kind and protocol."""
    if kind == "qa":
        return "forget_truth_ratios"
    return "copyright_scores" if options.get("name") == "copyright" else "mia_aucs"


def reference_meta(kind: str, options: dict, ref_info: dict,
                   mia_info: dict | None = None) -> dict:
    """The summary's ``reference``: where the reference is, where its value came from (or
    why it is missing), and the value, or for QA how many truth ratios it has; the
    attacks' AUCs (``mia_aucs``, with Min-K%'s also as ``mia_auc``) where PrivLeak used
    them (a QA evaluation's ``mia_info``: where they came from as ``mia_source`` /
    ``mia_reason``)."""
    ref_meta = {k: ref_info.get(k) for k in ("path", "model", "source", "reason")}
    if kind == "qa":
        ref_meta["n_truth_ratios"] = len(ref_info["value"] or [])
    elif options.get("name") == "copyright":
        ref_meta["completion_scores"] = ref_info["value"]
    else:
        mia_info = ref_info
    if mia_info is not None:
        aucs = (mia_info["value"] or {}).get("aucs") if isinstance(mia_info["value"], dict) \
            else None
        ref_meta["mia_auc"] = (aucs or {}).get("min_k")
        ref_meta["mia_aucs"] = aucs
        if mia_info is not ref_info:
            ref_meta["mia_source"] = mia_info.get("source")
            ref_meta["mia_reason"] = mia_info.get("reason")
    return ref_meta
