"""The normal-answer table (docs/spec.md#33-normal-answers): one row per (forget row, k) with the
answer text, its source (retrieval, openai, local, idk, manual), a similarity score and edit
marks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sga_core.data.checks import check_text
from sga_core.data.errors import DataError, short
from sga_core.data.errors import type_name as _type_name
from sga_core.data.formats import PathLike, read_raw
from sga_core.data.limits import MAX_K, MAX_ROWS
from sga_core.fileio import atomic_write_jsonl, now_iso


class _NormalSources(Sequence):
    """The sources a normal answer may name: every registered normals backend
    (:mod:`sga_core.normals.registry`), then ``manual`` (an answer written by hand). Read from
    the registry when used, so a backend registered later counts too."""

    def _names(self) -> tuple[str, ...]:
        from sga_core.normals.registry import backend_names

        return (*backend_names(), "manual")

    def __getitem__(self, index):
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())


NORMAL_SOURCES = _NormalSources()


def _as_int(value: Any, key: str, lo: int, hi: int, bound: str, file: str | None,
            row: int | None) -> int:
    """An integer ``lo..hi`` from a number or a numeric string; ``bound`` says why ``hi``."""
    if value is None:
        raise DataError("missing required field", file, row, key)
    result: int | None = None
    if isinstance(value, bool):
        result = None
    elif isinstance(value, int):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str):
        try:
            f = float(value.strip())  # a string of 5,000 digits is inf here
            result = int(f) if f.is_integer() else hi + 1 if f == math.inf else None
        except ValueError:
            result = None
    elif value == math.inf:
        result = hi + 1
    if result is None:
        raise DataError(f"expected an integer, got {short(value)}", file, row, key)
    if result < lo:
        raise DataError(f"must be >= {lo}, got {short(result)}", file, row, key)
    if result > hi:
        raise DataError(f"must be at most {hi:,} ({bound}), got {short(value)}", file, row,
                        key)
    return result


def _as_score(value: Any, file: str | None, row: int | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise DataError("expected a number or null, got boolean", file, row, "score")
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str):
        if not value.strip():
            return None
        try:
            result = float(value)
        except ValueError:
            raise DataError(f"expected a number, got {short(value)}", file, row,
                            "score") from None
    else:
        raise DataError(f"expected a number, got {_type_name(value)}", file, row, "score")
    if math.isinf(result):
        raise DataError(f"expected a finite number, got {result}", file, row, "score")
    return None if math.isnan(result) else result


_TRUE = ("true", "1", "yes", "y", "t")
_FALSE = ("false", "0", "no", "n", "f", "")


def _as_bool(value: Any, file: str | None, row: int | None) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise DataError(f"expected true or false, got {short(value)}", file, row, "edited")


@dataclass
class NormalAnswer:
    """One normal answer: slot ``k`` (1..K-1) for forget row ``forget_index``."""

    forget_index: int
    k: int
    text: str
    source: str
    score: float | None = None
    edited: bool = False
    updated_at: str = field(default_factory=now_iso)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(
        cls, d: dict[str, Any], file: str | None = None, row: int | None = None
    ) -> NormalAnswer:
        """Validate and convert a record (CSV strings are accepted for numbers/booleans).

        A missing ``text`` reads as "" (an empty CSV cell); :meth:`NormalTable.problems`
        reports it.
        """
        if not isinstance(d, dict):
            raise DataError(f"expected an object (record), got {_type_name(d)}", file, row)
        text = d.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise DataError(f"expected a string, got {_type_name(text)}", file, row, "text")
        check_text(text, file, row, "text")
        source = d.get("source")
        if source is None:
            raise DataError("missing required field", file, row, "source")
        if not isinstance(source, str) or source.strip().lower() not in NORMAL_SOURCES:
            raise DataError(f"must be one of {', '.join(NORMAL_SOURCES)}, got {short(source)}",
                            file, row, "source")
        updated_at = d.get("updated_at")
        if updated_at is None or updated_at == "":
            updated_at = now_iso()
        elif hasattr(updated_at, "isoformat") and not isinstance(updated_at, str):
            updated_at = updated_at.isoformat()
        elif not isinstance(updated_at, str):
            raise DataError(
                f"expected a string, got {_type_name(updated_at)}", file, row, "updated_at"
            )
        else:
            check_text(updated_at, file, row, "updated_at")
        return cls(
            forget_index=_as_int(d.get("forget_index"), "forget_index", 0, MAX_ROWS - 1,
                                 f"a forget set has at most {MAX_ROWS:,} rows", file, row),
            k=_as_int(d.get("k"), "k", 1, MAX_K - 1, f"K is at most {MAX_K}", file, row),
            text=text,
            source=source.strip().lower(),
            score=_as_score(d.get("score"), file, row),
            edited=_as_bool(d.get("edited"), file, row),
            updated_at=updated_at,
        )


class NormalTable:
    """The K-1 normal answers of every forget row, keyed by ``(forget_index, k)``.

    ``k`` is K, the number of answer slots per forget row including the forget answer.
    """

    def __init__(self, answers: Iterable[NormalAnswer], k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"K must be an integer >= 1, got {short(k)}")
        if k > MAX_K:
            raise DataError(f"K={k:,} is above the maximum K={MAX_K}", field="k")
        self.k = k
        self._by_key: dict[tuple[int, int], NormalAnswer] = {}
        for ans in answers:
            self._check_slot(ans.forget_index, ans.k)
            key = (ans.forget_index, ans.k)
            if key in self._by_key:
                raise DataError(f"duplicate normal answer for forget_index={key[0]}, k={key[1]}")
            self._by_key[key] = ans

    def _check_slot(
        self, forget_index: int, k: int, file: str | None = None, row: int | None = None,
        num_forget: int | None = None,
    ) -> None:
        if isinstance(forget_index, bool) or not isinstance(forget_index, int) or forget_index < 0:
            raise DataError(
                f"must be an integer >= 0, got {short(forget_index)}", file, row, "forget_index"
            )
        if num_forget is not None and forget_index >= num_forget:
            raise DataError(f"forget row {forget_index} does not exist: the forget set has "
                            f"{num_forget} rows (0..{num_forget - 1})", file, row, "forget_index")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.k - 1:
            raise DataError(f"k={short(k)} is outside 1..{self.k - 1} (K={self.k}; K is at "
                            f"most {MAX_K})", file, row, "k")

    @property
    def answers(self) -> list[NormalAnswer]:
        """All answers sorted by forget_index, then k (a new list)."""
        return [self._by_key[key] for key in sorted(self._by_key)]

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    @classmethod
    def load(cls, path: PathLike, k: int | None = None,
             num_forget: int | None = None) -> NormalTable:
        """Load a table from JSONL/JSON/CSV/parquet; K defaults to the largest k + 1 (at most
        ``MAX_K``). With ``num_forget`` (the forget set's size), every ``forget_index`` must
        name one of its rows. Each problem is a DataError naming the file, row and field.

        An empty file gives an empty table when ``k`` is given.
        """
        raw = read_raw(path, allow_empty=k is not None)
        first = raw.records[0] if raw.records else None
        if isinstance(first, dict) and not {"forget_index", "k"} & set(first):
            # not one field of a normal answer: another kind of file, said as such
            looks = (" (it has question and answer fields: a forget or retain file? Those "
                     "go in on the Data page)" if {"question", "answer"} <= set(first) else
                     " (it has a text field: a text data file? Those go in on the Data "
                     "page)" if "text" in first or "prompt" in first else "")
            raise DataError("is not a normal-answers table: each row needs forget_index, k, "
                            f"text and source; its first row has "
                            f"{', '.join(map(str, list(first)[:6])) or 'no fields'}{looks}",
                            raw.file, raw.rows[0] if raw.rows else None)
        loaded: list[tuple[NormalAnswer, int]] = []
        first_row: dict[tuple[int, int], int] = {}
        for rec, row in zip(raw.records, raw.rows):
            ans = NormalAnswer.from_dict(rec, raw.file, row)
            key = (ans.forget_index, ans.k)
            if key in first_row:
                raise DataError(
                    f"duplicate normal answer for forget_index={key[0]}, k={key[1]} "
                    f"(first in row {first_row[key]})",
                    raw.file,
                    row,
                )
            first_row[key] = row
            loaded.append((ans, row))
        if k is None:
            k = max(ans.k for ans, _ in loaded) + 1
        try:
            table = cls([], k)
        except DataError as exc:
            raise exc.with_file(raw.file) from None
        for ans, row in loaded:
            table._check_slot(ans.forget_index, ans.k, raw.file, row, num_forget)
            table._by_key[(ans.forget_index, ans.k)] = ans
        return table

    def save(self, path: PathLike) -> Path:
        """Write the table atomically as JSON Lines, sorted by forget_index then k."""
        return atomic_write_jsonl(path, self.to_rows())

    def to_rows(self) -> list[dict[str, Any]]:
        return [a.to_dict() for a in self.answers]

    def content_rows(self) -> list[dict[str, Any]]:
        """The rows with only what training reads (forget_index, k, text): a table written
        again with the same answers (a new ``updated_at``, another source) is the same data."""
        return [{"forget_index": a.forget_index, "k": a.k, "text": a.text}
                for a in self.answers]

    def get(self, forget_index: int, k: int) -> NormalAnswer | None:
        return self._by_key.get((forget_index, k))

    def texts_for(self, forget_index: int) -> list[str]:
        """The texts of the normal answers of one forget row, ordered by k."""
        return [
            self._by_key[(forget_index, k)].text
            for k in range(1, self.k)
            if (forget_index, k) in self._by_key
        ]

    def set(
        self,
        forget_index: int,
        k: int,
        text: str,
        source: str = "manual",
        score: float | None = None,
    ) -> NormalAnswer:
        """Insert or replace one answer.

        Replacing a different text marks the answer ``edited`` and refreshes ``updated_at``;
        setting the same text again changes nothing.
        """
        self._check_slot(forget_index, k)
        if not isinstance(text, str):
            raise DataError(f"expected a string, got {_type_name(text)}", field="text")
        check_text(text, None, None, "text")
        if source not in NORMAL_SOURCES:
            raise DataError(
                f"must be one of {', '.join(NORMAL_SOURCES)}, got {source!r}", field="source"
            )
        old = self._by_key.get((forget_index, k))
        if old is not None and old.text == text:
            return old
        ans = NormalAnswer(
            forget_index=forget_index,
            k=k,
            text=text,
            source=source,
            score=_as_score(score, None, None),
            edited=old is not None,
        )
        self._by_key[(forget_index, k)] = ans
        return ans

    def remove(self, forget_index: int, k: int) -> bool:
        """Remove one answer; False when there was none."""
        return self._by_key.pop((forget_index, k), None) is not None

    def _problems(self, num_forget: int) -> Iterator[str]:
        for i in range(num_forget):
            for k in range(1, self.k):
                ans = self._by_key.get((i, k))
                if ans is None:
                    yield f"forget row {i}: normal answer k={k} is missing"
                elif not ans.text.strip():
                    yield f"forget row {i}: normal answer k={k} is empty"
        for i, k in sorted(self._by_key):
            if i >= num_forget:
                yield (f"forget row {i}: normal answer k={k} is out of range "
                       f"(the forget set has {num_forget} rows)")

    def count_problems(self, num_forget: int) -> int:
        """How many :meth:`problems` there are, counted without listing them."""
        present = [key for key in self._by_key if key[0] < num_forget]
        empty = sum(1 for key in present if not self._by_key[key].text.strip())
        missing = num_forget * (self.k - 1) - len(present)
        return missing + empty + len(self._by_key) - len(present)

    def problems(self, num_forget: int, limit: int = 1000) -> list[str]:
        """Human-readable problems (missing or empty answers, rows out of range): the first
        ``limit``, then one line counting the rest, so a huge table never builds a huge list."""
        out = list(itertools.islice(self._problems(num_forget), limit))
        if len(out) == limit:
            more = self.count_problems(num_forget) - limit
            if more > 0:
                out.append(f"... and {more:,} more problems")
        return out

    def is_complete(self, num_forget: int) -> bool:
        return self.count_problems(num_forget) == 0
