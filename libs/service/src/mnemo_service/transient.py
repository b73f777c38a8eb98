"""The failures every service treats as an outage, not as a bad message: a consumer retries them
(and reports not ready meanwhile) instead of dead-lettering, and an HTTP API answers 503."""

from __future__ import annotations

import asyncpg

TRANSIENT: tuple[type[Exception], ...] = (
    # A missing grant is a deployment fault, not a poison message: retried until fixed.
    asyncpg.InsufficientPrivilegeError,
    OSError,
    ConnectionError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    # The server shutting down or restarting (AdminShutdownError and its kin): an outage too.
    asyncpg.OperatorInterventionError,
    asyncpg.DeadlockDetectedError,
    asyncpg.SerializationError,
)
