"""The service kit: what every Mnemo service is built from.

A service is a settings class (extending `ServiceSettings`, plus `AuthSettings` with an HTTP API
and `RelaySettings` when it writes outbox rows), an adapters module and its handlers, joined in
`app.py` by one lifespan run by a `Composition`.
"""

from mnemo_service.composition import Background, Composition, Lifespan
from mnemo_service.relay import KafkaPublisher
from mnemo_service.settings import AuthSettings, RelaySettings, ServiceSettings, load_settings
from mnemo_service.transient import TRANSIENT

__all__ = [
    "TRANSIENT",
    "AuthSettings",
    "Background",
    "Composition",
    "KafkaPublisher",
    "Lifespan",
    "RelaySettings",
    "ServiceSettings",
    "load_settings",
]
