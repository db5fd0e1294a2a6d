"""Waiting on a condition with a deadline: the one wait of the tests (they never sleep a fixed
time)."""

from __future__ import annotations

import time


def wait_for(pred, timeout: float, what, interval: float = 0.25, proc=None,
             sleep=time.sleep):
    """Poll ``pred`` until it returns something true, and return that; TimeoutError naming
    ``what`` after ``timeout`` seconds.

    - ``what``: the words for the error, or a function that gives them when the wait fails
      (to say what was seen by then).
    - ``proc``: the process (``subprocess.Popen``) that is to bring the condition about; once
      it has exited without it, AssertionError at once, with its exit code.
    - ``sleep``: how to wait ``interval`` seconds between polls (a Playwright page's
      ``wait_for_timeout``, in seconds, keeps the page's events flowing)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            value = pred()  # what the process did just before it exited
            if value:
                return value
            raise AssertionError(f"the process exited (code {proc.returncode}) before "
                                 f"{_words(what)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {_words(what)}")
        sleep(interval)


def _words(what) -> str:
    return what() if callable(what) else str(what)
