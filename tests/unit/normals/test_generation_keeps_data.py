"""A generation never destroys curated data (docs/spec.md#35-normal-answer-backends): if every row
fails the table is kept and the job says why; a partial generation merges (failed rows keep their
answers)."""

from __future__ import annotations

import json

from sga_core.data import NormalAnswer, NormalTable
from sga_core.fileio import atomic_write_json
from sga_core.normals import job
from sga_core.normals.result import GenerationResult
from sga_core.projects import create_project
from sga_core.projects import jobs as bgjob


def project_with_table(tmp_path, tags):
    forget = tmp_path / "forget.jsonl"
    forget.write_text("".join(json.dumps({"question": f"Who is author [{t}]?", "answer": t})
                              + "\n" for t in tags))
    project = create_project("p", forget, k=4, root=tmp_path / "ws")
    curated = NormalTable([NormalAnswer(i, j, f"curated {i}.{j}", "manual", None, True)
                           for i in range(len(tags)) for j in (1, 2, 3)], 4)
    project.save_normals(curated, "curated by hand")
    return project


def run_job(project, spec: dict) -> int:
    d = bgjob.job_dir(project, job.NAME)
    d.mkdir(exist_ok=True)
    atomic_write_json(d / "spec.json", spec)
    atomic_write_json(d / "status.json", {"state": "running"})
    return job.main([str(project.path)])


def openai_spec(server, rows=None) -> dict:
    return {"backend": "openai", "k": 4, "rows": rows,
            "options": {"base_url": server.base_url, "retry_base_delay": 0.001,
                        "timeout": 5.0, "max_retries": 0, "max_concurrency": 1}}


def test_every_row_failing_keeps_the_table(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    project = project_with_table(tmp_path, ["echo401"] * 3)
    before, versions = project.normals_path.read_bytes(), project.history()
    assert run_job(project, openai_spec(fake_openai)) == 1
    st = bgjob.status(project, job.NAME)
    assert st["state"] == "failed" and st["applied"] is False and st["outcome"] == "kept"
    assert st["failed_rows"] == [0, 1, 2] and set(st["errors"]) == {"0", "1", "2"}
    assert "HTTP 401" in st["errors"]["0"] and "sk-wrong" not in json.dumps(st)
    assert "no answers were generated" in st["error"] and "kept" in st["message"]
    assert project.normals_path.read_bytes() == before and project.history() == versions


def test_partial_generation_merges(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    project = project_with_table(tmp_path, ["ok-a", "ok-b", "echo401"])
    assert run_job(project, openai_spec(fake_openai)) == 0
    st = bgjob.status(project, job.NAME)
    assert st["state"] == "completed" and st["applied"] and st["outcome"] == "merged"
    assert st["failed_rows"] == [2] and st["replaced_rows"] == [0, 1]
    assert "1 row failed and kept their previous answers: 2" in st["message"]
    table = project.normals()
    assert {a.source for a in table.answers if a.forget_index < 2} == {"openai"}
    assert table.texts_for(2) == ["curated 2.1", "curated 2.2", "curated 2.3"]
    assert st["version"] == project.history()[0].name


def stub_backend(monkeypatch, answers_for):
    """generate_normals replaced: ``answers_for(i, k)`` gives row i's texts (or raises)."""
    import sga_core.normals as normals

    def fake(backend, rows, kind, k, progress=None, **options):
        answers, errors = [], {}
        for i in range(len(rows)):
            try:
                texts = answers_for(i, k)
            except RuntimeError as exc:
                errors[i] = str(exc)
                continue
            answers += [NormalAnswer(i, j, t, "idk") for j, t in enumerate(texts, start=1)]
        return GenerationResult(backend, NormalTable(answers, k), len(rows), errors=errors)

    monkeypatch.setattr(normals, "generate_normals", fake)


def test_rows_with_too_few_answers_keep_theirs(tmp_path, monkeypatch):
    project = project_with_table(tmp_path, ["a", "b", "c"])
    stub_backend(monkeypatch, lambda i, k: ["new"] * (k - 1 if i != 1 else 1))
    assert run_job(project, {"backend": "idk", "k": 4, "options": {}}) == 0
    st = bgjob.status(project, job.NAME)
    assert st["failed_rows"] == [1] and st["errors"] == {"1": "got 1 of 3 answers"}
    table = project.normals()
    assert table.texts_for(0) == ["new"] * 3 and table.texts_for(2) == ["new"] * 3
    assert table.texts_for(1) == ["curated 1.1", "curated 1.2", "curated 1.3"]


def test_smaller_k_with_a_failed_row_keeps_its_answers(tmp_path, monkeypatch):
    project = project_with_table(tmp_path, ["a", "b"])

    def answers(i, k):
        if i == 0:
            raise RuntimeError("HTTP 500")
        return ["new"] * (k - 1)

    stub_backend(monkeypatch, answers)
    assert run_job(project, {"backend": "idk", "k": 2, "options": {}}) == 0
    table = project.normals()
    assert table.k == 4 and table.texts_for(0) == ["curated 0.1", "curated 0.2", "curated 0.3"]
    assert table.texts_for(1) == ["new"]
    stub_backend(monkeypatch, lambda i, k: ["newer"] * (k - 1))  # all rows: K follows
    assert run_job(project, {"backend": "idk", "k": 2, "options": {}}) == 0
    assert project.normals().k == 2 and len(project.normals()) == 2


def test_merge_rules():
    cur = NormalTable([NormalAnswer(i, j, f"c{i}{j}", "manual") for i in range(3)
                       for j in (1, 2)], 3)
    new = NormalTable([NormalAnswer(i, 1, f"n{i}", "idk") for i in range(3)], 2)
    full = job.merge(cur, new, None)
    assert full.k == 2 and [a.text for a in full.answers] == ["n0", "n1", "n2"]
    partial = job.merge(cur, new, None, failed={1})
    assert partial.k == 3 and partial.texts_for(1) == ["c11", "c12"]
    assert partial.texts_for(0) == ["n0"]
    one = job.merge(cur, new, [2])
    assert one.texts_for(0) == ["c01", "c02"] and one.texts_for(2) == ["n2"]
    assert job.merge(None, new, None, failed={0}).texts_for(0) == []
