"""`python -m mnemo_edge_classifier`: run the edge classifier until SIGTERM."""

from __future__ import annotations

import asyncio

from mnemo_service import load_settings
from mnemo_telemetry.logs import configure_logging

from mnemo_edge_classifier.app import create_app
from mnemo_edge_classifier.settings import Settings


def main() -> None:
    settings = load_settings(Settings, "edge-classifier")
    configure_logging("edge-classifier", settings.log_level)
    raise SystemExit(asyncio.run(create_app(settings).run()))


if __name__ == "__main__":
    main()
