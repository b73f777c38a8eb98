"""`python -m mnemo_audit`: run the audit service until SIGTERM."""

from __future__ import annotations

import asyncio

from mnemo_service import load_settings
from mnemo_telemetry.logs import configure_logging

from mnemo_audit.app import create_app
from mnemo_audit.settings import Settings


def main() -> None:
    settings = load_settings(Settings, "audit")
    configure_logging("audit", settings.log_level)
    raise SystemExit(asyncio.run(create_app(settings).run()))


if __name__ == "__main__":
    main()
