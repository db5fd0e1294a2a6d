"""Training entry point: ``accelerate launch -m sga_core.train --config RUN_DIR/config.yaml``."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sga_core.train",
                                     description="Train one run folder (under accelerate).")
    parser.add_argument("--config", required=True, help="RUN_DIR/config.yaml")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the run folder's newest checkpoint (from step 0 "
                             "when it has none; docs/long-runs.md); also when the environment "
                             "has SGA_TRAIN_RESUME=1")
    args = parser.parse_args(argv)
    from pathlib import Path

    from sga_core.config import ConfigError, load_config
    from sga_core.fileio import now_iso
    from sga_core.runs.status import write_run

    run_dir = Path(args.config).resolve().parent
    from sga_core.train import caller_watch

    caller_watch.start(run_dir)  # its caller killed before the loop runs: stop now
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        write_run(run_dir, "failed", ended_at=now_iso(), exit_code=2, error=str(exc))
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from sga_core.runs.checkpoints import RESUME_ENV
    from sga_core.train.trainer import train

    resume = args.resume or os.environ.get(RESUME_ENV) == "1"
    # 0, or STOPPED_EXIT when a stop signal saved a checkpoint (a batch script requeues)
    return train(cfg, run_dir, resume=resume).exit_code


if __name__ == "__main__":
    sys.exit(main())
