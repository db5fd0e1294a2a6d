"""The UI never loads a model (docs/decisions/007-ui-never-loads-a-model.md): a process that
renders every page, over a workspace with an evaluated run and its token table, and then
presses Import on the Data page (the copyright task, whose book is cut with a model's
tokenizer), has imported none of torch, transformers, peft, accelerate or
sentence-transformers. The check runs in a fresh interpreter, so no other test's imports can
hide or cause a failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "peft", "accelerate", "sentence_transformers")

SCRIPT = r"""
import json, os, sys, time
from pathlib import Path
root = Path(sys.argv[1])
os.environ["SGA_WORKSPACE"] = str(root / "workspace")
os.environ["SGA_RUNS_DIR"] = str(root / "runs")
os.chdir(root)
from sga_core.fileio import atomic_write_jsonl
from sga_core.projects import create_demo_project
from tests.helpers.own_data import fake_run, metrics
from tests.helpers.ui import open_page
demo = create_demo_project(root=root / "workspace")
run = fake_run(root / "runs", demo, "sga-run", r=-0.8, metrics=metrics())
atomic_write_jsonl(run / "eval" / "tokens.jsonl",
                   [{"set": "forget", "index": 0, "tokens": ["a", "0", "."],
                     "token_ids": [1, 2, 3], "probs": [0.5, 0.4, 0.9],
                     "top": [[["a", 0.5]], [["0", 0.4]], [[".", 0.9]]]}])
loaded = {}
for page in sorted(p.name for p in Path(sys.argv[2]).glob("*.py")):
    open_page(f"app_pages/{page}")
    loaded[page] = sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)
# press Import: the copyright task's book is cut with a tokenizer, in the import job
from sga_core.projects import list_projects
at = open_page("app_pages/data.py")
at.radio(key="bench.kind").set_value("copyright").run()
at.text_input(key="bench.name").set_value("my-book").run()
book = " ".join(f"Chapter {i}: the keeper counted {i} ships at dawn." for i in range(400))
ups = [u for u in at.get("file_uploader") if "bench." in str(u.proto.id)]
ups[0].set_value(("book.txt", book.encode(), "text/plain"))
ups[1].set_value(("retain.txt", book[::-1].encode(), "text/plain"))
at.run()
at.button(key="bench.go").click().run()
deadline = time.time() + 600
while time.time() < deadline and at.session_state["project"] != "my-book":
    time.sleep(0.5)
    at.run()
errors = [e.value for e in at.error]
imported = "my-book" in list_projects(root / "workspace")
after = sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)
print(json.dumps({"pages": loaded, "import": after, "imported": imported,
                  "errors": errors}))
"""


@pytest.mark.slow
def test_rendering_every_page_imports_no_model_library(tmp_path):
    pages = ROOT / "app_pages"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(pages),
                           json.dumps(HEAVY)], capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
                          timeout=900, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    loaded = out["pages"]
    assert sorted(loaded) == sorted(p.name for p in pages.glob("*.py"))
    assert loaded == {page: [] for page in loaded}, loaded
    assert out["imported"] and not out["errors"], out  # the import ran, in its own process
    assert out["import"] == [], out
