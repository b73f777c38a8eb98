# One image for every Mnemo service and for the set-up steps; the command picks what runs:
#   python -m mnemo_ingest | mnemo_edge_classifier | mnemo_navigator | mnemo_audit
#   alembic -c migrations/alembic.ini upgrade heads ; python -m mnemo_events.provisioning ; mnemo apply …
# Stage 1 installs the locked dependencies (a layer that changes only with uv.lock and the
# pyproject files), then the workspace's own packages; stage 2 copies the environment alone and runs
# as a non-root user, with no pip, setuptools or uv left in it.
# Build: docker build -t mnemo:local .   (docker-compose.yml does it for you)
# PYTHON_IMAGE is any Debian-like image with python3 and its venv module: the public
# python:3.11-slim-bookworm by default; `make image` passes a base it makes from Debian packages
# (deploy/container/engine.sh) and builds with podman.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv
# uv in a venv of its own (the base's python3 may have no pip): the project's environment below is
# made from the base's python3, not from this venv.
# Behind a TLS-inspecting proxy, pass its CA bundle as the build secret `ca_bundle`
# (`--secret id=ca_bundle,src=FILE`); it is used by pip and uv during the build and kept in no layer.
RUN --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export SSL_CERT_FILE=/run/secrets/ca_bundle PIP_CERT=/run/secrets/ca_bundle; fi \
    && python3 -m venv /opt/uv && /opt/uv/bin/pip install --no-cache-dir "uv==0.13.8"
WORKDIR /src

# Dependencies first: the lock file and every workspace member's pyproject.toml, nothing else.
COPY pyproject.toml uv.lock ./
COPY libs/auth/pyproject.toml libs/auth/
COPY libs/axon/pyproject.toml libs/axon/
COPY libs/client/pyproject.toml libs/client/
COPY libs/corpus/pyproject.toml libs/corpus/
COPY libs/events/pyproject.toml libs/events/
COPY libs/mdn/pyproject.toml libs/mdn/
COPY libs/service/pyproject.toml libs/service/
COPY libs/store/pyproject.toml libs/store/
COPY libs/telemetry/pyproject.toml libs/telemetry/
COPY services/audit/pyproject.toml services/audit/
COPY services/edge-classifier/pyproject.toml services/edge-classifier/
COPY services/ingest/pyproject.toml services/ingest/
COPY services/navigator/pyproject.toml services/navigator/
COPY cli/pyproject.toml cli/
RUN --mount=type=cache,target=/root/.cache/uv --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export SSL_CERT_FILE=/run/secrets/ca_bundle; fi \
    && /opt/uv/bin/uv sync --frozen --no-dev --all-packages --no-install-workspace

# Then the sources: installed as ordinary (non-editable) packages, so the runtime needs no /src.
COPY libs ./libs
COPY services ./services
COPY cli ./cli
RUN --mount=type=cache,target=/root/.cache/uv --mount=type=secret,id=ca_bundle \
    if [ -s /run/secrets/ca_bundle ]; then export SSL_CERT_FILE=/run/secrets/ca_bundle; fi \
    && /opt/uv/bin/uv sync --frozen --no-dev --all-packages --no-editable

FROM ${PYTHON_IMAGE} AS runtime
ARG PYTHON_IMAGE
ARG VERSION=0.1.0
# OCI annotations; the build's revision and time come as labels from the build command
# (`--label org.opencontainers.image.revision=…`, as deploy/container/engine.sh does).
LABEL org.opencontainers.image.title="mnemo" \
      org.opencontainers.image.description="Mnemo: multi-tenant knowledge graphs for AI agents (ingest, edge-classifier, navigator, audit, CLI)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH="/app/.venv/bin:${PATH}"
# No build tool in the runtime: the base's pip, setuptools and wheel go (on a Debian base, the
# wheels its venv module would install).
RUN (python3 -m pip uninstall --yes pip setuptools wheel >/dev/null 2>&1 || true) \
    && rm -rf /usr/share/python-wheels \
    && groupadd --system --gid 10001 mnemo \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /app mnemo
WORKDIR /app
COPY --from=build /app/.venv /app/.venv
COPY migrations ./migrations
COPY deploy/axon ./deploy/axon
USER 10001:10001
EXPOSE 8080 8081 8082 8083
# Ready means the service's /readyz answers 2xx on its own port (the first of the four port
# settings that is set; 8080 otherwise). One-shot commands (migrations, provisioning) exit first.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; port = next((os.environ[k] for k in ('MNEMO_NAVIGATOR_PORT', 'MNEMO_INGEST_PORT', 'MNEMO_CLASSIFIER_PORT', 'MNEMO_AUDIT_PORT') if os.environ.get(k)), '8080'); u.urlopen(f'http://127.0.0.1:{port}/readyz', timeout=2)"]
CMD ["mnemo", "--help"]
