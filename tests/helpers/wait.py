"""Waiting on a condition with a deadline (tests never sleep a fixed time)."""

from __future__ import annotations

import time


def wait_for(pred, timeout: float, what: str, interval: float = 0.25):
    """Poll ``pred`` until it returns something true; TimeoutError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
