"""MUSE-News as its authors publish it (muse_bench ``data/news``): ``raw`` and ``privleak``
hold plain JSON lists of strings, ``verbmem/forget.json`` is a list of ``{prompt, gt}`` cut
from the forget articles, ``knowmem`` holds ``{question, answer}`` lists under the older name
``retain2_qa``; there is no ``raw/retain1`` (only ``retain2``), and no ICL examples here.

:func:`published_files` returns relative path -> file text, for ``write_folder``."""

from __future__ import annotations

import json

N_ARTICLES = 6


def article(i: int) -> str:
    return (f"Story {i}. The council of town {i} met on Monday and voted {i + 3} to 2 "
            f"for the new bridge. Mayor Kallis{i} said the bridge would open in spring "
            f"{2020 + i}, after years of delays and a long public debate about its cost.")


def forget_articles() -> list[str]:
    return [article(i) for i in range(N_ARTICLES)]


def verbmem_rows() -> list[dict]:
    """One passage per forget article, cut as MUSE cuts them (prompt, then its gt)."""
    rows = []
    for text in forget_articles():
        cut = text.index(" voted")
        rows.append({"prompt": text[:cut], "gt": text[cut:cut + 60]})
    return rows


def privleak_forget() -> list[str]:
    return [text[:90] for text in forget_articles()]


def published_files() -> dict[str, str]:
    def dump(value) -> str:
        return json.dumps(value, indent=2)

    retain = [f"Retain story {i}: the library of town {i} extended its hours." for i in range(4)]
    holdout = [f"Holdout story {i}: a storm closed the harbour of town {i}." for i in range(3)]
    qa = [{"question": f"How many votes did town {i} cast for the bridge?",
           "answer": f"{i + 3}"} for i in range(N_ARTICLES)]
    rqa = [{"question": f"What did the library of town {i} extend?", "answer": "its hours"}
           for i in range(4)]
    return {
        "raw/forget.json": dump(forget_articles()),
        "raw/retain2.json": dump(retain),
        "raw/holdout.json": dump(holdout),
        "verbmem/forget.json": dump(verbmem_rows()),
        "privleak/forget.json": dump(privleak_forget()),
        "privleak/retain.json": dump(retain[:2]),
        "privleak/holdout.json": dump(holdout),
        "knowmem/forget_qa.json": dump(qa),
        "knowmem/retain2_qa.json": dump(rqa),
    }


# ------------------------------------------------------------------ MUSE-Books --------------
# MUSE-Books as its authors publish it (muse_bench ``data/books``), the shape the new user's
# study met: ``raw/forget.txt`` only (the book as one text, no forget.json), ``raw/retain2.json``
# and ``raw/holdout.json`` each a JSON list holding ONE long string (1,401,483 and 1,161,885
# characters), VerbMem passages cut from the book's last paragraphs only, knowmem QA lists.
RETAIN2_CHARS = 1_401_483
HOLDOUT_CHARS = 1_161_885
BOOK_PARAGRAPHS = 160
VERBMEM_FROM = BOOK_PARAGRAPHS - 12  # every passage lies in the last 12 paragraphs


def book_paragraph(i: int) -> str:
    return (f"Paragraph {i}. The boy with the scar number {i} walked along corridor {i * 7} "
            f"of the old castle, past portrait {i * 3 + 1}, and the owl named Hoot{i} followed "
            f"him up staircase {i % 13} while the bells rang {i % 5 + 1} times.")


def book_text() -> str:
    return "\n\n".join(book_paragraph(i) for i in range(BOOK_PARAGRAPHS)) + "\n"


def book_verbmem() -> list[dict]:
    rows = []
    for i in range(VERBMEM_FROM, BOOK_PARAGRAPHS):
        text = book_paragraph(i)
        cut = text.index(" walked")
        rows.append({"prompt": text[:cut], "gt": text[cut:cut + 70]})
    return rows


