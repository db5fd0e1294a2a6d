"""The SGA paper's other baselines and the field's newer methods (docs/spec.md#16-other-methods):
each per-unit loss against its definition, computed here by hand from single-sequence forwards (no
padding, no batching), on a tiny model."""

from __future__ import annotations

import copy
import math

import pytest

from sga_core.methods import MethodData, get_method, method_names
from sga_core.methods.base import flatten
from sga_core.model.forward import forward_stats
from sga_core.model.losses import sequence_nll


@pytest.fixture(scope="module")
def setup(tiny_model_dir, demo_dir):
    import torch

    from sga_core.assets import idk_templates
    from sga_core.data import load_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer
    from sga_core.normals.idk import idk_normals

    model = load_model(str(tiny_model_dir)).double()
    ref = copy.deepcopy(model)  # a reference that differs from the model
    with torch.no_grad():
        gen = torch.Generator().manual_seed(1)
        for p in ref.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    forget = load_qa(demo_dir / "forget.jsonl")[:3]
    data = MethodData("qa", forget, retain=load_qa(demo_dir / "retain.jsonl")[:8],
                      normals=idk_normals(len(forget), 4, seed=3),
                      idk_templates=idk_templates())
    return model, ref, enc, data


def run(setup, name, ref=None, **cfg):
    """(per-unit losses, units, method) of method ``name`` through the trainer's path: one
    padded forward of all units, the reference's forward, ``unit_losses``."""
    import torch

    model, _, enc, data = setup
    cls = get_method(name)
    method = cls(cls.Config(**cfg))
    units = method.build_units(data, enc)
    seqs, ids = flatten(units)
    method.attach(model, ref)
    try:
        stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu",
                              keep_logits=method.needs_logits)
        if ref is not None:
            with torch.no_grad():
                stats.ref = forward_stats(ref, seqs, ids, enc.pad_id, "cpu",
                                          keep_logits=method.needs_logits)
        losses = method.unit_losses(stats, len(units)).tolist()
    finally:
        method.detach()
    return losses, units, method


def token_logprobs(model, seq) -> list[float]:
    """log p of each answer token of one sequence, from its own unpadded forward."""
    import torch

    ids = torch.tensor([seq.input_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
    return [logp[t - 1, seq.labels[t]].item() for t in range(1, len(seq))
            if seq.labels[t] != -100]


def nll(model, seq) -> float:
    lp = token_logprobs(model, seq)
    return -sum(lp) / len(lp)


def logp(model, seq) -> float:
    return sum(token_logprobs(model, seq))


def answer_kl(ref, model, seq) -> float:
    """Mean over answer tokens of KL(ref || model) of the next-token distributions."""
    import torch

    ids = torch.tensor([seq.input_ids])
    with torch.no_grad():
        lq = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
        lp = torch.log_softmax(ref(input_ids=ids).logits[0].double(), -1)
    pos = [t - 1 for t in range(1, len(seq)) if seq.labels[t] != -100]
    return sum((lp[i].exp() * (lp[i] - lq[i])).sum().item() for i in pos) / len(pos)


def approx(expected):
    """The library scores in float32 (as training does); the hand computation is float64."""
    return pytest.approx(expected, rel=1e-5, abs=1e-5)


def log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x))


def by_role(unit, role):
    return [s for s in unit.seqs if s.role == role]


def test_registry_has_the_paper_baselines_and_newer_methods():
    names = set(method_names(unlearning_only=True))
    assert {"flat", "dpo", "dpo-rt", "llmu", "mismatch", "task-vector", "whp", "simnpo",
            "rmu", "npo-rt", "gd"} <= names
    # every new method keeps the forget answer first (probes follow it)
    for name in ("flat", "dpo", "dpo-rt", "llmu", "mismatch", "simnpo", "rmu", "npo-rt",
                 "task-vector", "whp"):
        assert get_method(name).title


# ---------------------------------------------------------------------------- FLAT ---------

