"""Prompt templates for generating normal answers with a chat model (the OpenAI and local
backends).

A template is a small YAML file (the shipped ones live in ``assets/prompts/``, one per recipe of
the paper's appendix D) with the fields ``name``, ``description``, ``system`` (may be empty),
``user`` and optionally ``kind`` (``qa`` or ``text``: what data it is written for). ``user``
and ``system`` hold placeholders filled from the forget row:

- QA rows: ``{question}`` (required), ``{answer}``;
- text rows: ``{text}`` (the whole passage: prompt + continuation) and/or ``{prompt}`` (the
  passage's prefix, the whole passage when the row has none) -- one of the two is required --
  and ``{continuation}``.

Only these lower-case names in single braces are substituted; any other braces (JSON examples,
say) are left alone, but a brace-word that looks like a placeholder and is not one
(``{questoin}``) is an error, so a typo never reaches the model silently.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.assets import PROMPTS_DIR

__all__ = [
    "PLACEHOLDERS",
    "TEMPLATES_DIR",
    "Template",
    "TemplateError",
    "default_template",
    "list_templates",
    "load_template",
    "render",
]

TEMPLATES_DIR = PROMPTS_DIR
PLACEHOLDERS = {
    "qa": ("question", "answer"),
    "text": ("text", "prompt", "continuation"),
}
REQUIRED = {"qa": ("question",), "text": ("text", "prompt")}  # at least one of these
_ALL = {name for names in PLACEHOLDERS.values() for name in names}
_PLACEHOLDER_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_EXTENSIONS = (".yaml", ".yml")


class TemplateError(ValueError):
    """A template that cannot be loaded or rendered; the message names the template."""


@dataclass(frozen=True)
class Template:
    name: str
    description: str
    system: str
    user: str
    kind: str | None = None
    path: str | None = None

    def placeholders(self) -> set[str]:
        """The placeholder names used in ``system`` and ``user``."""
        return set(_PLACEHOLDER_RE.findall(self.system)) | set(
            _PLACEHOLDER_RE.findall(self.user)
        )

    def check(self, kind: str) -> None:
        """Raise :class:`TemplateError` unless the template can render rows of ``kind``."""
        if kind not in PLACEHOLDERS:
            raise TemplateError(f"kind must be 'qa' or 'text', not {kind!r}")
        used = self.placeholders()
        allowed = set(PLACEHOLDERS[kind])
        wrong = sorted(used - allowed)
        if wrong:
            raise TemplateError(
                f"template {self.name!r}: placeholder {{{wrong[0]}}} is not available for "
                f"{kind} rows (use {_braced(PLACEHOLDERS[kind])})"
            )
        if not used & set(REQUIRED[kind]):
            need = " or ".join(f"{{{n}}}" for n in REQUIRED[kind])
            raise TemplateError(
                f"template {self.name!r}: the user prompt has no {need} placeholder, so the "
                f"{kind} row would never reach the model"
            )

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description, "kind": self.kind,
               "system": self.system, "user": self.user}
        return {k: v for k, v in out.items() if v is not None}


def _braced(names) -> str:
    return ", ".join(f"{{{n}}}" for n in names)


def _from_mapping(doc: Any, source: str, default_name: str, path: str | None) -> Template:
    if not isinstance(doc, dict):
        raise TemplateError(f"{source}: a template must be a YAML mapping with name, "
                            "description, system and user")
    unknown = sorted(set(doc) - {"name", "description", "system", "user", "kind"})
    if unknown:
        raise TemplateError(f"{source}: unknown field {unknown[0]!r} (fields: name, "
                            "description, kind, system, user)")
    for key in ("name", "description", "system", "user", "kind"):
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise TemplateError(f"{source}: field {key!r} must be a string")
    user = doc.get("user")
    if not user or not user.strip():
        raise TemplateError(f"{source}: missing required field 'user' (the user prompt)")
    kind = doc.get("kind") or None
    if kind is not None and kind not in PLACEHOLDERS:
        raise TemplateError(f"{source}: field 'kind' must be 'qa' or 'text', not {kind!r}")
    template = Template(
        name=(doc.get("name") or default_name).strip(),
        description=(doc.get("description") or "").strip(),
        system=(doc.get("system") or "").strip(),
        user=user.strip(),
        kind=kind,
        path=path,
    )
    bad = sorted(template.placeholders() - _ALL)
    if bad:
        raise TemplateError(f"{source}: unknown placeholder {{{bad[0]}}} (known: "
                            f"{_braced(sorted(_ALL))})")
    if kind is not None:
        template.check(kind)
    return template


def template_from_dict(doc: dict[str, Any], name: str = "custom") -> Template:
    """A template from a mapping (e.g. edited in the browser), validated like a file."""
    return _from_mapping(doc, f"template {doc.get('name') or name!r}", name, None)


def _load_file(path: Path) -> Template:
    import yaml

    from sga_core.fileio import YAMLTooLarge, load_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"{path.name}: cannot read template: {exc.strerror or exc}") from None
    try:
        doc = load_yaml(text, path.name)
    except YAMLTooLarge as exc:
        raise TemplateError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise TemplateError(f"{path.name}: invalid YAML{where}") from None
    return _from_mapping(doc, path.name, path.stem, str(path))


def list_templates(folder: str | os.PathLike | None = None) -> list[Template]:
    """The templates in ``folder`` (default: the shipped ``assets/prompts``), sorted by name.

    A broken file raises :class:`TemplateError` naming it.
    """
    root = Path(folder) if folder is not None else TEMPLATES_DIR
    if not root.is_dir():
        return []
    files = sorted(p for p in root.iterdir() if p.suffix in _EXTENSIONS and p.is_file())
    return sorted((_load_file(p) for p in files), key=lambda t: t.name)


def load_template(name_or_path: str | os.PathLike | Template) -> Template:
    """A shipped template by name (``tofu_qa``) or any template file by path."""
    if isinstance(name_or_path, Template):
        return name_or_path
    spec = str(name_or_path).strip()
    if not spec:
        raise TemplateError("no template given")
    path = Path(spec).expanduser()
    looks_like_path = path.suffix in _EXTENSIONS or os.sep in spec or spec.startswith(".")
    if path.is_file():
        return _load_file(path)
    if looks_like_path:
        raise TemplateError(f"template file {spec} does not exist")
    for ext in _EXTENSIONS:
        candidate = TEMPLATES_DIR / f"{spec}{ext}"
        if candidate.is_file():
            return _load_file(candidate)
    names = [p.stem for p in sorted(TEMPLATES_DIR.glob("*.y*ml"))]
    raise TemplateError(f"unknown template {spec!r}; shipped templates: {', '.join(names)} "
                        "(or give a path to a .yaml file)")


def default_template(kind: str, rows: list[dict[str, Any]] | None = None,
                     protocol: str | None = None) -> str:
    """The shipped template for a data kind: ``tofu_qa`` for QA; for text,
    ``copyright_continuation`` under the copyright protocol (the paper's Harry Potter prompt),
    else ``text_different_facts`` when the rows have prefixes ("continue this passage with
    different facts"), else ``news_fabrication`` (whole passages: the paper's MUSE-News
    prompt)."""
    if kind == "qa":
        return "tofu_qa"
    if protocol == "copyright":
        return "copyright_continuation"
    if rows and any((r.get("prompt") or "").strip() for r in rows):
        return "text_different_facts"
    return "news_fabrication"


def row_values(row: dict[str, Any], kind: str) -> dict[str, str]:
    """The placeholder values of one forget row."""
    if kind == "qa":
        return {"question": str(row.get("question") or ""), "answer": str(row.get("answer") or "")}
    if kind != "text":
        raise TemplateError(f"kind must be 'qa' or 'text', not {kind!r}")
    prompt = str(row.get("prompt") or "")
    continuation = str(row.get("continuation") or row.get("gt") or row.get("text") or "")
    if prompt and continuation:
        sep = "" if prompt.endswith((" ", "\n")) else " "
        text = prompt + sep + continuation
    else:
        text = prompt or continuation
    return {"text": text, "prompt": prompt or text, "continuation": continuation}


def _fill(source: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), source)


def render(template: Template | str, row: dict[str, Any], kind: str) -> list[dict[str, str]]:
    """Chat messages (``system`` if any, then ``user``) for one forget row."""
    template = load_template(template)
    template.check(kind)
    values = row_values(row, kind)
    required = [n for n in REQUIRED[kind] if n in template.placeholders()]
    if not any(values[n].strip() for n in required):
        raise TemplateError(f"template {template.name!r}: the row has no "
                            f"{' / '.join(required)} to fill in")
    messages = []
    if template.system:
        messages.append({"role": "system", "content": _fill(template.system, values)})
    messages.append({"role": "user", "content": _fill(template.user, values)})
    return messages
