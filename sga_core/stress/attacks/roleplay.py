"""Each role-play/jailbreak template of `assets/attacks/roleplay.yaml` (edit it, or give
`--templates FILE`: `templates: [{name, text}]`, `text` holding `{question}`) around the
forget question; the interval runs over the templates. Question-answer data only: a
passage has no question to wrap."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sga_core.params import param
from sga_core.stress.base import Attack, Case
from sga_core.stress.context import StressContext


@dataclass
class RolePlaySettings:
    templates: str | None = param(None, "Role-play templates YAML (default: "
                                  "assets/attacks/roleplay.yaml).")


def default_templates_path() -> Path:
    from sga_core.assets import ASSETS_DIR

    return ASSETS_DIR / "attacks" / "roleplay.yaml"


def load_templates(path: str | Path | None = None) -> list[dict]:
    """The role-play templates of a YAML file (``templates: [{name, text}]``), each text
    holding ``{question}`` once or more; a bad file is a ConfigError naming it and what is
    wrong."""
    from sga_core.fileio import load_yaml
    from sga_core.params import ConfigError

    path = Path(path).expanduser() if path else default_templates_path()
    try:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise ConfigError(f"--templates {path}: {exc.strerror or exc}") from None
    items = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: expected 'templates:' with a list of {{name, text}}")
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, dict) or not isinstance(t.get("text"), str):
            raise ConfigError(f"{path}: template {i + 1} needs a 'text' string")
        if "{question}" not in t["text"]:
            raise ConfigError(f"{path}: template {i + 1} ({t.get('name') or 'unnamed'}) has "
                              "no {question} placeholder")
        out.append({"name": str(t.get("name") or f"template {i + 1}"), "text": t["text"]})
    return out


def wrap(template: str, question: str) -> str:
    """A template with its ``{question}`` placeholders filled (other braces left alone)."""
    return template.replace("{question}", question)


class RolePlay(Attack):
    name = "roleplay"
    label = "role-play prompts"
    description = "each role-play/jailbreak template around the forget questions"
    rank = 60
    kinds = ("qa",)
    Settings = RolePlaySettings

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        rows = list(range(len(ctx.forget_rows)))
        cases = []
        for t in load_templates(ctx.settings.templates):
            qs = [wrap(t["text"], ctx.forget_rows[i]["question"]) for i in rows]
            cases.append(Case(t["name"], None, rows,
                              ctx.score(ctx.model, rows, qs, f"{self.name} {t['name']}"),
                              questions=qs))
        return {self.name: cases}
