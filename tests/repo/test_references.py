"""Code, tests and the README cite only what a clone can read: no numbered tracker issue and no
"SPEC <n>" of an outside specification, and every link into docs/spec.md or docs/decisions/
points to a file and heading that exist (headings slugged as GitHub does)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("sga_core", "app_pages", "ui", "tests", "bench", "tools")
THIS = Path(__file__).resolve()

# built from parts so that this file's own source does not match them
ISSUE_REF = re.compile(r"\b" + "iss" + r"ue\s+#?\d+", re.IGNORECASE)
SPEC_REF = re.compile(r"\b" + "SP" + r"EC\s*§?\s*\d")
ANCHOR = r"(?:#[A-Za-z0-9_-]+)?"
LINK = re.compile(r"docs/(spec\.md" + ANCHOR + r"|decisions/[A-Za-z0-9_.-]+\.md" + ANCHOR + ")")


def code_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for d in CODE_DIRS:
        files += sorted((ROOT / d).rglob("*.py"))
    return [f for f in files if f.is_file() and f.resolve() != THIS]


def slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    found: set[str] = set()
    in_fence = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m and not in_fence:
            found.add(slug(m.group(1)))
    return found


def test_slug_matches_github():
    assert slug("4. Metrics") == "4-metrics"
    assert slug("5.3 status.json") == "53-statusjson"
    assert slug("4.6 Text metrics (MUSE style)") == "46-text-metrics-muse-style"
    assert slug("2. The optimal smoothing rate r*") == "2-the-optimal-smoothing-rate-r"


def test_no_tracker_or_outside_spec_references():
    bad = []
    for f in code_files():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if ISSUE_REF.search(line) or SPEC_REF.search(line):
                bad.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "cite docs/spec.md or docs/decisions/ instead:\n" + "\n".join(bad)


def test_readme_cites_no_tracker_or_outside_spec():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    bad = [line for line in text.splitlines() if ISSUE_REF.search(line) or SPEC_REF.search(line)]
    assert not bad, "\n".join(bad)


def test_every_docs_link_resolves():
    cache: dict[Path, set[str]] = {}
    bad = []
    for f in code_files() + [ROOT / "README.md"]:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in LINK.finditer(line):
                target, _, anchor = m.group(1).partition("#")
                path = ROOT / "docs" / target
                where = f"{f.relative_to(ROOT)}:{n}: docs/{m.group(1)}"
                if not path.is_file():
                    bad.append(f"{where} (no such file)")
                    continue
                if anchor:
                    heads = cache.setdefault(path, anchors(path))
                    if anchor not in heads:
                        bad.append(f"{where} (no such heading)")
    assert not bad, "\n".join(bad)


def test_the_checks_see_links_at_all():
    """The link check is not vacuous: the code cites the spec by anchor."""
    assert any(LINK.search(f.read_text(encoding="utf-8")) for f in code_files())
