"""The retain reference's value an evaluation needs, by its task: the forget truth ratios
(QA), the completions' scores (the copyright protocol) or the Min-K% AUC (text), with the
key its cache keeps it under (:mod:`~sga_core.evaluation.reference`), and what the summary
says of it."""

from __future__ import annotations

from collections.abc import Callable

from sga_core.evaluation.common import Progress
from sga_core.evaluation.qa import reference_truth_ratios
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
    reference_auc,
    reference_completions,
)


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
        holdout = set_rows.get("holdout") or []
        key = mia_key([full_text(r) for r in forget_rows], [full_text(r) for r in holdout],
                      st.max_length)
        kind_key = "mia_auc"

        def compute(m, tok):
            return reference_auc(m, st.encoder(tok, m), forget_rows, holdout, st.batch_size,
                                 device, progress)

        if not self_ref and not holdout:
            return ({"value": None, "source": None, "path": reference,
                     "model": ref.model if ref else None,
                     "reason": "no holdout set (eval.sets.holdout)"}, key, self_ref)
    if self_ref:
        return self_reference_info(ref), key, self_ref
    return (reference_value(ref, kind_key, key, compute, load=load, dtype=st.dtype,
                            device=device, progress=progress), key, self_ref)


def reference_kind(kind: str, options: dict) -> str:
    """The cache kind of the reference's value for a task kind and protocol."""
    if kind == "qa":
        return "forget_truth_ratios"
    return "copyright_scores" if options.get("name") == "copyright" else "mia_auc"


def reference_meta(kind: str, options: dict, ref_info: dict) -> dict:
    """The summary's ``reference``: where the reference is, where its value came from (or
    why it is missing), and the value, or for QA how many truth ratios it has."""
    ref_meta = {k: ref_info.get(k) for k in ("path", "model", "source", "reason")}
    if kind == "qa":
        ref_meta["n_truth_ratios"] = len(ref_info["value"] or [])
    elif options.get("name") == "copyright":
        ref_meta["completion_scores"] = ref_info["value"]
    else:
        ref_meta["mia_auc"] = ref_info["value"]
    return ref_meta
