"""Prompt attacks (docs/stress-tests.md#prompt-attacks): the unlearned model unchanged, the
forget questions asked another way, the forget answers re-scored (probability, ROUGE-L).

- ``paraphrase``: each forget row's ``paraphrased_question`` (TOFU's field) where the row
  has one, else one written by the ``paraphrase_backend`` (:mod:`sga_core.stress.paraphrases`);
  rows with neither are left out, and a forget set with none is "not applicable";
- ``fewshot``: ``k`` retain question-answer pairs (drawn per seed) before the question, in
  the one user turn;
- ``roleplay``: each role-play/jailbreak template of ``assets/attacks/roleplay.yaml`` (or
  ``--templates``) around the question; the interval runs over the templates.
"""

from __future__ import annotations

from pathlib import Path

from sga_core.stress.base import Attack, Case, StressContext

PARAPHRASE_FIELD = "paraphrased_question"


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


def fewshot_prefix(pairs: list[dict]) -> str:
    return "".join(f"Question: {p['question']}\nAnswer: {p['answer']}\n\n" for p in pairs)


class Paraphrase(Attack):
    name = "paraphrase"
    label = "paraphrased questions"
    description = ("the forget questions' paraphrases (paraphrased_question, or written by "
                   "the paraphrase_backend)")
    rank = 40
    asks_questions = True

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        from sga_core.stress import paraphrases

        found = {i: r[PARAPHRASE_FIELD] for i, r in enumerate(ctx.forget_rows)
                 if isinstance(r.get(PARAPHRASE_FIELD), str) and r[PARAPHRASE_FIELD].strip()}
        info: dict = {"from_data": len(found), "generated": 0}
        missing = [i for i in range(len(ctx.forget_rows)) if i not in found]
        if missing and ctx.settings.paraphrase_backend:
            made, failed, by = paraphrases.generate(
                ctx.forget_rows, missing, ctx.settings,
                lambda done, total: ctx.report("writing paraphrases", done, total))
            found.update(made)
            info.update(generated=len(made), paraphraser=by,
                        left_out={str(i): why for i, why in sorted(failed.items())})
        if not found:
            left = sorted(set(info.get("left_out", {}).values()))
            why = (f"no paraphrase was written ({'; '.join(left)})" if left else
                   f"no forget row has a {PARAPHRASE_FIELD!r} field (a paraphrase_backend "
                   "can write them)")
            return {self.name: [Case("", None, [], [], reason=f"not applicable: {why}",
                                     info=info)]}
        rows = sorted(found)
        qs = [found[i] for i in rows]
        return {self.name: [Case("", None, rows, ctx.score(ctx.model, rows, qs, self.name),
                                 questions=qs, info=info)]}


class FewShot(Attack):
    name = "fewshot"
    label = "few-shot prefix"
    description = "k retain question-answer pairs before each forget question"
    rank = 50
    asks_questions = True

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        import random

        if not ctx.retain_rows:
            return {self.name: [Case("", None, [], [], reason="not applicable: no retain "
                                     "rows to take the examples from")]}
        k = max(1, min(ctx.settings.fewshot_k, len(ctx.retain_rows)))
        rows = list(range(len(ctx.forget_rows)))
        cases = []
        for seed in ctx.settings.seeds:
            used = sorted(random.Random(seed).sample(range(len(ctx.retain_rows)), k))
            prefix = fewshot_prefix([ctx.retain_rows[i] for i in used])
            qs = [f"{prefix}Question: {ctx.forget_rows[i]['question']}" for i in rows]
            cases.append(Case(f"seed {seed}", seed, rows,
                              ctx.score(ctx.model, rows, qs, f"{self.name} seed {seed}"),
                              used, "retain", qs))
        return {self.name: cases}


class RolePlay(Attack):
    name = "roleplay"
    label = "role-play prompts"
    description = "each role-play/jailbreak template around the forget questions"
    rank = 60
    asks_questions = True

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        rows = list(range(len(ctx.forget_rows)))
        cases = []
        for t in load_templates(ctx.settings.templates):
            qs = [wrap(t["text"], ctx.forget_rows[i]["question"]) for i in rows]
            cases.append(Case(t["name"], None, rows,
                              ctx.score(ctx.model, rows, qs, f"{self.name} {t['name']}"),
                              questions=qs))
        return {self.name: cases}
