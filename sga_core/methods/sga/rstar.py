"""The optimal smoothing rate r* (docs/spec.md#21-closed-form), per forget sample.

With ``a`` the gradient of the forget answer's NLL and ``b`` the mean gradient of the normal
answers' NLLs, the SGA loss gradient is ``g(r) = -a + r * w`` with
``w = ((K-1)/K) * (a - b)`` (``label`` convention) or ``((K-1)/K) * (a + b)`` (``objective``),
and the update-norm minimizer is ``r* = <a, w> / ||w||^2``.

Only three inner products are needed (<a,a>, <a,b>, <b,b>), accumulated parameter by
parameter, so no flat copy of the gradients is ever made.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass


@dataclass
class RStar:
    forget_index: int
    r_star: float | None  # None when w = 0 (every r gives the same update)
    sign: int
    cos_ab: float | None
    norm_a: float
    norm_b: float
    dot_ab: float

    def to_dict(self) -> dict:
        return asdict(self)


def rstar_from_products(aa: float, ab: float, bb: float, k: int,
                        convention: str = "label") -> float | None:
    """r* from the inner products of a and b (the closed form, docs/spec.md#21-closed-form)."""
    c = (k - 1) / k
    s = -1.0 if convention == "label" else 1.0
    a_w = c * (aa + s * ab)
    w_w = c * c * (aa + 2 * s * ab + bb)
    # w = 0 (a = b for label, a = -b for objective): every r gives the same update
    return None if w_w <= 1e-12 * (aa + bb) or w_w == 0 else a_w / w_w


def update_norm_sq(r: float, aa: float, ab: float, bb: float, k: int,
                   convention: str = "label") -> float:
    """||g(r)||^2 for g(r) = -a + r w (used to check r* numerically)."""
    c = (k - 1) / k
    s = -1.0 if convention == "label" else 1.0
    a_w = c * (aa + s * ab)
    w_w = c * c * (aa + 2 * s * ab + bb)
    return aa - 2 * r * a_w + r * r * w_w


def select_parameters(model, subset: str = "all", last_n_layers: int = 0):
    """The parameters the analysis differentiates: all trainable ones, the last N decoder
    layers (plus the final norm and head), or those whose name matches a regex."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if subset == "all" and not last_n_layers:
        return named
    if last_n_layers:
        layer_ids = sorted({int(m.group(1)) for n, _ in named
                            if (m := re.search(r"\.layers\.(\d+)\.", n))})
        keep = set(layer_ids[-last_n_layers:])
        out = [(n, p) for n, p in named
               if ((m := re.search(r"\.layers\.(\d+)\.", n)) and int(m.group(1)) in keep)
               or not re.search(r"\.layers\.\d+\.", n) and "embed" not in n]
        return out
    pattern = re.compile(subset)
    out = [(n, p) for n, p in named if pattern.search(n)]
    if not out:
        raise ValueError(f"no parameter name matches {subset!r}")
    return out


def _grads(model, params, seqs, pad_id, device):
    """Gradient (list of tensors over ``params``) of the mean answer NLL of ``seqs``."""
    import torch

    from sga_core.model.encoding import collate
    from sga_core.model.losses import sequence_nll

    model.zero_grad(set_to_none=True)
    b = {k: v.to(device) for k, v in collate(seqs, pad_id).items()}
    logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                   use_cache=False).logits
    loss = sequence_nll(logits, b["labels"])[0].mean()
    grads = torch.autograd.grad(loss, [p for _, p in params], allow_unused=True)
    return [g if g is not None else torch.zeros_like(p) for g, (_, p) in zip(grads, params)]


def products(ga, gb) -> tuple[float, float, float]:
    aa = sum(float((x.double() * x.double()).sum()) for x in ga)
    ab = sum(float((x.double() * y.double()).sum()) for x, y in zip(ga, gb))
    bb = sum(float((y.double() * y.double()).sum()) for y in gb)
    return aa, ab, bb


def analyze(model, enc, units, k: int, convention: str = "label", subset: str = "all",
            last_n_layers: int = 0, device="cpu", progress=None) -> list[RStar]:
    """r*, its sign, cos(a, b), |a| and |b| for each SGA unit (forget row + K-1 normals)."""
    params = select_parameters(model, subset, last_n_layers)
    model.eval()  # no dropout noise in the gradients
    out = []
    for i, unit in enumerate(units):
        forget = [s for s in unit.seqs if s.role == "forget"]
        normals = [s for s in unit.seqs if s.role == "normal"][: k - 1]
        if not normals:
            raise ValueError(f"forget row {unit.index}: no normal answers")
        ga = _grads(model, params, forget, enc.pad_id, device)
        gb = _grads(model, params, normals, enc.pad_id, device)
        aa, ab, bb = products(ga, gb)
        r = rstar_from_products(aa, ab, bb, k, convention)
        na, nb = math.sqrt(aa), math.sqrt(bb)
        out.append(RStar(unit.index, r, 0 if r is None else (1 if r > 0 else -1 if r < 0 else 0),
                         ab / (na * nb) if na and nb else None, na, nb, ab))
        if progress:
            progress(i + 1, len(units))
    model.zero_grad(set_to_none=True)
    return out


def summarize(results: list[RStar]) -> dict:
    """Distribution of r* and a suggested range (the interquartile range)."""
    vals = sorted(r.r_star for r in results if r.r_star is not None)
    if not vals:
        return {"n": 0, "reason": "r* is undefined for every row (w = 0)"}

    def q(p: float) -> float:
        pos = (len(vals) - 1) * p
        lo, hi = math.floor(pos), math.ceil(pos)
        return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)

    return {"n": len(vals), "n_positive": sum(v > 0 for v in vals),
            "n_negative": sum(v < 0 for v in vals), "min": vals[0], "q1": q(0.25),
            "median": q(0.5), "q3": q(0.75), "max": vals[-1],
            "mean": sum(vals) / len(vals), "suggested_range": [q(0.25), q(0.75)]}


def run_analysis(model_spec: str, forget_rows, normals, kind: str, k: int,
                 convention: str = "label", subset: str = "all", last_n_layers: int = 0,
                 max_length: int = 256, system_prompt=None, progress=None) -> dict:
    """Load the model and data, analyze every forget row; returns a JSON-able dict."""
    import time

    from sga_core.methods import MethodData, get_method
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    t0 = time.time()
    tok = load_tokenizer(model_spec)
    model = load_model(model_spec)
    enc = Encoder(tok, max_length=max_length, system_prompt=system_prompt)
    cls = get_method("sga")
    sga = cls(cls.Config(r=0.0, k=k, convention=convention))
    units = sga.build_units(MethodData(kind, forget_rows, normals=normals), enc)
    res = analyze(model, enc, units, k, convention, subset, last_n_layers, progress=progress)
    return {"model": model_spec, "k": k, "convention": convention, "subset": subset,
            "last_n_layers": last_n_layers, "elapsed_s": round(time.time() - t0, 2),
            "rows": [r.to_dict() for r in res], "summary": summarize(res)}
