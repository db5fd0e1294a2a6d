"""The 2025 baselines against open-unlearning's own arithmetic (locuslab/open-unlearning,
commit d3d7cf9, ``src/trainer/utils.py``, ``src/trainer/unlearn/{ceu,pdu}.py``), ported below
line for line on Hugging Face-style inputs (unshifted labels, -100 off the answer).

On one forget row (and one retain row) the workbench's per-unit loss and open-unlearning's
batch loss are the same number: open-unlearning's means over a batch's tokens and the
workbench's per-row means (docs/spec.md#12-coefficients-and-the-loss) meet there. Where a
method's docstring names another choice (UNDIAL's positions, PDU's margin positions) the
port is taken at the workbench's positions and says so."""

from __future__ import annotations

import copy
import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sga_core.methods import MethodData, get_method
from sga_core.methods.base import flatten
from sga_core.model.encoding import collate
from sga_core.model.forward import forward_stats

TOL = 1e-4


def agree(method: str, ours: float, theirs: float, what: str, tol: float = TOL) -> None:
    """The workbench's loss is open-unlearning's within ``tol``; the difference is printed
    (``pytest -s``: the closing note's figures)."""
    print(f"{method} {what}: |workbench - OU| = {abs(ours - theirs):.2e}")
    assert ours == pytest.approx(theirs, abs=tol), what


