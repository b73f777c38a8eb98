"""How Mnemo's Kafka clients authenticate and encrypt, from `KafkaSettings`: the FastStream
security object every broker is built with, and the same options for aiokafka's own clients (the
topic administrator)."""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context
from faststream.security import (
    BaseSecurity,
    SASLPlaintext,
    SASLScram256,
    SASLScram512,
)

from mnemo_events.settings import KafkaSettings


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext | None:
    """The TLS context of an `SSL`/`SASL_SSL` connection (None for the others): verifies the
    broker against `ssl_ca_file` (else the system's CAs) and its host name unless told not to."""
    if not settings.security_protocol.endswith("SSL"):
        return None
    context: ssl.SSLContext = create_ssl_context(
        cafile=settings.ssl_ca_file,
        certfile=settings.ssl_cert_file,
        keyfile=settings.ssl_key_file,
    )
    context.check_hostname = settings.ssl_check_hostname
    return context


def broker_security(settings: KafkaSettings) -> BaseSecurity | None:
    """FastStream's security object for `settings` (None: plaintext, no authentication)."""
    protocol = settings.security_protocol
    if protocol == "PLAINTEXT":
        return None
    context = ssl_context(settings)
    if protocol == "SSL":
        return BaseSecurity(ssl_context=context, use_ssl=True)
    username = settings.sasl_username or ""
    password = settings.sasl_password.get_secret_value() if settings.sasl_password else ""
    use_ssl = protocol == "SASL_SSL"
    kinds: dict[str, type[SASLPlaintext | SASLScram256 | SASLScram512]] = {
        "SCRAM-SHA-512": SASLScram512,
        "SCRAM-SHA-256": SASLScram256,
        "PLAIN": SASLPlaintext,
    }
    return kinds[settings.sasl_mechanism](username, password, ssl_context=context, use_ssl=use_ssl)


def client_options(settings: KafkaSettings) -> dict[str, Any]:
    """Keyword arguments for an aiokafka client (`AIOKafkaAdminClient`, a consumer, a producer)."""
    options: dict[str, Any] = {"security_protocol": settings.security_protocol}
    context = ssl_context(settings)
    if context is not None:
        options["ssl_context"] = context
    if settings.security_protocol.startswith("SASL_"):
        options["sasl_mechanism"] = settings.sasl_mechanism
        options["sasl_plain_username"] = settings.sasl_username
        options["sasl_plain_password"] = (
            settings.sasl_password.get_secret_value() if settings.sasl_password else None
        )
    return options
