"""Paraphrased forget questions written by a normals backend (docs/stress-tests.md#prompt-attacks),
for the ``paraphrase`` attack's rows that have no ``paraphrased_question`` of their own.

The backend (one with a prompt template: ``local``, ``openai``, or one registered later) is
asked once per question with ``assets/attacks/paraphrase.yaml`` (or ``paraphrase_template``),
greedily (temperature 0), so the paraphraser -- a fixed model, never the unlearned one --
asks every run of a sweep the same questions. A reply is cleaned to one question; one that is
empty, only repeats the question, or is not a question (a small model often answers it
instead) is left out, with the reason recorded. A paraphrase is at most
:data:`MAX_PARAPHRASE_CHARS` characters (a longer one is left out), and the backend is asked
for at most :data:`PARAPHRASE_TOKENS` tokens; the openai backend's own deadline per request
and reply-size cap bound a slow or flooding server (sga_core.normals.openai_backend).
"""

from __future__ import annotations

import re
from pathlib import Path

#: the longest paraphrase kept, in characters (a question is a line or two)
MAX_PARAPHRASE_CHARS = 1000
#: tokens the paraphraser may write per question
PARAPHRASE_TOKENS = 96
#: a label a chat model may put before its reworded question
_LABEL = re.compile(r"^\s*(?:reworded|rewritten|paraphrased)?\s*(?:question|paraphrase)\s*:\s*",
                    re.IGNORECASE)


def default_template_path() -> Path:
    from sga_core.assets import ASSETS_DIR

    return ASSETS_DIR / "attacks" / "paraphrase.yaml"


def backend_problem(name: str, base_url: str | None = None) -> str | None:
    """Why ``name`` cannot write paraphrases (None: it can): it must be a registered normals
    backend with a prompt template; ``base_url`` only where the backend has one."""
    from sga_core.normals import backend_names, get_backend

    try:
        entry = get_backend(name)
    except (KeyError, ValueError):
        return f"paraphrase_backend: unknown normals backend {name!r} (known: " \
               f"{', '.join(backend_names())})"
    if "template" not in entry.settings():
        able = [b for b in backend_names() if "template" in get_backend(b).settings()]
        return (f"paraphrase_backend: {name!r} writes answers without a prompt, so it cannot "
                f"reword a question; use one with a prompt template: {', '.join(able)}")
    if base_url and "base_url" not in entry.settings():
        return f"paraphrase_base_url: the {name!r} backend has no server URL (openai has)"
    return None


def clean(reply: str, question: str) -> tuple[str | None, str | None]:
    """The question in a backend's reply (its first non-empty line up to its first question
    mark, a "Question:" label and wrapping quotes removed), or None and why it is left
    out."""
    if len(reply) > 4 * MAX_PARAPHRASE_CHARS:  # never split a flood into lines
        reply = reply[:4 * MAX_PARAPHRASE_CHARS]
    line = next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")
    text = _LABEL.sub("", line).strip().strip('"\u201c\u201d\'').strip()
    if "?" in text:  # the question, without what a chatty model adds after it
        text = text[:text.index("?") + 1].strip('"\u201c\u201d\' ')
    if not text:
        return None, "the paraphraser gave an empty reply"
    if len(text) > MAX_PARAPHRASE_CHARS:
        return None, (f"the paraphrase is too long ({len(text):,} characters or more; at "
                      f"most {MAX_PARAPHRASE_CHARS:,})")
    if _norm(text) == _norm(question):
        return None, "the paraphraser repeated the question"
    if not text.endswith("?"):  # a small chat model often answers instead
        return None, "the paraphraser answered instead of asking (no question mark)"
    return text, None


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def generate(rows: list[dict], indices: list[int], settings, progress=None
             ) -> tuple[dict[int, str], dict[int, str], str]:
    """Paraphrases of ``rows[i]['question']`` for ``i`` in ``indices`` by
    ``settings.paraphrase_backend``: (row -> paraphrase, row -> why left out, the
    paraphraser as "backend: model")."""
    from sga_core.normals import generate_normals, get_backend
    from sga_core.params import ConfigError, field_specs

    name = settings.paraphrase_backend
    problem = backend_problem(name, settings.paraphrase_base_url)
    if problem:
        raise ConfigError(problem)
    entry = get_backend(name)
    opts: dict = {"template": str(settings.paraphrase_template or default_template_path())}
    for key, value in (("model", settings.paraphrase_model),
                       ("base_url", settings.paraphrase_base_url)):
        if value:
            opts[key] = value
    if "temperature" in entry.settings():
        opts["temperature"] = 0.0
    if "timeout" in entry.settings():  # the whole request's deadline (openai)
        opts["timeout"] = float(settings.paraphrase_timeout)
    for key in ("max_tokens", "max_new_tokens"):  # a question, not an essay
        if key in entry.settings():
            opts[key] = PARAPHRASE_TOKENS
    if progress is not None:
        opts["progress"] = progress
    model = opts.get("model") or next(
        (f["default"] for f in field_specs(entry.config) if f["name"] == "model"), None)
    res = generate_normals(name, [rows[i] for i in indices], "qa", 2, **opts)
    found: dict[int, str] = {}
    failed = {indices[j]: str(err) for j, err in (res.errors or {}).items()}
    for a in res.table.answers:
        i = indices[a.forget_index]
        text, why = clean(a.text, rows[i]["question"])
        if text is None:
            failed[i] = why
        else:
            found[i] = text
    for i in indices:
        if i not in found and i not in failed:
            failed[i] = "the paraphraser gave no reply"
    if name == "local":
        from sga_core.normals.local import clear_cache

        clear_cache()  # the paraphraser's weights are not kept beside the attacked model
    return found, failed, f"{name}: {model}" if model else name

