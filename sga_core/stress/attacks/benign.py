"""Relearning (`sga_core/stress/relearning.py`), trained not on forget rows but on retain
rows (as many as the forget share of the forget rows, drawn per seed) or on a text you give
(`--benign-text FILE`, one paragraph per row); every forget row is re-scored, since none
was trained on. On text data it trains on whole retain passages, or the given text. Not
run unless asked for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sga_core.params import param
from sga_core.stress.relearning import Relearning, RelearnSettings


@dataclass
class BenignSettings(RelearnSettings):
    benign_text: str | None = param(None, "Benign relearning on this text file (blank-line "
                                    "separated paragraphs) instead of retain rows.")


class Benign(Relearning):
    name = "benign"
    label = "benign relearning"
    description = ("a copy fine-tuned for N steps on retain rows (or --benign-text); every "
                   "forget row re-scored")
    rank = 20
    default = False
    Settings = BenignSettings

    def training_rows(self, ctx, seed):
        import random

        n = len(ctx.forget_rows)
        k = max(1, round(ctx.settings.relearn_share * n))
        if ctx.settings.benign_text:
            paras = benign_paragraphs(ctx.settings.benign_text)
            used = sorted(random.Random(seed).sample(range(len(paras)), min(k, len(paras))))
            seqs = [ctx.enc.text("", paras[i]) for i in used]
            return "text", used, seqs, list(range(n))
        if not ctx.retain_rows:
            raise ValueError("benign relearning needs retain rows or --benign-text")
        used = sorted(random.Random(seed).sample(range(len(ctx.retain_rows)),
                                                 min(k, len(ctx.retain_rows))))
        seqs = [ctx.train_seq(ctx.retain_rows[i]) for i in used]
        return "retain", used, seqs, list(range(n))


def benign_paragraphs(path: str) -> list[str]:
    """The paragraphs (blank-line separated) of a text file, each one training row."""
    from sga_core.params import ConfigError

    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--benign-text {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    paras = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    if not paras:
        raise ConfigError(f"--benign-text {path}: the file has no text")
    return paras
