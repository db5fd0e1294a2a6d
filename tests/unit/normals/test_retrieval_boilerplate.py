"""A header the retain corpus repeats above its passages (MUSE-Books' wiki text: every
article opens with the same lines) is neither matched nor lent as a normal answer
(all 18 retrieved normals for a book once began with the same header)."""

from __future__ import annotations

from sga_core.normals.retrieval import (
    boilerplate_openings,
    retrieval_normals,
    strip_boilerplate,
)

HEADER = "Harry Potter Wiki | Fandom\nSign in to edit this page.\n"
TOPICS = ["the castle's moving staircases", "a broomstick race over the lake",
          "the owl post arriving at breakfast", "a potion that turned hair blue",
          "the greenhouse full of biting plants", "a chess game with living pieces",
          "the library's restricted section at night", "a feast in the great hall"]


def retain_rows() -> list[dict]:
    return [{"text": f"{HEADER}This article is about {t}. Students talked about {t} for "
                     f"weeks, and the story of {t} was told again every year."}
            for t in TOPICS]


def test_the_repeated_header_is_found_and_stripped():
    texts = [r["text"] for r in retain_rows()]
    found = boilerplate_openings(texts)
    assert found and all("this article" not in o for o in found)
    for t in texts:
        assert strip_boilerplate(t, found).startswith("This article is about")
    # a text without the header keeps every word
    assert strip_boilerplate("Sign in later. Then go.", found) == "Sign in later. Then go."


def test_no_normal_answer_starts_with_the_header():
    forget = [{"text": f"The school remembered {t} long after the term had ended, and the "
                       f"teachers still spoke of {t}."} for t in TOPICS[:6]]
    result = retrieval_normals(forget, retain_rows(), "text", 4)
    texts = [a.text for a in result.table.answers if a.source == "retrieval"]
    assert len(texts) == 18
    assert not [t for t in texts if "Fandom" in t or "Sign in" in t], texts[:3]
    assert len({t[:40] for t in texts}) > 1


def test_openings_shared_by_few_rows_are_content():
    texts = [f"Chapter one. Line {i} goes on." for i in range(2)] + \
            [f"Other {i}. More text here." for i in range(10)]
    assert boilerplate_openings(texts) == set()
