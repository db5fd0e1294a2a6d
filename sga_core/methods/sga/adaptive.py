"""Adaptive r (docs/spec.md#22-adaptive-r): follow r* as the model moves.

On an adaptive step the forget sequences and the normal sequences of the batch go through
two separate forward/backward passes, giving ``a`` (gradient of the mean forget NLL) and
``b`` (gradient of the mean normal NLL). r is set to the clipped r* of docs/spec.md#21-closed-form
and the SGA gradient at that r is assembled from the two without a third pass:

    L(r) = c_f(r) * F + (K-1) * c_n(r) * B   =>   grad = c_f(r) * a + (K-1) * c_n(r) * b

Cost against a fixed-r step: the same tokens, but two backward passes instead of one, one
copy of the gradients, and three inner products over the parameters.
"""

from __future__ import annotations

from sga_core.methods.sga.rstar import rstar_from_products
from sga_core.model.losses import sga_coefficients


def split_units(units):
    """Forget and normal sequences of a batch, each with its owning unit position."""
    f_seqs, f_ids, n_seqs, n_ids = [], [], [], []
    for j, u in enumerate(units):
        for s in u.seqs:
            if s.role == "forget":
                f_seqs.append(s)
                f_ids.append(j)
            else:
                n_seqs.append(s)
                n_ids.append(j)
    return f_seqs, f_ids, n_seqs, n_ids


def clip_r(r: float | None, lo: float, hi: float, fallback: float) -> float:
    if r is None or r != r:
        return fallback
    return max(lo, min(min(hi, 1.0), r))


def adaptive_gradient(model, units, *, k: int, convention: str, bounds: tuple[float, float],
                      fallback_r: float, pad_id: int, device, scale: float = 1.0,
                      backward=None, reduce=None, weight: float = 1.0) -> dict:
    """Leave in ``p.grad`` the SGA gradient at the clipped r* of this batch.

    ``scale`` multiplies the per-unit sums (``world / n_global`` under data parallelism,
    so averaged gradients are global means); ``backward`` is ``accelerator.backward`` (plain
    ``loss.backward()`` by default); ``reduce`` sums a tensor over processes. ``weight`` 0
    runs the passes without contributing (a process with no unit of this batch).
    Returns r*, the r used, and the batch statistics.
    """
    import torch

    from sga_core.model.forward import forward_stats

    backward = backward or (lambda loss: loss.backward())
    reduce = reduce or (lambda t: t)
    params = [p for p in model.parameters() if p.requires_grad]
    f_seqs, f_ids, n_seqs, n_ids = split_units(units)
    per_unit_normals = max(1, len(n_seqs) // max(1, len(units)))

    model.zero_grad(set_to_none=True)
    fs = forward_stats(model, f_seqs, f_ids, pad_id, device)
    f_sum = fs.mean_nll.sum()
    backward(f_sum * scale * weight)
    grad_a = [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
              for p in params]
    model.zero_grad(set_to_none=True)
    ns = forward_stats(model, n_seqs, n_ids, pad_id, device)
    n_sum = ns.mean_nll.sum() / per_unit_normals  # per unit: the mean over its normals
    backward(n_sum * scale * weight)
    grad_b = [p.grad.detach() if p.grad is not None else torch.zeros_like(p) for p in params]

    dots = torch.stack([sum((x.double() * x.double()).sum() for x in grad_a),
                        sum((x.double() * y.double()).sum() for x, y in zip(grad_a, grad_b)),
                        sum((y.double() * y.double()).sum() for y in grad_b)])
    aa, ab, bb = dots.tolist()  # gradients are already averaged over processes
    r_star = rstar_from_products(aa, ab, bb, k, convention)
    r = clip_r(r_star, bounds[0], bounds[1], fallback_r)
    c_f, c_n = sga_coefficients(r, k, convention)
    with torch.no_grad():
        for p, ga, gb in zip(params, grad_a, grad_b):
            p.grad = c_f * ga + (k - 1) * c_n * gb
    sums = reduce(torch.stack([f_sum.detach().double() * weight,
                               torch.tensor(float(len(f_seqs)), dtype=torch.float64,
                                            device=f_sum.device) * weight,
                               ns.mean_nll.detach().sum().double() * weight,
                               torch.tensor(float(len(n_seqs)), dtype=torch.float64,
                                            device=f_sum.device) * weight]))
    return {"r_star": r_star, "r": r, "c_f": c_f, "c_n": c_n, "sums": sums,
            "tokens": sum(len(s) for s in f_seqs + n_seqs)}
