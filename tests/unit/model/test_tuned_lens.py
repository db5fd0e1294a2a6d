"""The tuned lens as the layer view's option (docs/token-probabilities.md#a-tuned-lens): a lens
folder written exactly as the tuned-lens package's ``TunedLens.save`` writes one (its
``config.json``, its translators' ``params.pt``: the state dict of a ``ModuleList`` of
``Linear(H, H)``) is read; each layer's reading is ``softmax(head(norm(h + W h + b)))``, as
computed by hand from the model's hidden states; zero translators are the logit lens; the
last layer stays the model's output. A lens of another size, a damaged or non-tensor file
is refused saying why, and an evaluation then writes the logit lens with the reason."""

from __future__ import annotations

import json
import pickle

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.model.lens import layer_records
from sga_core.model.tuned_lens import TunedLensError, read_tuned_lens, translators
from sga_core.runs.folder import RunFolder

ROW = {"question": "Which language does Lucien Marchetti write in?", "answer": "French."}


def save_lens(folder, hidden: int, depth: int, scale: float = 0.05, seed: int = 0,
              **config):
    """A lens folder as ``tuned_lens.nn.lenses.TunedLens.save`` writes it (AlignmentResearch/
    tuned-lens): translators for hidden states 0..depth-1, the last layer has none."""
    import torch

    torch.manual_seed(seed)
    translators_ = torch.nn.ModuleList([torch.nn.Linear(hidden, hidden)
                                        for _ in range(depth)])
    for t in translators_:
        torch.nn.init.normal_(t.weight, std=scale)
        torch.nn.init.normal_(t.bias, std=scale)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(translators_.state_dict(), folder / "params.pt")
    cfg = {"base_model_name_or_path": "tiny", "d_model": hidden, "num_hidden_layers": depth,
           "bias": True, "base_model_revision": None, "unembed_hash": "0" * 40,
           "lens_type": "linear_tuned_lens", **config}
    (folder / "config.json").write_text(json.dumps(cfg))
    return translators_


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from sga_core.evaluation.run import load_model_and_tokenizer

    m, tok = load_model_and_tokenizer(str(tiny_model_dir))
    return m, EvalSettings().resolve()[1].encoder(tok, m)


def _sizes(m):
    return m.config.hidden_size, m.config.num_hidden_layers


def test_each_layer_reads_through_its_translator(tiny, tmp_path):
    import torch

    m, enc = tiny
    hidden, depth = _sizes(m)
    lens = save_lens(tmp_path / "lens", hidden, depth)
    seq = enc.row(ROW, "qa")
    (tuned,) = layer_records(m, enc, [seq], translate=translators(tmp_path / "lens", m))
    (plain,) = layer_records(m, enc, [seq])
    ids = torch.tensor([seq.input_ids])
    with torch.no_grad():
        out = m(input_ids=ids, output_hidden_states=True)
        at = [i - 1 for i, t in enumerate(seq.labels) if t != -100]  # predicting positions
        targets = [seq.labels[i + 1] for i in at]
        worst = 0.0
        for layer in range(1, depth):  # hidden_states[l]: block l's output, not normed
            h = out.hidden_states[layer][0, at]
            t = lens[layer]
            logits = m.lm_head(m.model.norm(h + t(h)))
            want = torch.softmax(logits.float(), -1)[range(len(at)), targets]
            worst = max(worst, float((want - torch.tensor(tuned["probs"][layer - 1])).abs()
                                     .max()))
    assert worst < 1e-5
    assert tuned["probs"][-1] == plain["probs"][-1]  # the output: no translator
    assert tuned["probs"][0] != plain["probs"][0]  # the translators moved the middle


def test_zero_translators_are_the_logit_lens(tiny, tmp_path):
    m, enc = tiny
    save_lens(tmp_path / "lens", *_sizes(m), scale=0.0)
    seq = enc.row(ROW, "qa")
    (tuned,) = layer_records(m, enc, [seq], translate=translators(tmp_path / "lens", m))
    (plain,) = layer_records(m, enc, [seq])
    assert tuned["probs"] == plain["probs"] and tuned["ranks"] == plain["ranks"]


def test_a_lens_that_does_not_fit_is_refused_saying_why(tiny, tmp_path):
    m, _ = tiny
    hidden, depth = _sizes(m)
    save_lens(tmp_path / "wide", hidden * 2, depth, base_model_name_or_path="gpt2")
    with pytest.raises(TunedLensError, match=rf"d_model is {hidden * 2}, the model's is "
                                             rf"{hidden} \(the lens was tuned for gpt2\)"):
        translators(tmp_path / "wide", m)
    save_lens(tmp_path / "deep", hidden, depth + 3)
    with pytest.raises(TunedLensError, match=f"num_hidden_layers is {depth + 3}"):
        read_tuned_lens(tmp_path / "deep", hidden, depth)
    with pytest.raises(TunedLensError, match="has no config.json"):
        read_tuned_lens(tmp_path, hidden, depth)
    with pytest.raises(TunedLensError, match="is not a folder"):
        read_tuned_lens(tmp_path / "absent", hidden, depth)


class Boom:  # what an untrusted params.pt could hold: an object, never loaded
    def __reduce__(self):
        return (print, ("an object ran while a lens was read",))


def test_a_params_file_that_is_not_tensors_is_refused(tiny, tmp_path, capsys):
    m, _ = tiny
    hidden, depth = _sizes(m)
    save_lens(tmp_path / "lens", hidden, depth)
    (tmp_path / "lens" / "params.pt").write_bytes(pickle.dumps({"0.weight": Boom()}))
    with pytest.raises(TunedLensError, match="params.pt cannot be read as tensors"):
        read_tuned_lens(tmp_path / "lens", hidden, depth)
    assert "an object ran" not in capsys.readouterr().out
    (tmp_path / "lens" / "params.pt").unlink()
    with pytest.raises(TunedLensError, match="has no params.safetensors or params.pt"):
        read_tuned_lens(tmp_path / "lens", hidden, depth)


def test_an_evaluation_writes_the_tuned_view_or_says_why_not(tiny_model_dir, tiny, tmp_path):
    m, _ = tiny
    hidden, depth = _sizes(m)
    save_lens(tmp_path / "lens", hidden, depth)
    run = RunFolder(tmp_path / "run")
    summary = evaluate_model(str(tiny_model_dir), run.eval_dir, [ROW], [ROW], task="qa",
                             settings=EvalSettings(max_new_tokens=2,
                                                   tuned_lens=str(tmp_path / "lens")))
    assert summary["layer_view"] == {"lens": "tuned", "layers": depth,
                                     "tuned_lens": str(tmp_path / "lens")}
    assert run.layers()[0]["lens"] == "tuned"
    save_lens(tmp_path / "wide", hidden * 2, depth)
    other = RunFolder(tmp_path / "other")
    summary = evaluate_model(str(tiny_model_dir), other.eval_dir, [ROW], [ROW], task="qa",
                             settings=EvalSettings(max_new_tokens=2,
                                                   tuned_lens=str(tmp_path / "wide")))
    assert summary["layer_view"]["lens"] == "logit"
    assert summary["layer_view"]["reason"].startswith("the tuned lens was not used: ")
    assert other.layers()[0]["lens"] == "logit"
