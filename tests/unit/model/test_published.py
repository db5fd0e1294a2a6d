"""Published checkpoints (sga_core/model/published.py): a folder, or a hub id found in the
local Hugging Face cache laid out as huggingface_hub lays it out (``models--org--name/
refs/main``, ``snapshots/<commit>/`` links into ``blobs/``), checked as a loadable causal
LM; offline unless allowed, and every problem named with its file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sga_core.model.loading import ModelError
from sga_core.model.published import model_folder_problems, published_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fake_model(folder: Path, arch: str = "LlamaForCausalLM") -> Path:
    """A folder with the files of a model (their content is not read beyond config.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": [arch],
                                                    "model_type": "llama"}))
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "tokenizer.json").write_text("{}")
    (folder / "tokenizer_config.json").write_text("{}")
    return folder


def hub_cache_with(cache: Path, repo_id: str, source: Path) -> Path:
    """``source``'s files stored in ``cache`` as the hub's cache stores a download."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / COMMIT
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for i, f in enumerate(sorted(p for p in source.iterdir() if p.is_file())):
        blob = repo / "blobs" / f"blob{i:04d}"
        shutil.copyfile(f, blob)
        os.symlink(os.path.relpath(blob, snap), snap / f.name)
    return snap


def test_a_real_tiny_model_folder_and_its_cached_copy(tiny_model_dir, tmp_path, monkeypatch):
    assert model_folder_problems(tiny_model_dir) == []
    found = published_model(str(tiny_model_dir))
    assert found.source == "folder" and found.path == tiny_model_dir.resolve()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snap = hub_cache_with(tmp_path / "hub", "open-unlearning/tofu_tiny_full", tiny_model_dir)
    found = published_model("open-unlearning/tofu_tiny_full")
    assert (found.source, found.path) == ("hub id", snap)
    assert "open-unlearning/tofu_tiny_full" in found.describe()


def test_a_hub_id_missing_from_the_cache_is_not_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(ModelError, match=r"not in the local Hugging Face cache .*downloads are "
                                         r"off.*--online.*huggingface-cli download org/x"):
        published_model("org/x", role="Original")


def test_what_is_wrong_is_said_with_its_file(tmp_path, monkeypatch):
    ok = fake_model(tmp_path / "ok")
    assert model_folder_problems(ok) == []
    no_config = fake_model(tmp_path / "a")
    (no_config / "config.json").unlink()
    assert "config.json is missing" in model_folder_problems(no_config)[0]
    masked = fake_model(tmp_path / "b", arch="BertForMaskedLM")
    assert "BertForMaskedLM, not a causal language model" in model_folder_problems(masked)[0]
    no_weights = fake_model(tmp_path / "c")
    (no_weights / "model.safetensors").unlink()
    assert "no weights" in model_folder_problems(no_weights)[0]
    sharded = fake_model(tmp_path / "d")
    (sharded / "model.safetensors").unlink()
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    (sharded / "model-00001-of-00002.safetensors").write_bytes(b"w")
    assert model_folder_problems(sharded) == ["model-00002-of-00002.safetensors is missing"]
    no_tok = fake_model(tmp_path / "e")
    (no_tok / "tokenizer.json").unlink()
    (no_tok / "tokenizer_config.json").unlink()
    assert "no tokenizer" in model_folder_problems(no_tok)[0]
    with pytest.raises(ModelError, match=r"Retained.*: .*/b is not a loadable causal language "
                                         r"model: config.json names BertForMaskedLM"):
        published_model(str(masked), role="Retained")
    with pytest.raises(ModelError, match="does not exist"):
        published_model(str(tmp_path / "nowhere"))
    with pytest.raises(ModelError, match="the base model"):
        published_model("embedded:smollm2")
    # a download cut short: the cache's link points at a blob that is not there
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snap = hub_cache_with(tmp_path / "hub", "org/cut", ok)
    (snap / "model.safetensors").resolve().unlink()
    with pytest.raises(ModelError, match=r"org/cut \(local HF cache: .*model.safetensors is a "
                                         r"link to a file that is not there"):
        published_model("org/cut")
