# Image for the dra-webhook Helm chart (charts/dra-webhook): `dra-webhook serve ...` over HTTPS.
# Build: docker build -t ghcr.io/dra-webhook/dra-webhook:0.1.0 .
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY webhook ./webhook
RUN python -m venv /opt/venv && /opt/venv/bin/pip install .

FROM python:3.11-slim
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
