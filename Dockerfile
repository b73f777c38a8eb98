# One image for every Mnemo service and for the set-up steps; the command picks what runs:
#   python -m mnemo_ingest | mnemo_edge_classifier | mnemo_navigator | mnemo_audit
#   alembic -c migrations/alembic.ini upgrade heads ; python -m mnemo_events.provisioning ; mnemo apply …
# Stage 1 installs the locked dependencies (a layer that changes only with uv.lock and the
# pyproject files), then the workspace's own packages; stage 2 copies the environment alone and runs
# as a non-root user. Build: docker build -t mnemo:local .   (docker-compose.yml does it for you)

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install --no-cache-dir "uv==0.13.8"
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
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --all-packages --no-install-workspace

# Then the sources: installed as ordinary (non-editable) packages, so the runtime needs no /src.
COPY libs ./libs
COPY services ./services
COPY cli ./cli
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --all-packages --no-editable

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH="/app/.venv/bin:${PATH}"
RUN groupadd --system --gid 10001 mnemo \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /app mnemo
WORKDIR /app
COPY --from=build /app/.venv /app/.venv
COPY migrations ./migrations
COPY deploy/axon ./deploy/axon
USER 10001:10001
EXPOSE 8080 8081 8082 8083
CMD ["mnemo", "--help"]
