"""A project's normal-answer table as the Normal answers page works on it: what keeps it from
training, the last generation's settings, the "I don't know" fallback, and one row edited by
hand (a locked read-change-write through :meth:`Project.update_normals`)."""

from __future__ import annotations

from sga_core.data import NormalAnswer, NormalTable
from sga_core.normals import job as generation
from sga_core.normals.idk import idk_normals
from sga_core.projects import jobs
from sga_core.projects.project import Project

#: the project file of the generated "I don't know" table (a training fallback)
IDK_NORMALS = "idk_normals.jsonl"


def normals_problems(project: Project, k: int | None = None) -> tuple[NormalTable | None,
                                                                      list[str]]:
    """The project's normal-answer table and what keeps it from training with K = ``k``."""
    table = project.normals()
    if table is None:
        return None, ["no normal answers yet"]
    problems = table.problems(len(project.forget()))
    if k is not None and table.k < k:
        problems.insert(0, f"the table has {table.k - 1} normal answers per row, K={k} "
                           f"needs {k - 1}")
    return table, problems


def last_generation(project: Project) -> dict:
    """The settings of the project's last normal-answer generation ({} if none)."""
    return jobs.spec(project, generation.NAME)


def idk_fallback(project: Project, k: int) -> str:
    """A table of generated "I don't know" answers for the project (a training fallback)."""
    path = project.path / IDK_NORMALS
    idk_normals(len(project.forget()), max(2, k)).save(path)
    return str(path)


def save_normals_row(project: Project, row: int, texts: list[str],
                     current: list[NormalAnswer]) -> None:
    """Save the edited answers of one forget row (a locked read-change-write, so a job that
    saved meanwhile is kept); unchanged answers keep their source and score."""
    def change(latest: NormalTable | None) -> NormalTable:
        base = latest or NormalTable(current, max([2] + [a.k + 1 for a in current]))
        answers = [a for a in base.answers if a.forget_index != row]
        for j, text in enumerate(texts, start=1):
            old = current[j - 1] if j - 1 < len(current) else None
            if old is not None and old.text == text:
                answers.append(NormalAnswer(row, j, text, old.source, old.score, old.edited,
                                            old.updated_at))
            else:
                answers.append(NormalAnswer(row, j, text, "manual", None, True))
        return NormalTable(answers, max([base.k] + [a.k + 1 for a in answers]))

    project.update_normals(change, reason=f"edit row {row}")
