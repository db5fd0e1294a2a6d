"""One run's files as the Results page inspects them: the settings two runs differ in (their
data included), its token probabilities, its per-row values, and a token followed across the
run's probes."""

from __future__ import annotations

from pathlib import Path

from sga_core.runs import validate
from sga_core.runs.folder import manifest, probes


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
    a, b = _flatten(validate.config(run_a)), _flatten(validate.config(run_b))
    a, b = {**a, **_data_facts(run_a)}, {**b, **_data_facts(run_b)}
    skip = {"run_id"}
    return [{"setting": k, Path(run_a).name: a.get(k), Path(run_b).name: b.get(k)}
            for k in sorted(set(a) | set(b)) if k not in skip and a.get(k) != b.get(k)]


def token_table(run_dir: Path, set_name: str = "forget") -> dict[int, dict]:
    """``eval/tokens.jsonl`` of a run: per row index, its token probabilities
    (:class:`sga_core.runs.validate.Damaged` when the file is damaged)."""
    return {r["index"]: r for r in validate.tokens(run_dir) if r.get("set") == set_name}


def per_sample(run_dir: Path) -> list[dict]:
    """``eval/per_sample.jsonl``, checked (every evaluated row there, or Damaged)."""
    return validate.per_sample(run_dir)


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


def follow_token(run_dir: Path, forget_index: int, position: int) -> list[tuple[int, float]]:
    """(step, probability) of the answer token at ``position`` across a run's probes."""
    pts = []
    for rec in probes(run_dir):
        if rec.get("forget_index") == forget_index and position < len(rec.get("probs", [])):
            pts.append((rec["step"], rec["probs"][position]))
    return pts
