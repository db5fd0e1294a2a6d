"""The README's screenshots, taken from real runs in real Chromium:

    python -m tools.screenshots --workspace WS --runs RUNS [--project demo] [--out docs/img]

starts the workbench on a free loopback port over the given workspace and runs folder
(``bench/demo_protocol.py`` makes the demo's: the prepared SmolLM2 Original and Retained
models and SGA runs at r = 0 and -0.8), opens Results and Token probabilities in Debian's
headless Chromium (Playwright, never a downloaded browser), waits until each page has
drawn its table or chart, and saves ``results.png`` and ``tokens.png``. Run it again after a
page changes how it looks.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-dev-shm-usage"]
#: page path -> (file, what must be on the page before the shot, height in pixels)
SHOTS = {"results": ("results.png", "text=Does it hold?", 1040),
         "tokens": ("tokens.png", ".js-plotly-plot", 1180)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the workbench exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the workbench did not answer at {url} within {timeout:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workspace", required=True, help="the workspace folder (SGA_WORKSPACE)")
    p.add_argument("--runs", required=True, help="the runs folder (SGA_RUNS_DIR)")
    p.add_argument("--project", default="demo")
    p.add_argument("--out", default=str(ROOT / "docs" / "img"))
    p.add_argument("--width", type=int, default=1400)
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "SGA_WORKSPACE": str(Path(args.workspace).resolve()),
           "SGA_RUNS_DIR": str(Path(args.runs).resolve())}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port",
         str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        wait_healthy(url, proc)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for path, (name, ready, height) in SHOTS.items():
                page = browser.new_page(viewport={"width": args.width, "height": height})
                page.goto(f"{url}/{path}?project={args.project}")
                page.wait_for_selector(ready, timeout=120_000)
                page.wait_for_function(  # Streamlit has stopped running the script
                    "!document.querySelector('[data-testid=\"stStatusWidget\"]')",
                    timeout=120_000)
                page.wait_for_timeout(1500)  # let plotly finish its transitions
                page.screenshot(path=str(out / name))
                print(f"wrote {out / name}")
                page.close()
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