def flat_reference_code(p_template: float, p_forget: float, div: str) -> float:
    """FLAT's own get_contrastive_loss (UCSC-REAL/FLAT dataloader.py) on one sample, its
    activation/conjugate functions written out: loss = activation(P_e) - conjugate(P_f)."""
    if div == "kl":
        act, conj = -p_template, -math.exp(p_forget - 1.0)
    elif div == "js":
        act = math.log1p(math.exp(-p_template)) - math.log(2.0)
        conj = -(p_forget + math.log1p(math.exp(-p_forget))) + math.log(2.0)
    elif div == "tv":
        act, conj = -math.tanh(p_template) / 2, -math.tanh(p_forget) / 2
    else:  # pearson
        act, conj = -p_template, -(p_forget * p_forget / 4 + p_forget)
    return act - conj


@pytest.mark.parametrize("div", ["kl", "js", "tv", "pearson"])
def test_flat_matches_its_reference_code(setup, div):
    model = setup[0]
    losses, units, _ = run(setup, "flat", divergence=div)

    def mean_prob(seq):
        return sum(math.exp(v) for v in token_logprobs(model, seq)) / len(
            token_logprobs(model, seq))

    expected = [flat_reference_code(mean_prob(by_role(u, "normal")[0]),
                                    mean_prob(by_role(u, "forget")[0]), div) for u in units]
    assert losses == approx(expected)
    # a fixed point: KL with P_e = 0.5, P_f = 0.8 is -0.5 + e^-0.2
    assert flat_reference_code(0.5, 0.8, "kl") == approx(-0.5 + math.exp(-0.2))


def test_flat_averages_several_templates(setup):
    model = setup[0]
    losses, units, _ = run(setup, "flat", divergence="tv", templates=3)
    assert units and len(losses) == len(units)  # each unit is checked below
    for u, got in zip(units, losses):
        normals = by_role(u, "normal")
        assert len(normals) == 3 and u.seqs[0].role == "forget"
        pe = [sum(math.exp(v) for v in token_logprobs(model, s)) / len(token_logprobs(model, s))
              for s in normals]
        lp = token_logprobs(model, u.seqs[0])
        pf = sum(math.exp(v) for v in lp) / len(lp)
        assert got == approx(-sum(math.tanh(p) / 2 for p in pe) / 3 + math.tanh(pf) / 2)


def test_flat_templates_are_the_normal_answers(setup):
    _, _, enc, data = setup
    _, units, _ = run(setup, "flat")
    assert units  # each unit is checked below
    for i, u in enumerate(units):
        answer = enc.tok.decode([t for t in u.seqs[1].labels if t != -100][:-1]).strip()
        assert answer == data.normals.texts_for(i)[0].strip()


# ---------------------------------------------------------------------------- DPO ----------

@pytest.mark.parametrize("name,retain", [("dpo", 0.0), ("dpo-rt", 1.0)])
def test_dpo_against_a_different_reference(setup, name, retain):
    model, ref, _, _ = setup
    beta = 0.1
    losses, units, method = run(setup, name, ref=ref)
    assert method.cfg.retain_weight == retain and method.cfg.beta == beta
    for u, got in zip(units, losses):
        (f,), (e,) = by_role(u, "forget"), by_role(u, "normal")
        margin = (logp(model, e) - logp(ref, e)) - (logp(model, f) - logp(ref, f))
        expected = -(2 / beta) * log_sigmoid(beta * margin)
        if retain:
            expected += nll(model, by_role(u, "retain")[0])
        else:
            assert not by_role(u, "retain")
        assert got == approx(expected)


def test_dpo_at_the_reference_and_its_preferred_answers(setup):
    model, _, enc, data = setup
    losses, units, _ = run(setup, "dpo", ref=model, beta=0.5)
    assert losses == approx([2 / 0.5 * math.log(2)] * 3)
    idk = enc.tok.decode([t for t in units[0].seqs[1].labels if t != -100][:-1]).strip()
    assert idk in data.idk_templates
    _, units, _ = run(setup, "dpo", ref=model, preferred="normals")
    normal = enc.tok.decode([t for t in units[1].seqs[1].labels if t != -100][:-1]).strip()
    assert normal == data.normals.texts_for(1)[0].strip()


# ------------------------------------------------------------------ NPO-RT, GD, SimNPO -----

def test_npo_rt_and_gd_are_their_paper_forms(setup):
    model, ref, _, _ = setup
    losses, units, _ = run(setup, "npo-rt", ref=ref)
    for u, got in zip(units, losses):
        (f,), (r,) = by_role(u, "forget"), by_role(u, "retain")
        ratio = logp(model, f) - logp(ref, f)
        assert got == approx(-(2 / 0.1) * log_sigmoid(-0.1 * ratio) + nll(model, r))
    losses, units, _ = run(setup, "gd")
    assert losses == approx([-nll(model, u.seqs[0]) + nll(model, u.seqs[1])
                                    for u in units])
    assert losses == approx(run(setup, "graddiff")[0])


