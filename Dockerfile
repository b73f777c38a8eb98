# One image for every Mnemo service; the service to run is chosen by the command (see docker-compose.yml).
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 UV_PYTHON_DOWNLOADS=never UV_COMPILE_BYTECODE=1
RUN pip install --no-cache-dir "uv==0.13.8"
WORKDIR /app
COPY pyproject.toml uv.lock ./
COPY libs ./libs
COPY services ./services
COPY cli ./cli
COPY migrations ./migrations
COPY deploy/axon ./deploy/axon
RUN uv sync --frozen --no-dev --all-packages
ENV PATH="/app/.venv/bin:$PATH"
RUN useradd --system --uid 10001 mnemo
USER mnemo
CMD ["mnemo", "--help"]
