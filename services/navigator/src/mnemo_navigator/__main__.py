"""`python -m mnemo_navigator`: serve the navigator until SIGTERM."""

from __future__ import annotations

import asyncio

from mnemo_service import load_settings
from mnemo_telemetry.logs import configure_logging

from mnemo_navigator.app import create_app
from mnemo_navigator.settings import Settings


def main() -> None:
    settings = load_settings(Settings, "navigator")
    configure_logging("navigator")
    raise SystemExit(asyncio.run(create_app(settings).run()))


if __name__ == "__main__":
    main()
