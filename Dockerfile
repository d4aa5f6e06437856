# Image for the dra-webhook Helm chart (charts/dra-webhook): `dra-webhook serve ...` over HTTPS.
# Build: docker build -t ghcr.io/dra-webhook/dra-webhook:0.1.0 .
# BASE is any image with Python >= 3.11 as `python` (with venv and pip) and groupadd/useradd:
# python:3.11-slim by default; `make image` builds a Debian 12 one from Debian's packages where
# no image registry is reachable (image/base.sh) and passes it with --build-arg BASE=...
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# The runtime dependencies first (no test extras, no compiler: every one is a wheel), in a layer
# of their own so a change to the code does not download them again. Out go what the server
# never imports: the Kubernetes client's asyncio variant (kubernetes.aio, ~70 MB) with the
# aiohttp stack only it uses.
COPY pyproject.toml README.md ./
RUN python -m venv /opt/venv \
 && python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
      > requirements.txt \
 && /opt/venv/bin/pip install --no-compile -r requirements.txt \
 && /opt/venv/bin/pip uninstall -y -q aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict \
      propcache yarl \
 && rm -rf /opt/venv/lib/python3*/site-packages/kubernetes/aio
# Then the webhook itself; pip and setuptools leave the venv, and bytecode is compiled for
# exactly what the server imports (compile_imports.py).
COPY webhook ./webhook
COPY image/compile_imports.py ./
RUN /opt/venv/bin/pip install --no-compile --no-deps . \
 && /opt/venv/bin/pip uninstall -y -q setuptools pip \
 && /opt/venv/bin/python compile_imports.py

FROM ${BASE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus
COPY --from=build /opt/venv /opt/venv
# Distroless-style "nonroot" uid/gid; the chart also runs with a read-only root filesystem and
# emptyDirs on /tmp and /tmp/prometheus.
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin nonroot
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["dra-webhook"]
CMD ["serve", "--bind", "0.0.0.0:8443", "--tls-cert", "/etc/dra-webhook/tls/tls.crt", "--tls-key", "/etc/dra-webhook/tls/tls.key", "--in-cluster"]
