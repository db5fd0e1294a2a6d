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
