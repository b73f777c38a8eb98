"""Errors of the telemetry set-up: a misconfiguration says what is wrong and what to set instead."""

from __future__ import annotations


class TelemetryError(Exception):
    """Base of every error raised by mnemo_telemetry."""


class TelemetryConfigError(TelemetryError, ValueError):
    """A telemetry setting or call is invalid (an endpoint that is not a URL, an unknown attribute)."""
