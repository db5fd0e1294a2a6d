"""``runs list|show|cancel``."""

from __future__ import annotations

import json

from sga_core.params import ConfigError


def cmd_runs(args) -> int:
    from sga_core.runs import damage, folder, listing, queue, validate
    from sga_core.runs import status as run_status
    from sga_core.runs.backends import backend_of

    root = folder.runs_root(args.runs_dir)
    if args.action == "list":
        rows = listing.list_runs(root)
        if not rows:
            print(f"no runs in {root}")
        for r in rows:
            prog = f"{r['step']}/{r['total_steps']}" if r.get("total_steps") else ""
            print(f"{r['run_id']:48s} {r['state']:10s} {r['method'] or '':9s} "
                  f"r={r['r'] if r['r'] is not None else '-':<6} "
                  f"{'eval:' + (r.get('eval_state') or '-'):16s} {prog}".rstrip())
            where = backend_of(r).describe(r)
            if where:
                print(f"  {where}")
            waits = backend_of(r).wait_reason(r["path"], r) if r["state"] == "queued" \
                else None
            if waits:
                print(f"  waiting: {waits}")
            if r.get("damaged"):
                print(f"  damaged: {r['damaged']}")
        return 0
    if not args.run_id:
        raise ConfigError(f"runs {args.action}: give a RUN_ID")
    run_dir = folder.run_path(args.run_id, root)  # never a path outside the runs folder
    if not folder.RunFolder(run_dir).exists():
        raise ConfigError(f"no run {args.run_id!r} in {root}")
    if args.action == "show":
        # the run's effective status with its evaluation's (eval_state, eval_error, ...)
        print(json.dumps(run_status.run_view(run_dir), indent=2))
        waits = queue.wait_reason(run_dir, root)
        if waits:
            print(f"waiting: {waits}")
        for d in damage.damage(run_dir):
            print(f"damaged: {d}")
        try:
            m = folder.metrics(run_dir)
        except validate.Damaged:
            m = []  # reported above
        if m:
            print("last metrics:", json.dumps(m[-1]))
        return 0
    if args.action == "cancel":
        ev = run_status.effective_eval(run_dir)
        if run_status.effective_run(run_dir).get("state") == "completed" and (
                ev.get("state") in ("running", "queued") or queue.eval_requested(run_dir)):
            try:
                st = queue.cancel_eval(run_dir)  # a trained run: stop its evaluation
            except RuntimeError as exc:  # it runs on another machine
                raise ConfigError(str(exc)) from None
            state = "cancelling" if st.get("state") == "running" else st.get("state")
            print(f"evaluation of {args.run_id}: {state} (a running evaluation stops at its "
                  "next batch, or is killed after the runner's grace period; the trained "
                  "model stays)")
            return 0
        state = run_status.effective_run(run_dir).get("state")
        if state in run_status.FINAL_STATES:
            ev_state = ev.get("state")
            print(f"{args.run_id} is already {state}: nothing to cancel"
                  + (f" (its evaluation {ev_state})" if ev_state else ""))
            return 0
        st = queue.cancel(run_dir)
        print(cancel_said(args.run_id, st))
        return 0
    raise ConfigError(f"unknown action {args.action}")


def cancel_said(run_id: str, st: dict) -> str:
    """What ``runs cancel`` made of the run, by the state it is in now."""
    from sga_core.runs.validate import FINAL_STATES

    state = st.get("state")
    if state in FINAL_STATES:
        return f"{run_id}: {state}" + (f" ({st['error']})" if st.get("error") else "")
    if state == "damaged":
        return (f"cancel requested for {run_id}, whose status is damaged ({st.get('damaged')}): "
                "a trainer still running stops at its next step")
    if state == "queued":
        return f"cancel requested for {run_id}: queued, dropped before it starts"
    if state == "running":
        return f"cancel requested for {run_id}: cancelling (it stops at its next step)"
    return f"cancel requested for {run_id}: {state} (a running run stops at its next step)"


# ------------------------------------------------------------------------------------------


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    s = sub.add_parser("runs", help="list, show or cancel runs")
    s.add_argument("action", choices=["list", "show", "cancel"])
    s.add_argument("run_id", nargs="?")
    s.add_argument("--runs-dir")
    s.set_defaults(func=cmd_runs)
