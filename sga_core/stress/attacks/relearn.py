"""Per seed (`--seeds`, default 0,1,2) a share of the forget rows (`--relearn-share`,
default 10%, at least one row, never all) is drawn; a copy of the model is fine-tuned on
them (answer-only next-token loss, AdamW, `--relearn-lr`: default the run's learning rate,
else 1e-5; `--relearn-batch-size` 4) and the REST of the forget set is re-scored after each
step count (`--relearn-steps`, default 10 and 50, one trajectory): one result per step
count, `<name>-<steps>`. The rows trained on never overlap the rows re-scored. On text data
it trains on whole forget passages and re-scores the others."""

from __future__ import annotations

from sga_core.stress.base import seeded_rows
from sga_core.stress.relearning import Relearning


class Relearn(Relearning):
    name = "relearn"
    label = "relearning"
    description = ("a copy fine-tuned for N steps on a share of the forget rows; the rest "
                   "re-scored")
    rank = 10

    def training_rows(self, ctx, seed):
        n = len(ctx.forget_rows)
        used = seeded_rows(n, ctx.settings.relearn_share, seed)
        seqs = [ctx.train_seq(ctx.forget_rows[i]) for i in used]
        rest = [i for i in range(n) if i not in set(used)]
        return "forget", used, seqs, rest
