"""Benchmark (docs/decisions/007-ui-never-loads-a-model.md): while a job trains SmolLM2, how long a
page switch takes in a real browser, and how much memory the Streamlit process holds (the model
lives in the job).

Starts the workbench on a free loopback port with its own workspace/runs folders, queues a
SmolLM2 SGA run, then switches pages in headless Chromium (Debian's) and samples the
Streamlit process's RSS. Two times per switch: until the page's heading shows (first
paint), and until the script run has finished (the app root's script state is back to
"notRunning", i.e. the whole page is drawn). The first visit of each page (which pays its
one-off imports in the server) is reported apart from the repeat visits. Last line:
``page_switch_s=<median settled> ui_rss_mib=<max>``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]
PAGES = [("Data", "Data"), ("Runs", "Runs"), ("Train", "Train"), ("Results", "Results"),
         ("Normal answers", "Normal answers")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="embedded:smollm2")
    p.add_argument("--switches", type=int, default=20)
    args = p.parse_args(argv)

    import psutil
    from playwright.sync_api import sync_playwright

    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config
    from sga_core.runs import queue as jobs
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import read_run

    tmp = Path(tempfile.mkdtemp(prefix="sga-ui-bench-"))
    project = create_demo_project(root=tmp / "workspace")
    project.save_normals(idk_normals(10, 4), "idk")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SGA_WORKSPACE": str(tmp / "workspace"),
           "SGA_RUNS_DIR": str(tmp / "runs")}
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                               "--server.port", str(port), "--server.headless", "true"],
                              cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    run_dir = None
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        cfg = build_config(project, method="sga", method_args={"r": -0.8, "k": 4},
                           training={"max_steps": 200, "batch_size": 2, "eval_nll": False,
                                     "save_model": False}, launch={}, model=args.model,
                           normals=str(project.normals_path), eval_cfg={"enabled": False})
        run_dir = jobs.submit(cfg, tmp / "runs")
        while not RunFolder(run_dir).metrics_path.exists():  # the job is really training
            time.sleep(1)
        proc = psutil.Process(server.pid)
        rss, times = [], []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            page.get_by_role("heading", name="SGA Workbench").wait_for(timeout=60000)
            # the app root says whether a script run is in progress
            idle = ("() => document.querySelector('[data-test-script-state]')"
                    ".getAttribute('data-test-script-state') === 'notRunning'")
            for i in range(args.switches):
                link, title = PAGES[i % len(PAGES)]
                t0 = time.perf_counter()
                page.get_by_role("link", name=link, exact=True).first.click()
                page.get_by_role("heading", name=title, exact=True).first.wait_for(
                    timeout=30000)
                t_paint = time.perf_counter() - t0
                page.wait_for_function(idle, polling=50, timeout=60000)
                t_done = time.perf_counter() - t0
                times.append((link, i < len(PAGES), t_paint, t_done))
                rss.append(sum(p.memory_info().rss for p in [proc] + proc.children(True)
                               if "streamlit" in " ".join(p.cmdline()) or p.pid == proc.pid))
                time.sleep(0.5)
            browser.close()
        st = read_run(run_dir)
        print(f"job: {run_dir.name} state={st.get('state')} step={st.get('step')}/"
              f"{st.get('total_steps')} (training {args.model} in its own process)")
        print("page switch (first paint / whole page), seconds:")
        for link, first, t_paint, t_done in times:
            print(f"  {link:15s} {'first visit' if first else 'repeat':11s} "
                  f"{t_paint:5.2f} / {t_done:5.2f}")
        repeat = [t for t in times if not t[1]] or times
        done = [t[3] for t in repeat]
        print(f"repeat visits: whole page median {statistics.median(done):.3f} s, "
              f"max {max(done):.3f} s; first paint median "
              f"{statistics.median(t[2] for t in repeat):.3f} s")
        print(f"first visits: whole page max {max(t[3] for t in times if t[1]):.3f} s")
        print(f"Streamlit process RSS: max {max(rss) / 2**20:.0f} MiB")
        print(f"page_switch_s={statistics.median(done):.3f} ui_rss_mib={max(rss) / 2**20:.0f}")
    finally:
        if run_dir is not None:
            jobs.cancel(run_dir)
            time.sleep(2)
            for pid in (read_run(run_dir).get("pid"), read_run(run_dir).get("launcher_pid")):
                try:
                    os.killpg(os.getpgid(pid), signal.SIGKILL)
                except (TypeError, ProcessLookupError, PermissionError):
                    pass
        os.killpg(os.getpgid(server.pid), signal.SIGTERM)
    return 0


if __name__ == "__main__":
    sys.exit(main())
