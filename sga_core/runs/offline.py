"""The environment every process of the workbench runs with: no hub downloads, quiet
tokenizers. (Network is only ever used for an API the user points at.)"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}


def set_offline_defaults(environ=None) -> dict:
    """Set the offline defaults in ``environ`` (default ``os.environ``) unless already set."""
    environ = os.environ if environ is None else environ
    for key, value in OFFLINE_ENV.items():
        environ.setdefault(key, value)
    return environ
