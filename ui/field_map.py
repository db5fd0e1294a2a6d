"""Field mapping at import: under an uploader, when the file lacks the fields the workbench
reads (``question`` / ``answer``, or ``text``), the file's own fields are offered as choices
for each one (suggested: ``prompt`` -> question, ``response`` -> answer, ...; or the mapping
the project remembers). The mapping itself is applied by the library
(``sga_core.data.mapping``), so a file's errors still name its own fields."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import kept
from ui.show import plain, show_error

NONE = "(none)"
PER_ROW = 3  # choices side by side (five in a row cut the file's field names short)
CACHE = "_field_reports"


def _report(upload, kind: str):
    """The upload's field report, read once per file and kind (None: unreadable, shown)."""
    cache = st.session_state.setdefault(CACHE, {})
    key = (getattr(upload, "file_id", None) or upload.name, upload.size, kind)
    if key not in cache:
        try:
            cache[key] = wb.inspect_upload(upload.name, upload.getvalue(), kind)
        except wb.DataError as exc:
            cache[key] = exc
    if isinstance(cache[key], Exception):
        show_error(cache[key], "cannot read this file")
        return None
    return cache[key]


def valid(mapping) -> bool:
    """Whether a mapping from :func:`mapping_for` can be used (the library's own check: one
    file field chosen for two workbench fields is not)."""
    try:
        wb.check_map(mapping)
    except wb.DataError:
        return False
    return True


def mapping_for(role: str, upload, kind: str = "auto", remembered=None
                ) -> dict[str, str] | list[tuple[str, str]]:
    """Draw the mapping step for ``upload`` (nothing when it has the fields already) and
    return the mapping {file field: workbench field} chosen ({} when none is needed). When a
    file field is chosen for two workbench fields (an error is shown), the choices come back
    as (file field, workbench field) pairs, which the library refuses (see :func:`valid`),
    instead of a dict that would silently keep one of the two."""
    if upload is None:
        return {}
    report = _report(upload, kind)
    if report is None or not (report.missing or report.suggested):
        return {}
    if report.missing:
        st.warning(plain(f"{report.file} has no {' / '.join(report.missing)} field "
                         f"({report.target.upper()} rows need it). Its fields: "
                         f"{', '.join(report.fields[:30])}. Choose which of them the "
                         "workbench should read as each field:"))
    else:  # only optional fields under other names
        st.info(plain(f"{report.file} has fields that look like optional workbench fields "
                      f"({', '.join(f'{s} → {t}' for s, t in report.suggested.items())}). "
                      "Check the mapping below (choose (none) to leave a field out):"))
    remembered = {s: t for s, t in dict(remembered or {}).items() if s in report.fields}
    defaults = {t: s for s, t in {**report.suggested, **remembered}.items()}
    targets = wb.TARGETS[report.target]
    chosen: dict[str, str] = {}  # workbench field -> file field
    for i, target in enumerate(targets):
        if i % PER_ROW == 0:  # a row of at most PER_ROW choices: a field name stays readable
            cols = st.columns(PER_ROW)
        with cols[i % PER_ROW]:
            same = target if target in report.fields else NONE  # already under its name
            source = kept(st.selectbox, f"data.map.{role}.{target}", defaults.get(target, same),
                          label=f"{target} ←", options=[NONE, *report.fields],
                          help=f"the field of {report.file} that holds the {target}")
        if source != NONE:
            chosen[target] = source
    twice = sorted({s for s in chosen.values() if list(chosen.values()).count(s) > 1})
    if twice:
        uses = ", ".join(f"{s} is chosen for " + " and ".join(
            t for t, x in chosen.items() if x == s) for s in twice)
        st.error(plain(f"{', '.join(twice)}: each field of the file can be read as one "
                       f"workbench field only ({uses}); choose another field for one of "
                       "them (nothing is imported until then)."))
        return [(s, t) for t, s in chosen.items()]
    mapping = {s: t for t, s in chosen.items() if s != t}  # a field under its own name: as is
    if mapping:
        st.caption(plain("mapping: " + ", ".join(f"{s} → {t}" for s, t in mapping.items()) +
                         " (kept with the project; on the command line: " +
                         " ".join(f"--map {s}={t}" for s, t in mapping.items()) + ")"))
    return mapping
