"""What keeps two runs that differ only in r, or only in the method, a controlled comparison
(docs/spec.md#15-data-order).

For a given seed the batches (which forget rows share one, and their order) come from
:func:`sga_core.train.batches.make_batches`: a seeded shuffle of the units, then length
grouping. Every unlearning method makes one unit per forget row, so the shuffle is the same
for all of them; the length grouping sorts by :attr:`Unit.sort_len`, which
:func:`set_order_lengths` sets to the forget row's own encoded length. An SGA unit's normal
answers, a paired retain row (GradDiff, KL, NPO, IDK) or an "I don't know" answer therefore
never move a forget row to another batch.

The rest of a step holds no randomness: the paired retain row of forget row i is retain row
``i mod n_retain``, the IDK template ``i mod n_templates``, adaptive r recomputes r* from the
same batches, and several processes split each global batch the same way (``shard``) with the
loss scaled to the global mean. Dropout is the one source left: its masks depend on the
batch's shape, so a model with dropout makes ``ga`` and ``sga --r 0`` differ by dropout
noise; :func:`dropout_note` says so in the run's log (Llama-family models such as SmolLM2
have none).
"""

from __future__ import annotations


def set_order_lengths(units: list, method_cls, data, enc) -> None:
    """Give each unit of an unlearning method the length of its forget row (the row's
    question and its own answer, as encoded for training), the key of length grouping.
    Fine-tuning units (forget and retain rows alike) keep their own length."""
    if not getattr(method_cls, "unlearning", True):
        return
    forget = data.forget
    if any(not 0 <= u.index < len(forget) for u in units):
        return  # not one unit per forget row: keep each unit's own length
    cache: dict[int, int] = {}
    for u in units:
        if u.index not in cache:
            cache[u.index] = len(enc.row(forget[u.index], data.kind))
        u.order_len = cache[u.index]


def dropout_settings(model_config) -> dict[str, float]:
    """The model config's dropout probabilities that are above 0 (name -> p)."""
    items = (model_config.to_dict() if hasattr(model_config, "to_dict") else
             {k: getattr(model_config, k) for k in dir(model_config) if not k.startswith("_")})
    out = {}
    for name, value in sorted(items.items()):
        if "dropout" in name and isinstance(value, (int, float)) and not isinstance(
                value, bool) and value > 0:
            out[name] = float(value)
    return out


def dropout_note(model_config) -> str | None:
    """A log line when the model trains with dropout (None when it has none)."""
    found = dropout_settings(model_config)
    if not found:
        return None
    return ("note: this model trains with dropout (" + ", ".join(
        f"{k}={v:g}" for k, v in found.items()) + "); its masks depend on the batch shape, "
            "so runs that differ only in r or method also differ by dropout noise")