def test_simnpo(setup):
    model = setup[0]
    losses, units, method = run(setup, "simnpo", gamma=0.3)
    c = method.cfg
    assert (c.beta, c.forget_weight, c.retain_weight) == (4.5, 0.125, 1.0)
    for u, got in zip(units, losses):
        (f,), (r,) = by_role(u, "forget"), by_role(u, "retain")
        # -(beta/|y|) log p(y|x) - gamma, with -(1/|y|) log p = the mean NLL
        inner = 4.5 * nll(model, f) - 0.3
        assert got == approx(0.125 * -(2 / 4.5) * log_sigmoid(inner) + nll(model, r))


# ---------------------------------------------------------------- LLMU, Mismatch -----------

def test_llmu(setup):
    model, ref, enc, data = setup
    losses, units, method = run(setup, "llmu", ref=ref)
    c = method.cfg
    assert (c.forget_weight, c.random_weight, c.retain_weight, c.random_answers) == (
        0.5, 1.0, 1.0, 5)
    for u, got in zip(units, losses):
        (f,), rand, (r,) = by_role(u, "forget"), by_role(u, "normal"), by_role(u, "retain")
        assert len(rand) == 5
        expected = (-0.5 * nll(model, f) + sum(nll(model, s) for s in rand) / 5
                    + answer_kl(ref, model, r))
        assert got == approx(expected)


def test_random_answers_come_from_retain_rows_and_are_fixed(setup):
    _, _, enc, data = setup
    _, units, _ = run(setup, "mismatch")
    _, again, _ = run(setup, "mismatch")
    retain_answers = {r["answer"].strip() for r in data.retain}
    assert units and len(again) == len(units)  # each unit is checked below
    for i, (u, v) in enumerate(zip(units, again)):
        texts = [enc.tok.decode([t for t in s.labels if t != -100][:-1]).strip()
                 for s in by_role(u, "normal")]
        assert len(set(texts)) == 5 and set(texts) <= retain_answers
        assert data.forget[i]["answer"].strip() not in texts
        assert [s.input_ids for s in u.seqs] == [s.input_ids for s in v.seqs]


def test_mismatch(setup):
    model = setup[0]
    losses, units, _ = run(setup, "mismatch", retain_weight=2.0)
    assert units and len(losses) == len(units)  # each unit is checked below
    for u, got in zip(units, losses):
        assert u.seqs[0].role == "forget"  # in the unit (logged, probed), weight 0
        rand, (r,) = by_role(u, "normal"), by_role(u, "retain")
        assert got == approx(sum(nll(model, s) for s in rand) / len(rand)
                                    + 2.0 * nll(model, r))


# ---------------------------------------------------------------------------- RMU ----------

def hidden(model, seq, layer):
    """Output of decoder layer ``layer`` for one unpadded sequence."""
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.tensor([seq.input_ids]), output_hidden_states=True)
    return out.hidden_states[layer + 1][0].double()  # [0] is the embeddings


def test_rmu_loss_by_hand(setup):
    import torch

    model, ref, _, _ = setup
    coeff, alpha = 3.0, 7.0
    losses, units, method = run(setup, "rmu", ref=ref, layer=0, steering_coeff=coeff,
                                retain_weight=alpha)
    u_vec = method.control.double()
    assert u_vec.norm().item() == approx(coeff)
    assert (u_vec >= 0).all()  # uniform in [0, 1)^d, normalised
    for u, got in zip(units, losses):
        (f,), (r,) = by_role(u, "forget"), by_role(u, "retain")

        def mse(a, b, seq):
            pos = [t for t in range(len(seq)) if seq.labels[t] != -100]
            return sum(((a[t] - b[t]) ** 2).mean().item() for t in pos) / len(pos)

        hf = hidden(model, f, 0)
        forget = mse(hf, u_vec.expand_as(hf), f)
        retain = mse(hidden(model, r, 0), hidden(ref, r, 0), r)
        assert retain > 0
        assert got == approx(forget + alpha * retain)
    assert torch.is_tensor(method.control)


