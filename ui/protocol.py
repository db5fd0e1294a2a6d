"""The project's evaluation protocol on the Data page (choose it, see its settings, re-evaluate
the runs evaluated under another one) and on the Train page (one line). Layout only: the
protocols are :mod:`sga_core.protocols`'s registry, the work ``sga_core.workbench``'s."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.show import as_list, plain

DONE = "data.protocol_done"  # the last action's confirmation, shown after the rerun


def protocol_caption(project, note: str = "") -> None:
    """The Train page's ``Evaluation protocol: <title>. Settings: ...`` caption (``note``
    after it), then what the project lacks of what the protocol promises, one a line."""
    proto = next(p for p in wb.protocols() if p.name == project.protocol)
    st.caption(plain(f"Evaluation protocol: {proto.describe()}. Settings: {proto.summary()}."
                     f"{note}"))
    gaps = wb.protocol_gaps(project)
    if gaps:
        st.warning("In this project:\n" + as_list(gaps))


#: a set this large, evaluated whole, is slow on a CPU: the row-limit caption says so
LARGE_SET = 500


def set_rows(project) -> dict[str, int]:
    """The rows of each set an evaluation of ``project`` reads: forget, retain and every
    evaluation set (parsed once per file version: :func:`~sga_core.projects.eval_sets.
    set_summary`)."""
    paths = {"forget": project.forget_path, "retain": project.retain_path,
             **project.eval_sets()}
    out = {}
    for name, path in paths.items():
        try:
            out[name] = wb.set_summary(project.kind, name, path)["rows"]
        except (OSError, ValueError):  # a missing or unreadable set: the Data page says so
            continue
    return out


def rows_caption(rows: dict[str, int], limit: int, caps: dict[str, int] | None = None
                 ) -> str:
    """What an evaluation will read with row limit ``limit`` (0 = all; ``caps``: a set's
    own limit besides, the demo protocol's 40 retain rows): each set's rows ("holdout: 200
    of 3,547 rows"), and, evaluating every row of a large set, that it is slow on a CPU and
    what a limit changes."""
    if not rows:
        return ""
    read = {n: min([k, *(c for c in (limit, (caps or {}).get(n)) if c)])
            for n, k in rows.items()}
    parts = [f"{n}: {read[n]:,} of {k:,} rows" if read[n] < k else
             f"{n}: {k:,} {'row' if k == 1 else 'rows'}" for n, k in rows.items()]
    text = "The evaluation reads " + ", ".join(parts) + "."
    big = {n: k for n, k in read.items() if k > LARGE_SET}
    if not limit and big:
        name, most = max(big.items(), key=lambda kv: kv[1])
        text += (f" Every row of {name} ({most:,}) is scored: on a CPU that can take hours; a "
                 f"limit such as 200 reads an evenly spaced subset, with wider intervals.")
    return text


def eval_rows_input(project=None) -> int:
    """The row limit for every evaluation set (``eval.max_rows``; 0 = all), on the Train
    page, for QA and text projects alike; with ``project``, a caption of what each set
    will be read of (:func:`rows_caption`)."""
    from ui.forms import kept

    limit = int(kept(st.number_input, "train.eval_rows", 0, min_value=0, step=10,
                     label="evaluate at most this many rows of each set (0 = all)",
                     help="An evenly spaced subset of every evaluation set: quicker on a "
                          "CPU, with wider intervals; the results say 'n of N rows'.") or 0)
    caps = {"retain": wb.EvalConfig().max_retain_rows} if project is not None and \
        project.protocol == "demo" else {}
    if project is not None and (text := rows_caption(set_rows(project), limit, caps)):
        st.caption(plain(text))
    return limit


def eval_rows_value() -> int:
    """The Train page's row limit (:func:`eval_rows_input`) where it is read before the
    input is drawn (the Prepare panel, above it): its value now, else the kept one."""
    from ui.forms import chosen

    value = st.session_state.get("train.eval_rows", chosen("train.eval_rows"))
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


def protocol_section(project, root) -> None:
    """Choose the project's protocol; offer to re-evaluate runs evaluated under another."""
    st.subheader("Evaluation protocol")
    done = st.session_state.pop(DONE, None)
    if done:
        st.success(plain(done))
    protos = {p.name: p for p in wb.protocols()}
    current = project.protocol
    c1, c2 = st.columns([2, 1])
    choice = c1.selectbox("evaluation protocol", list(protos), index=list(protos).index(current),
                          format_func=lambda n: f"{n}: {protos[n].title}",
                          key=f"data.protocol.{project.name}",
                          help="the settings every run of this project is evaluated under")
    st.caption(plain(f"{protos[choice].describe()}. Settings: {protos[choice].summary()}."))
    for gap in wb.protocol_gaps(project, choice):
        st.warning(plain(f"In this project: {gap}."))
    if project.kind == "text" and current == "demo" and not project.meta.get("benchmark"):
        st.info("A text project from MUSE's files: choose **muse** to evaluate as MUSE does "
                "(few-shot KnowMem from the *_icl sets, 32-token answers, VerbMem against "
                "128 true tokens), or **copyright** for a book (FLAT).")
    if choice != current and c2.button(f"Use {choice} for this project", key="data.protocol_set"):
        project.set_protocol(choice)
        st.session_state[DONE] = (f"{project.name} is now evaluated under {choice}; new runs "
                                  "use it.")
        st.rerun()
    other = wb.runs_other_protocol(project, root)
    if not other:
        return
    st.warning(plain(f"{wb.plural(len(other), 'evaluated run')} of this project "
                     f"{'was' if len(other) == 1 else 'were'} evaluated under another protocol "
                     f"than {current}: " + ", ".join(f"{r} ({p})" for r, p in
                                                     list(other.items())[:6]) +
                     (" ..." if len(other) > 6 else "") + "; their numbers do not compare."))
    if st.button(f"Re-evaluate them under {current} (queued jobs)",
                 key="data.protocol_reevaluate"):
        skipped = wb.reevaluate(project, list(other), root)
        st.session_state[DONE] = (f"Queued the evaluation of "
                                  f"{wb.plural(len(other) - len(skipped), 'run')} "
                                  f"under {current}; progress on the Runs page." +
                                  "".join(f" {why}." for why in skipped.values()))
        st.rerun()
