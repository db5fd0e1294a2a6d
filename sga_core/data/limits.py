"""Bounds on everything a data file can set, in one place. Each is checked before anything is
allocated from the value (a normal-answer row with ``"k": 1000000000`` once made the server
build billions of strings), and a violation is a :class:`~sga_core.data.DataError` that says
the bound."""

from __future__ import annotations

#: Largest file the loaders read (the browser's upload limit is lower: 50 MB).
MAX_FILE_BYTES = 256 * 2**20
#: Largest size of a parquet file's rows once decoded (compressed pages can hide a lot).
MAX_DECODED_BYTES = 1024 * 2**20
#: Records in one data file (forget, retain, evaluation set, normal-answer table).
MAX_ROWS = 1_000_000
#: Characters in one string value (a question, an answer, a whole text passage).
MAX_STRING_CHARS = 1_000_000
#: Levels of lists and objects in one record (a record itself is level 1).
MAX_DEPTH = 32
#: K, the label slots per forget row (the forget answer + K-1 normal answers); the same bound
#: as SGA's own ``k`` setting (``sga_core.methods.sga.SGAConfig``).
MAX_K = 64


def describe() -> str:
    """The limits in one line, for help texts."""
    return (f"files up to {MAX_FILE_BYTES // 2**20} MiB, {MAX_ROWS:,} rows, strings of "
            f"{MAX_STRING_CHARS:,} characters, {MAX_DEPTH} levels of nesting, K up to {MAX_K}")