def test_rmu_trains_only_its_parameters_and_detaches(setup, capsys):
    model, ref, _, _ = setup
    cls = get_method("rmu")
    method = cls(cls.Config())  # layer 7 on a 2-layer model: its last layer
    method.attach(model, ref)
    try:
        assert "steering layer 1" in capsys.readouterr().out
        trained = sorted(n for n, p in model.named_parameters() if p.requires_grad)
        assert trained == ["model.layers.0.mlp.down_proj.weight",
                           "model.layers.1.mlp.down_proj.weight"]
    finally:
        method.detach()
    assert all(p.requires_grad for p in model.parameters())
    method = cls(cls.Config(layer=0, trainable="all"))
    method.attach(model, ref)
    try:
        trained = {n for n, p in model.named_parameters() if p.requires_grad}
        assert "model.embed_tokens.weight" in trained
        assert any(n.startswith("model.layers.0.") for n in trained)
        assert not any(n.startswith(("model.layers.1.", "model.norm")) for n in trained)
    finally:
        method.detach()
    assert all(p.requires_grad for p in model.parameters())


def test_rmu_with_the_model_as_its_own_reference(setup):
    """A reference that is the same module (LoRA with adapters disabled) still gives the two
    activations: the training forward's (with gradients) and the reference's (without)."""
    model = setup[0]
    losses, units, method = run(setup, "rmu", ref=model, layer=0, steering_coeff=3.0)
    assert units and len(losses) == len(units)  # each unit is checked below
    for u, got in zip(units, losses):
        f = u.seqs[0]
        hf = hidden(model, f, 0)
        pos = [t for t in range(len(f)) if f.labels[t] != -100]
        target = method.control.double()
        forget = sum(((hf[t] - target) ** 2).mean().item() for t in pos) / len(pos)
        assert got == approx(forget)  # retain term 0 at the reference


# ------------------------------------------------------------------- Task Vector, WHP ------

def test_reinforcement_learns_the_forget_answers(setup):
    model = setup[0]
    for name in ("task-vector", "whp"):
        losses, units, method = run(setup, name)
        assert method.sweep_param == "alpha"
        assert [s.role for u in units for s in u.seqs] == ["forget"] * 3
        assert losses == approx([nll(model, u.seqs[0]) for u in units])


def test_sequence_nll_helper_matches_by_hand(setup):
    """The helpers above agree with the library's own NLL on a padded batch."""
    import torch

    from sga_core.model.encoding import collate

    model, _, enc, data = setup
    seqs = [enc.row(r, "qa") for r in data.forget]
    batch = collate(seqs, enc.pad_id)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"],
                       attention_mask=batch["attention_mask"]).logits
    mean, _, _ = sequence_nll(logits, batch["labels"])
    assert mean.tolist() == approx([nll(model, s) for s in seqs])


# ---------------------------------------------------------------------- Train page ---------

NEW = ("flat", "dpo", "dpo-rt", "npo-rt", "gd", "llmu", "mismatch", "simnpo", "rmu",
       "task-vector", "whp")


@pytest.mark.slow
def test_the_train_page_lists_and_configures_each(ui_env, tiny_model_dir):
    """Each new method is offered on the Train page with a form of its own settings (their
    own defaults), and a chosen setting reaches the previewed config."""
    import yaml

    from sga_core.params import field_specs
    from tests.helpers.ui import open_page

    at = open_page("app_pages/train.py")
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    options = at.selectbox(key="train.method").options  # shown by title
    assert {get_method(n).title for n in NEW} <= set(options)
    for name in NEW:
        at.selectbox(key="train.method").set_value(name).run()
        assert not at.exception, (name, at.exception)
        for spec in field_specs(get_method(name).Config):
            widget = at.get("selectbox") + at.get("number_input") + at.get("text_input")
            values = {w.key: w.value for w in widget if w.key}
            assert values[f"train.f.m.{name}.{spec['name']}"] == spec["default"], name
    at.selectbox(key="train.method").set_value("flat").run()
    at.selectbox(key="train.f.m.flat.divergence").set_value("js").run()
    at.checkbox(key="train.idk_fallback").check().run()  # FLAT's templates: normal answers
    at.button(key="train.preview").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    config = yaml.safe_load(at.code[1].value)
    assert config["method"] == "flat" and config["method_args"] == {"divergence": "js",
                                                                    "templates": 1}
