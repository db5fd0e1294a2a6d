"""One run's files as the Results page inspects them: the settings two runs differ in (their
data included), its token probabilities, its per-row values, and a token followed across the
run's probes."""

from __future__ import annotations

from pathlib import Path

from sga_core.runs.folder import RunFolder, manifest, probes


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _data_facts(run_dir: Path) -> dict:
    """What a run's data snapshot was made from (data/manifest.json): per file its source,
    row count and content hash. config.yaml names the snapshot (``data/normals.jsonl`` in
    every run), so two runs with different normal answers would look the same without it."""
    out = {}
    for name, entry in manifest(run_dir).items():
        if isinstance(entry, dict):
            out[f"data.{name} source"] = entry.get("source")
            out[f"data.{name} rows"] = entry.get("rows")
            out[f"data.{name} content"] = (entry.get("rows_hash") or "")[:12] or None
    return out


def config_diff(run_a: Path, run_b: Path) -> list[dict]:
    """The settings that differ between two runs (flattened keys), the data they were
    trained on included (:func:`_data_facts`). A damaged config raises
    :class:`sga_core.runs.validate.Damaged`."""
    a, b = _flatten(RunFolder(run_a).config_dict()), _flatten(RunFolder(run_b).config_dict())
    a, b = {**a, **_data_facts(run_a)}, {**b, **_data_facts(run_b)}
    skip = {"run_id"}
    return [{"setting": k, Path(run_a).name: a.get(k), Path(run_b).name: b.get(k)}
            for k in sorted(set(a) | set(b)) if k not in skip and a.get(k) != b.get(k)]


def token_table(run_dir: Path, set_name: str = "forget") -> dict[int, dict]:
    """``eval/tokens.jsonl`` of a run: per row index, its token probabilities
    (:class:`sga_core.runs.validate.Damaged` when the file is damaged)."""
    return {r["index"]: r for r in RunFolder(run_dir).tokens() if r.get("set") == set_name}


def per_sample(run_dir: Path) -> list[dict]:
    """``eval/per_sample.jsonl``, checked (every evaluated row there, or Damaged)."""
    return RunFolder(run_dir).per_sample()


def word_token_index(tokens: list[str], word: str) -> int | None:
    """Index of the token where ``word`` starts in the decoded answer (works when a word is
    split into several tokens), or None."""
    text, starts = "", []
    for tok in tokens:
        starts.append(len(text))
        text += tok
    at = text.find(word)
    if at < 0:
        return None
    return max(i for i, s in enumerate(starts) if s <= at)


def locate(ids: list[int], position: int, other: list[int]) -> int | None:
    """Where the token at ``position`` of ``ids`` sits in ``other``: the same token with
    the same tokens before it (up to 7; fewer only when no longer context matches), the
    hit at the same position preferred. A text run's probes score the whole training
    passage, its token table the continuation after the VerbMem prefix, so a token's
    position differs between them; a QA answer is the same sequence in both."""
    if not 0 <= position < len(ids):
        return None
    for width in (8, 4, 2, 1):
        pat = ids[max(0, position - width + 1):position + 1]
        hits = [s + len(pat) - 1 for s in range(len(other) - len(pat) + 1)
                if other[s:s + len(pat)] == pat]
        if hits:
            return position if position in hits else hits[0]
    return None


def follow_token(run_dir: Path, forget_index: int, position: int,
                 token_ids: list[int] | None = None) -> list[tuple[int, float]]:
    """(step, probability) of the answer token at ``position`` across a run's probes.
    ``token_ids`` (the token table's ids of that row) find the token by its context
    (:func:`locate`) where the probe scored a longer sequence (text passages)."""
    pts = []
    for rec in probes(run_dir):
        if rec.get("forget_index") != forget_index:
            continue
        probs = rec.get("probs", [])
        at = position
        if token_ids and rec.get("token_ids"):
            at = locate(list(token_ids), position, list(rec["token_ids"]))
        if at is not None and at < len(probs):
            pts.append((rec["step"], probs[at]))
    return pts


def default_token(tables: list[dict], word: str | None = None,
                  compared: list[bool] | None = None) -> int:
    """The token the page follows first: where ``word`` starts (the demo's "French"), else
    the one whose probability fell most from the first table (the Original) to the lowest
    of the unlearning runs' (``compared``: for each table, whether it is one; default every
    table after the first; the Retained never learned the fact, so its low probability is
    no fall that unlearning caused), else the first token that is not blank."""
    if not tables:
        return 0
    tokens = tables[0]["tokens"]
    if word:
        at = word_token_index(tokens, word)
        if at is not None:
            return at
    first = tables[0]["probs"]
    compared = compared if compared is not None else [False] + [True] * (len(tables) - 1)
    others = [t["probs"] for t, c in zip(tables[1:], compared[1:])
              if c and len(t["probs"]) == len(first)]
    if not others:  # nothing to compare: the first token that shows something
        return next((j for j, t in enumerate(tokens) if str(t).strip()), 0)
    drops = [first[j] - min(o[j] for o in others) for j in range(len(first))]
    return max(range(len(drops)), key=lambda j: (drops[j], -j)) if drops else 0
