"""The run ids of a project's two prepared models (``prepare``): the original and the retain
reference; and of the evaluations of its two published models, when it names them
(:mod:`sga_core.projects.published_eval`). Every name a project may have
(:data:`sga_core.projects.listing.NAME_RE`: up to 64 characters, ``_`` allowed) gets a valid
run id (no ``_``, at most 64 characters), and no two (name, role) pairs share one.

A name whose plain id ``<name>-<role>`` is already a valid run id keeps it (so run folders
prepared before keep their ids). Any other name (with ``_``, or too long for its role) gets
``<name, '_' as '-', cut>-<role>-<10 hex digits of a hash of the name and role>``: its last
part is hexadecimal, never a role, so it never equals a plain id, and the hash tells apart
names that read the same once ``_`` is spelled ``-`` (``a_b`` and ``a-b``).
"""

from __future__ import annotations

import hashlib

from sga_core.config import valid_run_id
from sga_core.params import ConfigError

ORIGINAL = "original"
RETAIN_REF = "retain-ref"
PUBLISHED_ORIGINAL = "published-original"
PUBLISHED_RETAINED = "published-retained"
ROLES = (ORIGINAL, RETAIN_REF, PUBLISHED_ORIGINAL, PUBLISHED_RETAINED)
HASH_LEN = 10
MAX_ID = 64


def prepared_run_id(name: str, role: str) -> str:
    """The run id of project ``name``'s prepared model ``role`` (:data:`ROLES`)."""
    from sga_core.projects.listing import NAME_RE

    if role not in ROLES:
        raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ConfigError(f"name {str(name)[:80]!r}: use 1-64 lower-case letters, digits, '-' "
                          "or '_', starting with a letter or digit")
    plain = f"{name}-{role}"
    if valid_run_id(plain):
        return plain
    digest = hashlib.sha256(f"{role}\0{name}".encode()).hexdigest()[:HASH_LEN]
    room = MAX_ID - len(role) - HASH_LEN - 2
    stem = name.replace("_", "-")[:room].rstrip("-")
    return f"{stem}-{role}-{digest}"


def original_id(name: str) -> str:
    return prepared_run_id(name, ORIGINAL)


def reference_id(name: str) -> str:
    return prepared_run_id(name, RETAIN_REF)
