"""Where the workbench's shipped files live, defined once: the project root, ``assets/`` (demo
data, presets, prompt templates, "I don't know" templates) and the accelerate configs.

In a checkout (and an editable install) they are ``assets/`` and ``configs/`` beside the
package; an installed wheel carries them inside it, as ``sga_core/_shipped/assets`` and
``sga_core/_shipped/configs`` (pyproject.toml maps them there). The package's own copy wins
when present, so a stray ``assets/`` folder in site-packages is never taken for it."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
_IN_PACKAGE = PACKAGE_DIR / "_shipped"
# the folder that holds assets/ and configs/: the installed package's copy, or the checkout
SHIPPED_ROOT = _IN_PACKAGE if (_IN_PACKAGE / "assets").is_dir() else PROJECT_ROOT
ASSETS_DIR = SHIPPED_ROOT / "assets"
ACCELERATE_CONFIGS_DIR = SHIPPED_ROOT / "configs" / "accelerate"
DEMO_DIR = ASSETS_DIR / "demo"
PRESETS_DIR = ASSETS_DIR / "presets"
PROMPTS_DIR = ASSETS_DIR / "prompts"
IDK_TEMPLATES_PATH = ASSETS_DIR / "idk_templates.json"
DEMO_PRESET = PRESETS_DIR / "demo-sga.yaml"

# the demo's evaluation sets per data kind (real-world QA sets; text holdout + QA)
DEMO_EVAL_SETS = {
    "qa": {"real_authors": "real_authors.jsonl", "world_facts": "world_facts.jsonl"},
    "text": {"holdout": "text_holdout.jsonl", "forget_qa": "text_forget_qa.jsonl",
             "retain_qa": "text_retain_qa.jsonl"},
}


def demo_eval_sets(task: str = "qa") -> dict[str, str]:
    """The demo's evaluation sets for a data kind, name -> file path."""
    return {name: str(DEMO_DIR / file) for name, file in DEMO_EVAL_SETS[task].items()}


@lru_cache(maxsize=1)
def _idk_templates() -> tuple[str, ...]:
    data = json.loads(IDK_TEMPLATES_PATH.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
        raise ValueError(f"{IDK_TEMPLATES_PATH}: expected a JSON list of strings")
    return tuple(s.strip() for s in data if s.strip())


def idk_templates() -> list[str]:
    """The "I don't know" refusals in ``assets/idk_templates.json``."""
    return list(_idk_templates())
