"""Every project name the app accepts can be prepared: its original and retain reference get
valid, distinct run ids (one mapping, sga_core.runs.prepared_ids), and run folders of names
that were valid before keep their ids."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from sga_core.config import valid_run_id
from sga_core.projects.listing import NAME_RE
from sga_core.runs.prepared_ids import ROLES, prepared_run_id
from tests.helpers.wait import wait_for

FIRST = string.ascii_lowercase + string.digits
REST = FIRST + "_-"


def project_names(n: int = 4000, seed: int = 0) -> list[str]:
    """Names the project-name rule admits: random ones of every length 1..64, the edge
    lengths, '_'/'-' twins (a_b and a-b), names that differ only past the cut, and names
    that look like another name's id."""
    rnd = random.Random(seed)
    names = {"a", "0", "a" * 64, "0" * 64, "a_b", "a-b", "a__b", "a--b", "a_-b", "a-_b",
             "my_proj", "my-proj", "demo", "demo-text", "x_", "x-", "_x"[1:], "a" + "_" * 63,
             "a" + "-" * 63, "demo-original", "demo-retain-ref", "demo-retain", "original",
             "retain-ref"}
    for length in range(1, 65):
        for _ in range(n // 64):
            names.add(rnd.choice(FIRST) + "".join(rnd.choice(REST) for _ in range(length - 1)))
    for length in (40, 41, 42, 43, 44, 45, 53, 54, 55, 56, 63, 64):  # around each role's cut
        base = "".join(rnd.choice(FIRST) for _ in range(length))
        for i in range(length):
            names.add(base[:i] + "_" + base[i + 1:] if i else base)
            names.add(base[:i] + "-" + base[i + 1:] if i else base)
        names.add(base[:-1] + "z")
        names.add(base[:-1] + "_")
    # a name that spells another name's id, plain and hashed
    names |= {prepared_run_id("p_q", "original"), prepared_run_id("p_q", "retain-ref")[:64]}
    assert all(NAME_RE.fullmatch(x) for x in names)
    return sorted(names)


def test_every_project_name_gets_valid_distinct_ids():
    names = project_names()
    ids: dict[str, tuple[str, str]] = {}
    for name in names:
        for role in ROLES:
            run_id = prepared_run_id(name, role)
            assert valid_run_id(run_id), (name, role, run_id)
            assert run_id not in ids, f"{(name, role)} and {ids[run_id]} share {run_id!r}"
            ids[run_id] = (name, role)
    print(f"{len(names)} project names x {len(ROLES)} roles = {len(ids)} distinct run ids")
    assert len(ids) == len(ROLES) * len(names)
    assert len({len(n) for n in names}) == 64  # every length 1..64 was tried


def test_names_that_were_valid_keep_their_ids():
    for name in ("demo", "demo-text", "mine", "tiny", "smoke", "a", "a-b", "x" * 53):
        assert prepared_run_id(name, "original") == f"{name}-original"
    for name in ("demo", "demo-text", "mine", "a-b", "x" * 53):
        assert prepared_run_id(name, "retain-ref") == f"{name}-retain-ref"
    # too long or with '_': a readable id with a hash, never the other spelling's id
    assert prepared_run_id("a_b", "original") != prepared_run_id("a-b", "original")
    assert prepared_run_id("my_proj", "original").startswith("my-proj-original-")
    assert len(prepared_run_id("x" * 64, "retain-ref")) <= 64


def test_every_place_derives_the_ids_from_the_one_mapping():
    """No module spells '<name>-original' or '<name>-retain-ref' itself."""
    root = Path(__file__).resolve().parents[3]
    offenders = []
    for path in [*(root / "sga_core").rglob("*.py"), *(root / "app_pages").glob("*.py"),
                 *(root / "ui").glob("*.py")]:
        if path.name == "prepared_ids.py":
            continue
        text = path.read_text()
        # a suffix glued to a name ("...}-original"), not a flag ("--original")
        for spelled in re.findall(r"(?<!-)-(?:original|retain-ref)[\"']", text):
            offenders.append(f"{path.relative_to(root)}: {spelled}")
    assert offenders == []


def test_a_name_that_is_no_project_name_is_refused_clearly():
    from sga_core.params import ConfigError

    for bad in ("", "My Proj", "a/b", "a" * 65, "-x", "abc\n"):
        with pytest.raises(ConfigError, match="name"):
            prepared_run_id(bad, "original")


@pytest.mark.slow
def test_a_project_with_an_underscore_is_prepared_and_has_an_original(tmp_path,
                                                                      tiny_model_dir):
    """The app's Prepare (submit_prepare, the queue) for project ``my_proj``: both runs are
    queued, trained and evaluated, and the Results table has its Original (with a Forget
    Quality against its Retained) and Retained rows."""
    from sga_core.data import load_qa, write_dataset
    from sga_core.metrics.catalog import spec_of
    from sga_core.projects import create_project
    from sga_core.projects.training import (
        original_run_id,
        prepared_model,
        prepared_reference,
        reference_run_id,
        submit_prepare,
    )
    from sga_core.report.table import results_table
    from sga_core.runs.status import effective_eval, effective_run

    demo = Path(__file__).resolve().parents[3] / "assets" / "demo"
    forget = write_dataset(tmp_path / "forget.jsonl", load_qa(demo / "forget.jsonl")[:3])
    retain = write_dataset(tmp_path / "retain.jsonl", load_qa(demo / "retain.jsonl")[:4])
    project = create_project("my_proj", forget, retain, root=tmp_path / "ws")
    runs = tmp_path / "runs"
    dirs = submit_prepare(project, model=str(tiny_model_dir), root=runs,
                          training={"max_steps": 1, "batch_size": 4, "eval_nll": False})
    assert [d.name for d in dirs] == [reference_run_id(project), original_run_id(project)]
    assert all(valid_run_id(d.name) for d in dirs)

    def done(d: Path) -> bool:
        return (effective_run(d).get("state") in ("completed", "failed", "cancelled")
                and effective_eval(d).get("state") in ("completed", "failed", "cancelled"))

    wait_for(lambda: all(done(d) for d in dirs), 300, "every run trained and evaluated",
             interval=0.5)
    for d in dirs:
        assert effective_run(d)["state"] == "completed", (d / "train.log").read_text()[-2000:]
        assert effective_eval(d)["state"] == "completed", effective_eval(d)
    assert prepared_model(project, runs) is not None
    assert prepared_reference(project, runs) is not None
    rows = {r["run"]: r for r in results_table(project, runs)}
    assert {"Original", "Retained"} <= set(rows)
    fq = spec_of("forget_quality", "qa").label
    assert rows["Original"][fq] is not None, rows["Original"]
