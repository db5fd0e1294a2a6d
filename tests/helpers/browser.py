"""Real-browser helpers: Debian's headless Chromium driven by Playwright, against the app
started on a free loopback port. Never a downloaded browser build."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
#: how long an action or an expect() waits for its element or condition
ACTION_TIMEOUT_MS = 30_000
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-dev-shm-usage"]


def browser_available() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).exists()


needs_browser = pytest.mark.skipif(
    not browser_available() and not os.environ.get("CI"),
    reason="Debian chromium is not installed (make test installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Ports tried before giving up, when another process took the free port first (another
#: pytest-xdist worker or another test session starts its servers on this machine too).
PORT_TRIES = 3


def _serving(proc: subprocess.Popen, url: str, log: Path):
    """Whether the server ``proc`` answers at ``url``: "exited" once it has stopped, True
    once the health check answers and its log says it serves there (an answer alone may
    come from another process that holds the port), else False."""
    if proc.poll() is not None:
        return "exited"
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            if r.status != 200:
                return False
    except OSError:
        return False
    return f"URL: {url}" in log.read_text(errors="replace")


def _start(tmp_path: Path, env: dict) -> tuple[subprocess.Popen, str]:
    """Start the workbench on a free loopback port and wait until it serves there; another
    port when the one picked was taken in the meantime. Returns the process and its URL."""
    log_path = tmp_path / "streamlit.log"
    for attempt in range(PORT_TRIES):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                 "--server.port", str(port), "--server.address", "127.0.0.1",
                 "--server.headless", "true"],
                cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        try:
            state = wait_for(lambda p=proc, u=url: _serving(p, u, log_path), 60,
                             f"streamlit serving at {url}", interval=0.3)
        except TimeoutError:
            _stop(proc)
            raise RuntimeError("streamlit did not start: " +
                               log_path.read_text()[-2000:]) from None
        if state is True:
            return proc, url
        text = log_path.read_text(errors="replace")
        if f"Port {port} is not available" not in text or attempt == PORT_TRIES - 1:
            raise RuntimeError("streamlit did not start: " + text[-2000:])
    raise AssertionError("unreachable")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@contextmanager
def streamlit_app(tmp_path: Path, env_extra: dict | None = None):
    """Start the workbench on a free loopback port; yields its base URL."""
    env = {**os.environ, "SGA_WORKSPACE": str(tmp_path / "workspace"),
           "SGA_RUNS_DIR": str(tmp_path / "runs"), "PYTHONUNBUFFERED": "1",
           **(env_extra or {})}
    proc = None
    try:
        proc, url = _start(tmp_path, env)
        yield url
    finally:
        if proc is not None:
            _stop(proc)
        stop_jobs(tmp_path / "runs")


def stop_jobs(runs: Path) -> None:
    """Jobs deliberately outlive the UI; a test must not leave its runner or jobs behind
    (those of the runs folder ``runs`` and of the workspace beside it)."""
    from tests.helpers.processes import stop_all

    stop_all(runs.parent / "workspace", runs, marks=(runs.parent,))


@contextmanager
def chromium_page(viewport=(1400, 1000)):
    from playwright.sync_api import expect, sync_playwright

    # expect() waits for its condition on its own clock (5 s by default), which a loaded
    # 2-core box overruns while the page still answers: the same 30 s as every action
    expect.set_options(timeout=ACTION_TIMEOUT_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            page.set_default_timeout(ACTION_TIMEOUT_MS)
            yield page
        finally:
            browser.close()


IDLE = ("() => { const r = document.querySelector('[data-test-script-state]');"
        " return r && r.getAttribute('data-test-script-state') === 'notRunning'; }")


def wait_idle(page, timeout_ms: int = 60000) -> None:
    """Wait until Streamlit has no script run in progress (the app root says so)."""
    page.wait_for_function(IDLE, polling=100, timeout=timeout_ms)


def upload(page, label: str, name: str, data: bytes, attempts: int = 3) -> None:
    """Give the file uploader labelled ``label`` one file, ``name`` holding ``data``, and
    wait until it is the uploader's value (its chip shows ``name``, without the spinner).
    A rerun that redraws the uploader while the file is picked drops the pick, as it would
    drop a person's (who would pick it again): the file is picked again, ``attempts`` times
    in all."""
    from playwright.sync_api import Error, expect

    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text=label).first
    chip = uploader.locator('[data-testid="stFileChipName"]').filter(has_text=name)
    for attempt in range(attempts):
        wait_idle(page)
        uploader.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            files=[{"name": name, "mimeType": "application/octet-stream", "buffer": data}])
        try:
            expect(chip).to_have_count(1, timeout=ACTION_TIMEOUT_MS // attempts)
            break
        except (AssertionError, Error):
            if attempt == attempts - 1:
                raise
    expect(uploader.locator('[data-testid="stFileChipIconSpinner"]')).to_have_count(0)
    wait_idle(page)


def open_expander(page, label: str) -> None:
    """Open the expander titled ``label`` (nothing to do when it is open already)."""
    details = page.locator("details").filter(
        has=page.locator("summary").filter(has_text=label)).first
    from playwright.sync_api import expect

    details.wait_for()
    if details.get_attribute("open") is None:
        details.locator("summary").first.click()
    expect(details).to_have_attribute("open", "")


def choose(page, label: str, option: str, attempts: int = 5) -> None:
    """Pick ``option`` in the selectbox labelled ``label``: open the list and click the
    option, again if a rerun closed the list before the option could be clicked."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    for attempt in range(attempts):
        wait_idle(page)
        box.click()
        opt = page.get_by_role("option", name=option, exact=True)
        try:
            opt.wait_for(timeout=5000)
            opt.click()
            break
        except Exception:  # the list closed under us: try again
            page.keyboard.press("Escape")
            if attempt == attempts - 1:
                raise
    from playwright.sync_api import expect

    expect(box.get_by_role("combobox")).to_have_value(option)
    wait_idle(page)


__all__ = ["choose", "chromium_page", "needs_browser", "open_expander", "shutil",
           "streamlit_app", "wait_idle"]
