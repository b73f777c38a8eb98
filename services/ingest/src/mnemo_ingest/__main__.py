"""`python -m mnemo_ingest`: run the ingest service until SIGTERM."""

from __future__ import annotations

import asyncio

from mnemo_service import load_settings
from mnemo_telemetry.logs import configure_logging

from mnemo_ingest.app import create_app
from mnemo_ingest.settings import Settings


def main() -> None:
    settings = load_settings(Settings, "ingest")
    configure_logging("ingest", settings.log_level)
    raise SystemExit(asyncio.run(create_app(settings).run()))


if __name__ == "__main__":
    main()
