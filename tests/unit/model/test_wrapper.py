"""The two-model wrapper of Who's Harry Potter (sga_core.model.wrapper): its combination rule
by hand, its greedy generation (KV caches, left padding) against a plain loop, and loading a
``wrapper.json`` folder like any model."""

from __future__ import annotations

import copy
import json
import math

import pytest

from sga_core.model.wrapper import (
    WRAPPER_FILE,
    WrapperError,
    combine,
    combined_class,
    is_wrapper,
    read_spec,
    refuse_training,
)


def test_combine_by_hand():
    import torch

    v = torch.tensor([[2.0, 0.0, -1.0]])
    r = torch.tensor([[1.0, 3.0, -1.0]])
    # logits: v - alpha * relu(r - v) = [2 - 0, 0 - 0.5*3, -1 - 0]
    assert combine(v, r, 0.5, "logits").tolist() == [[2.0, -1.5, -1.0]]
    # probs: (1 + a) p_v - a p_r, floored, renormalised, as log-probabilities
    pv = [math.exp(x) for x in (2.0, 0.0, -1.0)]
    pv = [x / sum(pv) for x in pv]
    pr = [math.exp(x) for x in (1.0, 3.0, -1.0)]
    pr = [x / sum(pr) for x in pr]
    p = [max(1.5 * a - 0.5 * b, 1e-10) for a, b in zip(pv, pr)]
    expected = [math.log(x / sum(p)) for x in p]
    assert combine(v, r, 0.5, "probs")[0].tolist() == pytest.approx(expected, rel=1e-5)
    # with alpha large enough a probability goes negative: it is floored, not NaN
    out = combine(v, r, 5.0, "probs")
    assert torch.isfinite(out).all() and out.exp().sum().item() == pytest.approx(1.0)
    assert combine(v, r, 0.0, "probs").exp()[0].tolist() == pytest.approx(pv, rel=1e-5)


@pytest.fixture(scope="module")
def pair(tiny_model_dir):
    import torch

    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    base = load_model(str(tiny_model_dir)).eval()
    reinforced = copy.deepcopy(base)
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        for p in reinforced.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=gen))
    return base, reinforced, Encoder(load_tokenizer(str(tiny_model_dir)))


def test_forward_combines_the_two_models(pair):
    import torch

    base, reinforced, enc = pair
    lm = combined_class()(base, reinforced, 0.7, "logits")
    ids = torch.tensor([enc.prompt_ids("Who wrote it?")])
    with torch.no_grad():
        got = lm(input_ids=ids, use_cache=False).logits
        want = combine(base(input_ids=ids).logits, reinforced(input_ids=ids).logits, 0.7)
    assert torch.allclose(got, want)
    assert lm.config is base.config and lm.generation_config is base.generation_config
    assert not any(p.requires_grad for p in lm.parameters())


def naive_greedy(lm, prompt: list[int], n: int, eos: int) -> list[int]:
    """Greedy decoding without caches or padding: the whole sequence each step."""
    import torch

    ids = list(prompt)
    for _ in range(n):
        with torch.no_grad():
            logits = lm(input_ids=torch.tensor([ids])).logits[0, -1]
        nxt = int(logits.argmax())
        if nxt == eos:
            break
        ids.append(nxt)
    return ids[len(prompt):]


@pytest.mark.parametrize("alpha,mode", [(0.0, "logits"), (0.7, "logits"), (0.7, "probs")])
def test_generation_matches_a_plain_loop(pair, alpha, mode):
    from sga_core.model.forward import greedy_generate

    base, reinforced, enc = pair
    lm = combined_class()(base, reinforced, alpha, mode)
    prompts = [enc.prompt_ids(q) for q in ("Who?", "Which book did Lucien Marchetti write "
                                                   "first, and in what year?", "Where?")]
    got = greedy_generate(lm, prompts, enc.pad_id, enc.eos_id, 12, batch_size=3)
    assert got == [naive_greedy(lm, p, 12, enc.eos_id) for p in prompts]
    if alpha == 0.0:  # the base model's own greedy answers
        assert got == greedy_generate(base, prompts, enc.pad_id, enc.eos_id, 12, batch_size=3)


def write_spec(folder, **spec):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / WRAPPER_FILE).write_text(json.dumps(spec))
    return folder


def test_a_wrapper_folder_loads_like_a_model(tmp_path, tiny_model_dir, pair):
    import shutil

    import torch

    from sga_core.model.loading import load_model

    reinforced_dir = tmp_path / "run" / "reinforced"
    pair[1].save_pretrained(reinforced_dir)
    folder = write_spec(tmp_path / "run" / "model", kind="whp", version=1,
                        base=str(tiny_model_dir), reinforced="../reinforced", alpha=0.7,
                        combine="logits")
    shutil.copyfile(tiny_model_dir / "config.json", folder / "config.json")
    assert is_wrapper(folder) and not is_wrapper(tiny_model_dir)
    spec = read_spec(folder)
    assert spec["reinforced"] == str(reinforced_dir) and spec["alpha"] == 0.7
    lm = load_model(str(folder))
    assert type(lm).__name__ == "CombinedLM" and lm.alpha == 0.7
    ids = torch.tensor([[1, 5, 9, 12]])
    with torch.no_grad():
        want = combine(pair[0](input_ids=ids).logits, pair[1](input_ids=ids).logits, 0.7)
        assert torch.allclose(lm(input_ids=ids).logits, want, atol=1e-6)
    with pytest.raises(WrapperError, match="not trained further"):
        refuse_training(str(folder))


@pytest.mark.parametrize("field,value,message", [
    ("alpha", "big", "alpha: expected a finite number"),
    ("alpha", float("nan"), "alpha: expected a finite number"),
    ("kind", "soup", "kind: 'soup' is not one of"),
    ("combine", "mean", "combine: 'mean' is not one of"),
    ("reinforced", "", "reinforced: expected a model folder"),
])
def test_a_bad_spec_names_its_field(tmp_path, tiny_model_dir, field, value, message):
    from sga_core.model.loading import ModelError, load_model

    spec = {"kind": "whp", "base": str(tiny_model_dir), "reinforced": str(tiny_model_dir),
            "alpha": 1.0, "combine": "logits", field: value}
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / WRAPPER_FILE).write_text(json.dumps(spec, allow_nan=True))
    with pytest.raises(ModelError, match=message) as err:
        load_model(str(folder))
    assert str(folder / WRAPPER_FILE) in str(err.value)