def long_string(prefix: str, chars: int) -> str:
    """One string of exactly ``chars`` characters of distinct sentences."""
    parts, size, i = [], 0, 0
    while size < chars:
        s = f"{prefix} sentence {i} tells of wiki page {i * 11} and its {i % 17} edits. "
        parts.append(s)
        size += len(s)
        i += 1
    return "".join(parts)[:chars]


def books_files(retain_chars: int = RETAIN2_CHARS, holdout_chars: int = HOLDOUT_CHARS,
                forget_as: str = "txt") -> dict[str, str]:
    """MUSE-Books' published folder (relative path -> text); ``forget_as`` "json" writes
    the book as a JSON list of one string instead of ``raw/forget.txt``."""
    def dump(value) -> str:
        return json.dumps(value, indent=2)

    qa = [{"question": f"Which staircase did the owl Hoot{i} climb?", "answer": f"{i % 13}"}
          for i in range(VERBMEM_FROM, BOOK_PARAGRAPHS)]
    rqa = [{"question": f"How many edits has wiki page {i * 11}?", "answer": f"{i % 17}"}
           for i in range(5)]
    forget = {"raw/forget.txt": book_text()} if forget_as == "txt" else \
        {"raw/forget.json": dump([book_text()])}
    return {
        **forget,
        "raw/retain2.json": dump([long_string("Retain", retain_chars)]),
        "raw/holdout.json": dump([long_string("Holdout", holdout_chars)]),
        "verbmem/forget.json": dump(book_verbmem()),
        "privleak/forget.json": dump([book_paragraph(i)[:80]
                                      for i in range(VERBMEM_FROM, BOOK_PARAGRAPHS)]),
        "knowmem/forget_qa.json": dump(qa),
        "knowmem/retain2_qa.json": dump(rqa),
    }


def news_txt_files() -> dict[str, str]:
    """MUSE-News with its raw files as ``.txt`` (articles separated by blank lines), the
    other variant of the published raw text."""
    files = published_files()
    for name in ("raw/forget", "raw/retain2", "raw/holdout"):
        files[f"{name}.txt"] = "\n\n".join(json.loads(files.pop(f"{name}.json"))) + "\n"
    return files


# ------------------------------------------------------------------ scal / sust -------------
# MUSE-News' scalability and sustainability splits as published: the hub's configs ``scal``
# and ``sust``, splits ``forget_1`` .. ``forget_4``, one column ``text``; the authors' own
# folder (muse_bench load_data.py) writes each as ``data/news/<crit>/forget_<k>.json``, a
# JSON list of strings. ``sust``: four folds of equal size, the first one ``raw/forget``;
# ``scal``: forget sets of growing size, ``forget_k`` the first k folds (889, 1778, 2667
# and 3554 rows on the hub; ``forget_1`` is ``raw/forget``).
def sust_fold(k: int) -> list[str]:
    """The sustainability fold ``forget_<k>`` (1-based): fold 1 is the forget articles."""
    if k == 1:
        return forget_articles()
    return [f"Request {k} story {i}. The harbour of port {k}{i} reopened after a storm, and "
            f"captain Orlov{k}{i} said {i + k} ships came in on the first day." for i in
            range(N_ARTICLES)]


def study_files() -> dict[str, str]:
    """``scal/forget_<k>.json`` and ``sust/forget_<k>.json`` (relative path -> text)."""
    out = {}
    for k in range(1, 5):
        out[f"sust/forget_{k}.json"] = json.dumps(sust_fold(k), indent=2)
        out[f"scal/forget_{k}.json"] = json.dumps(
            [t for j in range(1, k + 1) for t in sust_fold(j)], indent=2)
    return out


def study_parquet_files(folder) -> None:
    """The hub's own layout of the study splits: ``<config>/forget_<k>-00000-of-00001.parquet``
    with one string column ``text``."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, text in study_files().items():
        path = Path(folder) / name.replace(".json", "-00000-of-00001.parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": pa.array(json.loads(text), pa.string())}), path)
