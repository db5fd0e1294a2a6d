"""Each forget row's `paraphrased_question` (TOFU's field) instead of its question; where a
row has none, one written by `--paraphrase-backend` (see
[paraphrases](../stress-tests.md#paraphrases)); rows with neither are left out, and a forget
set with none says "not applicable" and how to get them. Question-answer data only: a
passage has no question to reword."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case, FormChoice
from sga_core.stress.context import StressContext

PARAPHRASE_FIELD = "paraphrased_question"


@dataclass
class ParaphraseSettings:
    paraphrase_backend: str | None = param(
        None, "Paraphrases: a normals backend with a prompt (local, openai) that rewords the "
        "forget questions without a paraphrased_question (empty: only the data's).")
    paraphrase_model: str | None = param(None, "Paraphrases: the backend's model (empty: "
                                         "its default, the embedded SmolLM2 or gpt-4o-mini).")
    paraphrase_base_url: str | None = param(None, "Paraphrases: an OpenAI-compatible "
                                            "server's base URL (openai only; empty = "
                                            "OpenAI).", advanced=True)
    paraphrase_timeout: float = param(60.0, "Paraphrases: seconds one request to the "
                                      "server may take in all (openai only); one that "
                                      "times out is tried once more, then the server is "
                                      "taken for hung.", min=1.0, max=3600.0, advanced=True)
    paraphrase_template: str | None = param(None, "Paraphrases: the prompt (a normals "
                                            "template YAML; default: "
                                            "assets/attacks/paraphrase.yaml).", advanced=True)


class Paraphrase(Attack):
    name = "paraphrase"
    label = "paraphrased questions"
    description = ("the forget questions' paraphrases (paraphrased_question, or written by "
                   "the paraphrase_backend)")
    rank = 40
    kinds = ("qa",)
    Settings = ParaphraseSettings
    form = (FormChoice(
        "paraphraser", "paraphrase_backend", "paraphrases",
        {"": "the data's own paraphrases only",
         "local": "written by a local model (the embedded SmolLM2, offline)",
         "openai": "written by an OpenAI-compatible API (OPENAI_API_KEY)"},
        help="the paraphrase attack asks each forget question reworded: by the data's "
             "paraphrased_question, or written greedily by a normals backend with "
             "assets/attacks/paraphrase.yaml (the stress command's --paraphrase-* flags set "
             "its model and URL)",
        said="paraphrases written by the {value} backend"),)
    info_fields = {"from_data": int, "generated": int, "paraphraser": str,
                   "left_out": dict[str, str]}

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        if settings.paraphrase_backend:
            from sga_core.stress.paraphrases import backend_problem

            return backend_problem(settings.paraphrase_backend, settings.paraphrase_base_url)
        if settings.paraphrase_model or settings.paraphrase_base_url \
                or settings.paraphrase_template:
            return ("paraphrase_model/base_url/template: they set how paraphrases are "
                    "generated; choose a paraphrase_backend too (local or openai)")
        return None

    @classmethod
    def case_words(cls, info: dict) -> str | None:
        said = [f"{info.get('from_data', 0)} paraphrases from the data"]
        if info.get("paraphraser"):
            said.append(f"{info.get('generated', 0)} written by {info['paraphraser']}")
        if info.get("left_out"):
            said.append(f"{len(info['left_out'])} left out (e.g. "
                        f"{next(iter(info['left_out'].values()))})")
        return ", ".join(said)

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
