"""The layer view of one run's evaluation (``eval/layers.jsonl``, the logit lens written by
:mod:`sga_core.model.lens`): a followed answer token's probability and rank at every layer,
the first layer where it is the top-1 prediction, its rank at the last layer (the model's
output), and the sentence a researcher reads ("out of the output, but still top-1 at layer
22 of 30"). The Token probabilities page, ``probe RUN --layers`` and the tests read it here.
"""

from __future__ import annotations

from pathlib import Path

from sga_core.runs.folder import RunFolder


def layer_table(run_dir: Path, set_name: str = "forget") -> dict[int, dict]:
    """``eval/layers.jsonl`` of a run: per row index, its per-layer record ({} when the run
    has none; :class:`sga_core.runs.validate.Damaged` when the file is damaged)."""
    return {r["index"]: r for r in RunFolder(run_dir).layers() if r.get("set") == set_name}


def attacked_layer_record(token_rec: dict) -> dict | None:
    """The layer record of a stress-tested variant, from its token record (a stress
    result's sample, :func:`sga_core.stress.results.attacked_token_tables`), as
    :func:`layer_table` gives a run's; None when its scoring read no layers (a result of
    before the layer view, or a model the lens cannot read)."""
    lay = token_rec.get("layers")
    if not isinstance(lay, dict):
        return None
    return {"tokens": token_rec["tokens"], "token_ids": token_rec.get("token_ids"), **lay}


def token_position(rec: dict, position: int, token_ids: list[int] | None = None) -> int | None:
    """Where the token table's token ``position`` sits in the layer record ``rec``: the same
    place when both scored the same tokens, else found by its context
    (:func:`sga_core.report.run_files.locate`); None when it is not there."""
    from sga_core.report.run_files import locate

    ids = rec.get("token_ids")
    if token_ids is None or ids is None or list(ids) == list(token_ids):
        return position if 0 <= position < len(rec["tokens"]) else None
    return locate(list(token_ids), position, list(ids))


def layer_facts(rec: dict, position: int) -> dict:
    """The followed token at ``position`` of the layer record ``rec``: its ``token``, per
    layer (first block first) ``probs``, ``ranks`` and the lens's ``top1``; ``layers`` (how
    many), ``first_top1`` and ``last_top1`` (1-based layers where it is the top-1
    prediction; None when at none), ``last_rank`` and ``output_p`` (the last layer: the
    model's own output), and ``hidden``: top-1 at some layer but not at the output."""
    probs = [layer[position] for layer in rec["probs"]]
    ranks = [layer[position] for layer in rec["ranks"]]
    top1 = [layer[position] for layer in rec["top1"]] if rec.get("top1") else None
    at_top = [i + 1 for i, r in enumerate(ranks) if r == 1]
    return {"token": rec["tokens"][position], "probs": probs, "ranks": ranks, "top1": top1,
            "layers": len(ranks), "first_top1": at_top[0] if at_top else None,
            "last_top1": at_top[-1] if at_top else None, "last_rank": ranks[-1],
            "output_p": probs[-1], "hidden": bool(at_top) and ranks[-1] != 1}


def layer_words(facts: dict) -> str:
    """What the layer view says of one model's followed token, in one sentence."""
    tok, n = repr(facts["token"]), facts["layers"]
    if facts["last_rank"] == 1:
        return (f"{tok} is the output's top-1 (p = {facts['output_p']:.3f}); top-1 from layer "
                f"{facts['first_top1']} of {n}")
    out = (f"{tok} is out of the output (rank {facts['last_rank']} at layer {n}, p = "
           f"{facts['output_p']:.3f})")
    if facts["first_top1"] is None:
        best = min(range(n), key=lambda i: (facts["ranks"][i], i))
        return (f"{out} and top-1 at no layer (best rank {facts['ranks'][best]}, at layer "
                f"{best + 1})")
    first, last = facts["first_top1"], facts["last_top1"]
    span = f"layer {last}" if first == last else f"layers {first}-{last}"
    return f"{out}, but still top-1 at {span} of {n}"


def layer_views(run_dir: Path, row: int | None = None, token: str | None = None) -> list[dict]:
    """What ``probe RUN --layers`` shows of one run, per forget row of its layer table:
    ``index``, ``tokens``, ``layers`` and ``followed``: the :func:`layer_facts` of each
    answer token, or with ``token`` only of the one where that text starts (rows whose
    answer lacks it are left out). A :class:`~sga_core.params.ConfigError` in words when
    there is nothing to show."""
    from sga_core.params import ConfigError
    from sga_core.report.run_files import word_token_index
    from sga_core.runs.folder import EVAL_DIR, LAYERS, rel

    table = layer_table(run_dir)
    if not table:
        why = ((RunFolder(run_dir).summary() or {}).get("layer_view") or {}).get("reason")
        raise ConfigError(f"run {Path(run_dir).name!r} has no layer table "
                          f"({rel(EVAL_DIR, LAYERS)}): "
                          + (why if why else
                             "not evaluated yet, or evaluated before layer tables were "
                             "written (re-evaluate it)"))
    indices = sorted(table)
    if row is not None:
        if row not in table:
            raise ConfigError(f"--row {row}: run {Path(run_dir).name!r} has no layer table "
                              f"for forget row {row} (rows: {', '.join(map(str, indices))})")
        indices = [row]
    out = []
    for i in indices:
        rec = table[i]
        positions = range(len(rec["tokens"]))
        if token is not None:
            at = word_token_index(rec["tokens"], token)
            if at is None:
                continue
            positions = [at]
        out.append({"index": i, "tokens": rec["tokens"], "layers": len(rec["probs"]),
                    "lens": rec.get("lens") or "logit",
                    "followed": [{"position": j, **layer_facts(rec, j)} for j in positions]})
    if token is not None and not out:
        where = f"row {row}'s answer" if row is not None else "any forget answer"
        raise ConfigError(f"--token {token!r} is not in {where} of run "
                          f"{Path(run_dir).name!r}")
    return out
