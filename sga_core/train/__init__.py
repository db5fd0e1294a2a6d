"""Training: the loop (:mod:`sga_core.train.trainer`) and its entry point
``accelerate launch -m sga_core.train --config RUN_DIR/config.yaml`` (``__main__``)."""
