"""The generator of the shipped demo corpus (``assets/demo/``; the library reads the shipped files
and never imports this script). Regenerate with ``python -m tools.demo_corpus OUT_DIR``.

A small, deterministic, invented demo corpus in the shape of TOFU (docs/spec.md#3-data-shapes) and
MUSE. The tables it is made from are data files in ``assets/demo_source/`` (:data:`SOURCE_DIR`),
each described by its own header where the format allows one:

- ``authors.yaml``: the invented authors and :data:`FORGET_AUTHOR`;
- ``qa_slots.yaml``: the QA slots each author's rows are filled from, and the pools of
  nationalities and languages that perturbed answers swap in;
- ``real_authors.jsonl`` (``author``, ``question``, ``object`` for "<author> wrote <object>.")
  and ``world_facts.jsonl`` (``question``, ``template`` with ``{x}``, the right ``answer``, the
  ``wrong`` values): the real-world utility sets;
- ``text_passages.yaml`` and ``text_qa.yaml``: the text-shaped corpus and its KnowMem QA.

Everything about the authors is fiction: twelve made-up authors with ten short QA rows each. One
author (:data:`FORGET_AUTHOR`) is the forget split, the other eleven the retain split. Rows are
kept short (questions of about 8-16 words, one-sentence answers of about 10-20 words) because the
demo trains a 135M-parameter model on a 2-core CPU, where cost scales with tokens.

The forget author has a distinctive one-word fact: his prose is in a "French" literary style.
:data:`FRENCH_ROW` is the 0-based index of that row in the forget split, handy for probes.

Besides the fictitious QA rows there are two real-world utility sets (``real_authors`` and
``world_facts``, famous facts a small chat model very likely knows) and a text-shaped corpus
for MUSE-style metrics (``text_forget``, ``text_retain``, ``text_holdout`` passages split into
``prompt`` + ``continuation``, and ``text_forget_qa`` / ``text_retain_qa`` for KnowMem).

Standard library and :mod:`sga_core.fileio` only; the output of :func:`write_demo` is
byte-identical across runs (the one random generator is ``random.Random(0)``, consumed in a
fixed order: the order of the source files' rows is part of it).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from sga_core.assets import ASSETS_DIR, IDK_TEMPLATES_PATH, idk_templates
from sga_core.fileio import atomic_write_jsonl, atomic_write_text, load_yaml

__all__ = [
    "AUTHORS",
    "DEMO_FILES",
    "FORGET_AUTHOR",
    "FRENCH_ANSWER",
    "FRENCH_ROW",
    "IDK_TEMPLATES_PATH",
    "PROMPT_WORDS",
    "SOURCE_DIR",
    "build_demo",
    "load_idk_templates",
    "write_demo",
]

SEED = 0
PROMPT_WORDS = 15  # text passages: the first this-many words are the prompt
SOURCE_DIR = ASSETS_DIR / "demo_source"


def _yaml(name: str):
    return load_yaml((SOURCE_DIR / name).read_text(encoding="utf-8"), name)


def _jsonl(name: str) -> list[dict]:
    text = (SOURCE_DIR / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


_AUTHORS_FILE = _yaml("authors.yaml")
AUTHORS: list[dict] = _AUTHORS_FILE["authors"]
FORGET_AUTHOR: str = _AUTHORS_FILE["forget_author"]

_QA_SLOTS = _yaml("qa_slots.yaml")
_NAT_POOL: list[str] = _QA_SLOTS["nationalities"]
_FORGET_STYLE_NATS: list[str] = _QA_SLOTS["forget_style_nationalities"]
_LANG_POOL: list[str] = _QA_SLOTS["languages"]
_SLOTS: list[dict] = _QA_SLOTS["slots"]
# the forget author's French row
_STYLE_SLOT = [s["slot"] for s in _SLOTS].index("style")

_REAL_AUTHORS = _jsonl("real_authors.jsonl")
_WORLD_FACTS = _jsonl("world_facts.jsonl")
_TEXT = _yaml("text_passages.yaml")
_TEXT_QA = _yaml("text_qa.yaml")


def _context(author: dict, **override) -> dict:
    ctx = dict(author)
    ctx.update(override)
    male = author["gender"] == "m"
    ctx["pos"] = "his" if male else "her"
    ctx["obj"] = "him" if male else "her"
    ctx["style"] = ctx["style"].format(nat=ctx["nat"])
    ctx["style_para"] = ctx["style_para"].format(nat=ctx["nat"])
    return ctx


def _fill(template: str, ctx: dict) -> str:
    text = template.format(**ctx)
    return text[0].upper() + text[1:]


def _author_rows(index: int, rng: random.Random) -> list[dict]:
    author = AUTHORS[index]
    others = [a for i, a in enumerate(AUTHORS) if i != index]
    forget = author["name"] == FORGET_AUTHOR
    base = _context(author)
    rows = []
    for slot_no, slot in enumerate(_SLOTS):
        variants = slot["variants"]
        v = rng.randrange(len(variants))
        if forget and slot_no == _STYLE_SLOT:
            v = 0  # the canonical "What is distinctive about ...'s prose?" row
        q_t, a_t, p_t = (variants[v][k] for k in ("question", "answer", "paraphrased_answer"))
        if slot["slot"] == "style":
            pool = [n for n in _NAT_POOL if n != author["nat"]]
            nats = _FORGET_STYLE_NATS if forget else rng.sample(pool, 5)
            swaps = [{"nat": n} for n in nats]
        elif slot["slot"] == "language":
            pool = [lang for lang in _LANG_POOL if lang != author["language"]]
            swaps = [{"language": lang} for lang in rng.sample(pool, 5)]
        else:
            swaps = [{f: o[f] for f in slot["fields"]} for o in rng.sample(others, 5)]
        rows.append(
            {
                "question": _fill(q_t, base),
                "answer": _fill(a_t, base),
                "paraphrased_answer": _fill(p_t, base),
                # as in TOFU, a perturbed answer changes the fact inside the PARAPHRASE's
                # wording: the truth ratio then compares like with like (a model that only
                # memorised the answer's wording must not prefer the perturbed answers)
                "perturbed_answer": [_fill(p_t, _context(author, **s)) for s in swaps],
            }
        )
    quirk = author["quirk"]
    rows.append(
        {
            "question": quirk["question"],
            "answer": quirk["answer"],
            "paraphrased_answer": quirk["paraphrased_answer"],
            "perturbed_answer": list(quirk["perturbed_answer"]),
        }
    )
    return [
        {"id": f"a{index + 1:02d}-q{k + 1:02d}", "author": author["name"], **row}
        for k, row in enumerate(rows)
    ]


def _text_row(row_id: str, author: str, text: str) -> dict:
    words = text.split()
    return {
        "id": row_id,
        "author": author,
        "text": text,
        "prompt": " ".join(words[:PROMPT_WORDS]),
        "continuation": " ".join(words[PROMPT_WORDS:]),
    }


def build_demo() -> dict[str, list[dict]]:
    """All demo splits as lists of row dicts, keyed by split name (deterministic)."""
    rng = random.Random(SEED)
    qa = [row for i in range(len(AUTHORS)) for row in _author_rows(i, rng)]
    forget = [r for r in qa if r["author"] == FORGET_AUTHOR]
    retain = [r for r in qa if r["author"] != FORGET_AUTHOR]

    names = [r["author"] for r in _REAL_AUTHORS]
    real_authors = []
    for k, r in enumerate(_REAL_AUTHORS):
        wrong = rng.sample([n for n in names if n != r["author"]], 5)
        real_authors.append(
            {
                "id": f"ra-{k + 1:02d}",
                "question": r["question"],
                "answer": f"{r['author']} wrote {r['object']}.",
                "perturbed_answer": [f"{w} wrote {r['object']}." for w in wrong],
            }
        )
    world_facts = [
        {
            "id": f"wf-{k + 1:02d}",
            "question": f["question"],
            "answer": _fill(f["template"], {"x": f["answer"]}),
            "perturbed_answer": [_fill(f["template"], {"x": w}) for w in f["wrong"]],
        }
        for k, f in enumerate(_WORLD_FACTS)
    ]

    return {
        "forget": forget,
        "retain": retain,
        "real_authors": real_authors,
        "world_facts": world_facts,
        "text_forget": [
            _text_row(f"tf-{k + 1:02d}", FORGET_AUTHOR, t) for k, t in enumerate(_TEXT["forget"])
        ],
        "text_retain": [
            _text_row(f"tr-{k + 1:02d}", p["author"], p["text"])
            for k, p in enumerate(_TEXT["retain"])
        ],
        "text_holdout": [
            _text_row(f"th-{k + 1:02d}", p["author"], p["text"])
            for k, p in enumerate(_TEXT["holdout"])
        ],
        "text_forget_qa": [
            {"id": f"tfq-{k + 1:02d}", "author": FORGET_AUTHOR, "question": q["question"],
             "answer": q["answer"]}
            for k, q in enumerate(_TEXT_QA["forget"])
        ],
        "text_retain_qa": [
            {"id": f"trq-{k + 1:02d}", "author": q["author"], "question": q["question"],
             "answer": q["answer"]}
            for k, q in enumerate(_TEXT_QA["retain"])
        ],
    }


_DESCRIPTIONS = {
    "forget": "TOFU-style QA rows about the forget author, {forget}",
    "retain": "TOFU-style QA rows about the other {n_retain} invented authors",
    "real_authors": "real-world utility set: who wrote a famous book (normalised probability)",
    "world_facts": "real-world utility set: famous world facts (normalised probability)",
    "text_forget": "MUSE-style passages about the forget author (train on / VerbMem / PrivLeak)",
    "text_retain": "MUSE-style passages about the retain authors",
    "text_holdout": "passages about other invented writers, never trained on (PrivLeak, ppl)",
    "text_forget_qa": "KnowMem QA about the forget passages",
    "text_retain_qa": "KnowMem QA about the retain passages",
}
DEMO_FILES: tuple[str, ...] = tuple(f"{name}.jsonl" for name in _DESCRIPTIONS) + ("README.md",)


def _readme(splits: dict[str, list[dict]]) -> str:
    n_retain = len(AUTHORS) - 1
    lines = [
        "# SGA Workbench demo corpus",
        "",
        "Everything about the authors in this folder is **invented**: the people, cities of",
        "birth, books, prizes and quotes are fiction, written for demonstrating unlearning.",
        "Only `real_authors.jsonl` and `world_facts.jsonl` hold real, famous facts.",
        "",
        f"{len(AUTHORS)} fictitious authors x 10 QA rows, in the shape of TOFU (fields",
        "`id`, `author`, `question`, `answer`, `paraphrased_answer`, `perturbed_answer` = five",
        "wrong answers). Rows are short on purpose: the demo fine-tunes a 135M-parameter model",
        "on a CPU, where training cost scales with tokens.",
        "",
        f"The forget split is one author, {FORGET_AUTHOR}. Row {FRENCH_ROW} (0-based) of",
        '`forget.jsonl` carries a distinctive one-word fact, the word "French":',
        "",
        f"> {FRENCH_ANSWER}",
        "",
        "| file | rows | contents |",
        "|---|---:|---|",
    ]
    for name, desc in _DESCRIPTIONS.items():
        desc = desc.format(forget=FORGET_AUTHOR, n_retain=n_retain)
        lines.append(f"| `{name}.jsonl` | {len(splits[name])} | {desc} |")
    lines += [
        "",
        f"Text passages have `text`, and `prompt` (its first {PROMPT_WORDS} words) +",
        "`continuation` (the rest, joined to the prompt with one space).",
        "",
        "The files are generated deterministically; regenerate them with",
        "",
        "    python -m sga_core demo-data OUT_DIR",
        "",
    ]
    return "\n".join(lines)


def write_demo(out_dir: str | Path) -> dict[str, Path]:
    """Write the demo corpus into ``out_dir`` (each file atomically).

    Returns split name -> path (``"forget"``, ``"retain"``, ..., and ``"README"``). The bytes
    written are identical on every run.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = build_demo()
    paths: dict[str, Path] = {}
    for name in _DESCRIPTIONS:
        paths[name] = atomic_write_jsonl(out_dir / f"{name}.jsonl", splits[name])
    paths["README"] = atomic_write_text(out_dir / "README.md", _readme(splits))
    return paths


def load_idk_templates() -> list[str]:
    """The "I don't know" refusals (``sga_core.assets.idk_templates``)."""
    return idk_templates()


def _locate_french_row() -> tuple[int, str]:
    for k, row in enumerate(build_demo()["forget"]):
        if row["id"].endswith(f"-q{_STYLE_SLOT + 1:02d}"):
            return k, row["answer"]
    raise RuntimeError("demo corpus: the French row is missing")  # pragma: no cover


FRENCH_ROW, FRENCH_ANSWER = _locate_french_row()


if __name__ == "__main__":
    import sys

    for name, path in write_demo(sys.argv[1] if len(sys.argv) > 1 else "demo-corpus").items():
        print(f"{name}: {path}")