# --- open-unlearning, ported (src/trainer/utils.py) ------------------------------------------
def ou_wga(model, inputs, beta):
    outputs = model(**inputs)
    labels = inputs["labels"]
    shift_logits = outputs.logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    lm_loss = nn.CrossEntropyLoss(ignore_index=-100, reduction="none")(
        shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    weight_ce = ((-lm_loss).exp().detach()) ** beta
    return -(weight_ce * lm_loss)[shift_labels.view(-1) != -100].mean()


def ou_satimp(model, inputs, beta1, beta2):
    outputs = model(**inputs)
    labels = inputs["labels"]
    shift_logits = outputs.logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    lm_loss = nn.CrossEntropyLoss(ignore_index=-100, reduction="none")(
        shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    weight_sat = ((-lm_loss).exp().detach()) ** beta1
    weight_imp = (1 - (-lm_loss).exp().detach()) ** beta2
    return -((weight_sat * weight_imp) * lm_loss)[shift_labels.view(-1) != -100].mean()


def ou_batch_nll(model, inputs):  # compute_batch_nll
    logits = model(**inputs).logits
    shifted_labels = inputs["labels"][..., 1:].contiguous()
    logits = logits[..., :-1, :].contiguous()
    loss = nn.CrossEntropyLoss(ignore_index=-100, reduction="none")(
        logits.transpose(-1, -2), shifted_labels).sum(dim=-1)
    return loss


def ou_dpo(model, ref_model, win_inputs, lose_inputs, beta):  # compute_dpo_loss
    win_log_ratio = -(ou_batch_nll(model, win_inputs) - ou_batch_nll(ref_model, win_inputs))
    lose_log_ratio = -(ou_batch_nll(model, lose_inputs) - ou_batch_nll(ref_model, lose_inputs))
    return -2 / beta * F.logsigmoid(beta * (win_log_ratio - lose_log_ratio)).mean()


def ou_undial_per_position(model, ref_model, inputs, beta):
    """``compute_undial_loss`` up to its last line (``reduction="none"``): the caller takes
    the mean over the answer positions (the workbench's choice; OU's ``.mean()`` runs over
    every position)."""
    logits = model(**inputs).logits
    labels = inputs["labels"]
    shift_labels = labels[..., 1:].contiguous()
    shift_logits = logits[..., :-1, :].contiguous()
    with torch.no_grad():
        teacher_logits = ref_model(**inputs).logits
    shift_teacher_logits = teacher_logits[..., :-1, :].contiguous()
    mask = torch.zeros_like(shift_teacher_logits)
    batch_idx = torch.arange(mask.shape[0]).view(-1, 1, 1)
    seq_idx = torch.arange(mask.shape[1]).view(1, -1, 1)
    mask[batch_idx, seq_idx, shift_labels.unsqueeze(-1)] = 1.0
    pre_softmax = shift_teacher_logits - mask * beta
    soft_label = F.softmax(pre_softmax, dim=-1)
    loss = nn.CrossEntropyLoss(reduction="none")(
        shift_logits.view(-1, shift_logits.size(-1)), soft_label.view(-1, soft_label.size(-1)))
    return loss, shift_labels.reshape(-1) != -100


def ou_ceu(model, inputs, ignore_first_n_answer_tokens=1):
    logits = model(**inputs).logits
    labels = inputs["labels"]
    valid_mask = labels != -100
    update_mask = (valid_mask.cumsum(dim=-1) <= ignore_first_n_answer_tokens) & valid_mask
    labels = labels.masked_fill(update_mask, -100)
    shifted_labels = labels[..., 1:].contiguous()
    shifted_logits = logits[..., :-1, :].contiguous()
    valid = shifted_labels != -100
    valid_logits, valid_labels = shifted_logits[valid], shifted_labels[valid]
    target = valid_logits.detach().clone()
    target.scatter_(dim=-1, index=valid_labels.unsqueeze(-1), value=float("-inf"))
    return F.cross_entropy(input=valid_logits, target=F.softmax(target, dim=-1))


def ou_pdu_forget(model, inputs):
    """PDU's ``compute_loss`` forget term, at the positions that predict the answer tokens
    (OU's mask is the labels unshifted: the logits one position later)."""
    logits = model(**inputs).logits[..., :-1, :]
    mask = (inputs["labels"][..., 1:] != -100).reshape(-1)
    logits = logits.reshape(-1, logits.size(-1))
    forget_loss = (logits.max(dim=-1)[0] - logits.mean(dim=-1)) ** 2
    return (forget_loss * mask).sum() / mask.sum()


class OUDual:
    """PDU's dual variable as open-unlearning updates it (``final_loss_value`` with
    ``dual_update_upon="step"`` and ``DualOptimizationCallback.on_epoch_end``)."""

    def __init__(self, alpha, eps, step_size, warmup_epochs):
        self.preferences = [1.0, alpha]
        self.eps, self.step_size, self.warmup = eps, step_size, warmup_epochs
        self.can_update = warmup_epochs == 0

    def step(self, retain_loss):
        retain_loss = retain_loss - self.eps
        if self.can_update:
            self.preferences[1] = max(0, self.preferences[1] + self.step_size * retain_loss)

    def on_epoch_end(self, epoch):
        if epoch >= self.warmup:
            self.can_update = True


def learn(model, enc, rows, steps=30):
    """Fit the tiny model to ``rows`` a little: a random model is close to uniform, where
    every token's probability is about 1/V and a token weight p^beta, a lowered logit or a
    wrong position would hardly show; after this the answer tokens' probabilities spread
    over (0, 1)."""
    batch = collate([enc.row(r, "qa", role="train") for r in rows], enc.pad_id)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        model(**batch).loss.backward()
        opt.step()


# --- the workbench -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def setup(tiny_model_dir, demo_dir):
    from sga_core.data import load_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    torch.manual_seed(0)
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    forget, retain = load_qa(demo_dir / "forget.jsonl"), load_qa(demo_dir / "retain.jsonl")
    model = load_model(str(tiny_model_dir)).double()
    learn(model, enc, forget[:3] + retain[:3])
    ref = copy.deepcopy(model)
    with torch.no_grad():  # a reference that differs from the model, as after some steps
        for p in ref.parameters():
            p.add_(0.02 * torch.randn_like(p))
    model.eval()
    ref.eval()
    return model, ref, enc, forget, retain


def rows(setup):
    """Each case: one forget row and its paired retain row (three cases)."""
    _, _, _, forget, retain = setup
    assert len(forget) >= 3 and retain
    return [(MethodData("qa", [forget[i]], retain=[retain[i % len(retain)]]), i)
            for i in range(3)]


def workbench_loss(setup, data, name, **cfg):
    """The loss of the one unit of ``data``."""
    (loss,) = workbench_losses(setup, data, name, **cfg)
    return loss


def workbench_losses(setup, data, name, **cfg):
    """Per-unit losses of every row of ``data`` from ONE padded forward."""
    model, ref, enc, _, _ = setup
    cls = get_method(name)
    method = cls(cls.Config(**cfg))
    units = method.build_units(data, enc)
    seqs, ids = flatten(units)
    stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu", keep_logits=method.needs_logits)
    if "reference" in cls.needs:
        with torch.no_grad():
            stats.ref = forward_stats(ref, seqs, ids, enc.pad_id, "cpu",
                                      keep_logits=method.needs_logits)
    return method.unit_losses(stats, len(units)).tolist()


def inputs(setup, data, role):
    _, _, enc, _, _ = setup
    if role == "forget":
        seq = enc.row(data.forget[0], "qa", role="forget", forget_index=0)
    else:
        seq = enc.row(data.retain[0], "qa", role="retain", retain_index=0)
    return collate([seq], enc.pad_id)


def retain_nll(setup, data):
    model = setup[0]
    return model(**inputs(setup, data, "retain")).loss.item()


@pytest.mark.parametrize("beta,gamma,alpha", [(1.0, 1.0, 1.0), (2.5, 0.7, 0.3), (0.0, 1.0, 0.0)])
def test_wga_is_open_unlearnings(setup, beta, gamma, alpha):
    for data, i in rows(setup):
        ours = workbench_loss(setup, data, "wga", beta=beta, forget_weight=gamma,
                              retain_weight=alpha)
        theirs = (gamma * ou_wga(setup[0], inputs(setup, data, "forget"), beta).item()
                  + alpha * retain_nll(setup, data))
        agree("wga", ours, theirs, f"row {i}")


@pytest.mark.parametrize("beta1,beta2,gamma,alpha", [(5.0, 1.0, 0.1, 1.0), (1.0, 3.0, 1.0, 0.5)])
def test_satimp_is_open_unlearnings(setup, beta1, beta2, gamma, alpha):
    for data, i in rows(setup):
        ours = workbench_loss(setup, data, "satimp", beta1=beta1, beta2=beta2,
                              forget_weight=gamma, retain_weight=alpha)
        theirs = (gamma * ou_satimp(setup[0], inputs(setup, data, "forget"), beta1,
                                    beta2).item()
                  + alpha * retain_nll(setup, data))
        agree("satimp", ours, theirs, f"row {i}")


@pytest.mark.parametrize("beta,alpha", [(10.0, 0.0), (1.0, 2.0), (0.3, 0.0)])
def test_undial_is_open_unlearnings_on_the_answer_tokens(setup, beta, alpha):
    model, ref = setup[0], setup[1]
    for data, i in rows(setup):
        ours = workbench_loss(setup, data, "undial", beta=beta, retain_weight=alpha)
        per_pos, answer = ou_undial_per_position(model, ref, inputs(setup, data, "forget"),
                                                 beta)
        assert answer.sum() > 1
        theirs = per_pos[answer].mean().item() + alpha * retain_nll(setup, data)
        agree("undial", ours, theirs, f"row {i}")


@pytest.mark.parametrize("ignore_first", [0, 1, 3])
def test_ceu_is_open_unlearnings(setup, ignore_first):
    for data, i in rows(setup):
        ours = workbench_loss(setup, data, "ceu", ignore_first=ignore_first)
        theirs = ou_ceu(setup[0], inputs(setup, data, "forget"), ignore_first).item()
        agree("ceu", ours, theirs, f"row {i}")


def test_ceu_setting_reaches_the_loss(setup):
    """Leaving out more tokens changes the loss (the setting reaches the maths)."""
    data, _ = rows(setup)[0]
    assert workbench_loss(setup, data, "ceu", ignore_first=0) != pytest.approx(
        workbench_loss(setup, data, "ceu", ignore_first=2), abs=1e-6)


ALTERNATES = ["He was born in Lisbon to a family of sailors.",
              "A small bakery in Oslo, where she wrote at night.",
              "Nobody knows; his records were lost in a fire."]


@pytest.mark.parametrize("beta,alpha,n", [(0.1, 1.0, 3), (0.5, 0.0, 2), (2.0, 2.0, 1)])
def test_altpo_is_open_unlearnings_dpo_over_each_alternate(setup, beta, alpha, n):
    """open-unlearning trains one (alternate, forget answer) pair an item; the workbench's
    unit holds the row's alternates and takes their mean: on one row, the mean of OU's
    per-pair DPO losses plus its retain NLL."""
    from sga_core.data import NormalAnswer, NormalTable

    model, ref, enc, _, _ = setup
    for data, i in rows(setup):
        data.normals = NormalTable([NormalAnswer(forget_index=0, k=j + 1, text=t,
                                                 source="manual")
                                    for j, t in enumerate(ALTERNATES)], len(ALTERNATES) + 1)
        ours = workbench_loss(setup, data, "altpo", beta=beta, retain_weight=alpha,
                              alternates=n)
        lose = inputs(setup, data, "forget")
        pairs = []
        for alt in ALTERNATES[:n]:
            win = collate([enc.row(data.forget[0], "qa", answer=alt, role="normal",
                                   forget_index=0, k=1)], enc.pad_id)
            pairs.append(ou_dpo(model, ref, win, lose, beta).item())
        theirs = sum(pairs) / n + alpha * retain_nll(setup, data)
        agree("altpo", ours, theirs, f"row {i}")


@pytest.mark.parametrize("gamma,lam,eps", [(1.0, 100.0, 0.3), (0.5, 2.0, 5.0)])
def test_pdu_loss_is_open_unlearnings(setup, gamma, lam, eps):
    for data, i in rows(setup):
        ours = workbench_loss(setup, data, "pdu", forget_weight=gamma, retain_weight=lam,
                              retain_eps=eps)
        # final_loss_value: preferences [gamma, lambda] . [forget, retain - eps]
        theirs = (gamma * ou_pdu_forget(setup[0], inputs(setup, data, "forget")).item()
                  + lam * (retain_nll(setup, data) - eps))
        agree("pdu", ours, theirs, f"row {i}", TOL * max(1.0, abs(theirs)))


@pytest.mark.parametrize("name,cfg", [
    ("wga", {"beta": 2.0, "retain_weight": 0.5}), ("satimp", {}),
    ("undial", {"beta": 1.0, "retain_weight": 1.0}), ("ceu", {"ignore_first": 2}),
    ("pdu", {"retain_weight": 3.0, "retain_eps": 1.0})])
def test_several_rows_in_one_forward_are_each_rows_own_loss(setup, name, cfg):
    """Three forget rows (and their retain rows) padded into one forward: each unit's loss
    is that row's alone, as open-unlearning computes it on the row (the per-row token means,
    answer offsets and unit sums of a real batch)."""
    _, _, _, forget, retain = setup
    batch = MethodData("qa", forget[:3], retain=retain[:3])
    together = workbench_losses(setup, batch, name, **cfg)
    assert len(together) == 3
    alone = [workbench_loss(setup, data, name, **cfg) for data, _ in rows(setup)]
    assert together == pytest.approx(alone, abs=TOL * 10)
    assert len({round(v, 4) for v in together}) == 3  # three different rows


def test_altpo_refuses_i_dont_know_refusals(setup):
    from sga_core.normals.idk import idk_normals

    data, _ = rows(setup)[0]
    data.normals = idk_normals(1, 4)
    with pytest.raises(ValueError, match="altpo_alternate"):
        workbench_loss(setup, data, "altpo")


@pytest.mark.parametrize("warmup", [0, 1, 2])
def test_pdus_dual_variable_moves_as_open_unlearnings(warmup):
    """Ten steps of three epochs' worth (4 steps an epoch) with retain losses above and below
    eps: lambda after each step is open-unlearning's, warm-up and the floor at 0 included."""
    cls = get_method("pdu")
    method = cls(cls.Config(retain_weight=1.0, dual_step=2.0, retain_eps=0.5,
                            dual_warmup_epochs=warmup))
    ou = OUDual(alpha=1.0, eps=0.5, step_size=2.0, warmup_epochs=warmup)
    losses = [0.9, 0.2, 0.1, 0.1, 1.5, 0.05, 0.05, 0.05, 1.0, 0.05, 0.05, 0.05]
    per_epoch, trail = 4, []
    for step, loss in enumerate(losses):
        ou.step(loss)
        method.update_dual(loss, step / per_epoch)
        if (step + 1) % per_epoch == 0:
            ou.on_epoch_end((step + 1) // per_epoch)
        agree("pdu dual", method.dual, ou.preferences[1], f"step {step}", 1e-12)
        trail.append(method.dual)
    assert len(set(trail)) > 3 and min(trail) == 0.0  # it moved, and hit the floor


def test_pdu_off_keeps_lambda():
    cls = get_method("pdu")
    method = cls(cls.Config(retain_weight=7.0, primal_dual=False))
    method.update_dual(3.0, 10.0)
    assert method.dual == 7.0


def test_pdu_logs_its_dual_variable_from_the_trainers_steps(tiny_model_dir, demo_dir, tmp_path):
    """A real run of 4 steps, 2 an epoch, warm-up 1 epoch: lambda stays at its start for the
    first epoch's steps and then follows the update rule from the logged retain NLL; a
    checkpoint's method state keeps it."""
    from sga_core.config import TrainConfig
    from sga_core.data import load_qa
    from sga_core.fileio import read_jsonl
    from sga_core.train.trainer import run_training

    forget = tmp_path / "forget.jsonl"
    forget.write_text("".join(json.dumps(r) + "\n" for r in load_qa(demo_dir / "forget.jsonl")[:4]))
    cfg = TrainConfig.from_dict({
        "run_id": "pdu", "model": str(tiny_model_dir), "method": "pdu",
        "method_args": {"retain_weight": 1.0, "dual_step": 0.5, "retain_eps": 0.1,
                        "dual_warmup_epochs": 1.0},
        "data": {"forget": str(forget), "retain": str(demo_dir / "retain.jsonl")},
        "training": {"max_steps": 4, "batch_size": 2, "lr": 1e-3, "eval_nll": False,
                     "save_model": False, "probe_count": 0},
        "eval": {"enabled": False}})
    run = tmp_path / "run"
    run.mkdir()
    assert run_training(cfg, run) == "completed"
    recs = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in recs] == [1, 2, 3, 4] and [r["epoch"] for r in recs][1] == 1.0
    lam = 1.0
    for r in recs:
        if r["step"] > 2:  # steps of the second epoch
            lam = max(0.0, lam + 0.5 * (r["retain_nll"] - 0.1))
        assert r["retain_preference"] == pytest.approx(lam, rel=1e-9), r["step"]
    assert recs[-1]["retain_preference"] != pytest.approx(1.0)
    cls = get_method("pdu")
    method = cls(cls.Config(retain_weight=1.0))
    method.dual = 42.5
    again = cls(cls.Config(retain_weight=1.0))
    again.load_state_dict(method.state_dict())
    assert again.dual == 42.5
