# Every target bootstraps .venv by itself, so `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
BIND ?= 127.0.0.1:8443
PYTEST_ARGS ?=

.PHONY: run test lint venv certs bench fuzz soak clean upstream sandbox differential image haproxy

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

certs/tls.crt: | $(STAMP)
	$(VENV)/bin/dra-webhook certs --service dra-webhook --namespace dra-webhook --out certs --dev

certs: certs/tls.crt

run: $(STAMP) certs/tls.crt
	$(VENV)/bin/dra-webhook serve --bind $(BIND) --tls-cert certs/tls.crt --tls-key certs/tls.key

# Upstream Kubernetes for the test rig (upstream/README.md); rebuilt only when upstream/ changed.
upstream:
	upstream/build.sh

# HAProxy from Debian's packages: the load balancer in front of two replicas in the reliability
# tests (tests/rig/faults.py). Installed once when missing and we are root (CI is); otherwise say so.
haproxy:
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; \
	  else echo "haproxy is missing: apt-get install haproxy (the replica tests need it)"; fi

test: $(STAMP) upstream haproxy
	$(PY) -m pytest $(PYTEST_ARGS)

# The differential tests at 25x their make-test size (50,000 generated objects per kind family).
differential: $(STAMP) upstream
	DIFF_SCALE=$${DIFF_SCALE:-25} $(PY) -m pytest tests/differential -q $(PYTEST_ARGS)

# etcd + kube-apiserver + kube-scheduler + kube-controller-manager 1.37 + the webhook registered
# from the chart (docs/sandbox.md).
# FEATURE_GATES=Name=true,... sets the gates of the control plane and of the webhook.
sandbox: $(STAMP) upstream
	PYTHONPATH=. $(PY) -m tests.rig.sandbox

# The container image from the Dockerfile, built with podman on a Debian 12 base made with
# mmdebstrap (both from Debian's packages; no image registry needed): image/build.sh.
image:
	image/build.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check webhook tests bench
	$(VENV)/bin/mypy webhook

bench: $(STAMP)
	$(PY) -m bench $(if $(BENCH_QUICK),--quick,)

fuzz: $(STAMP)
	FUZZ_RANDOM=1 FUZZ_EXAMPLES=10000 FUZZ_HTTP_EXAMPLES=300 $(PY) -m pytest tests/reliability/test_fuzz.py -q

soak: $(STAMP)
	$(PY) -m bench.soak

clean:
	rm -rf $(VENV) certs/*.crt certs/*.key .cache/upstream
