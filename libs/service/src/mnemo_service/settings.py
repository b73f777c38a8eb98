"""The settings every service shares: `ServiceSettings` (what each one has), `AuthSettings` (how
bearer tokens are verified) and `RelaySettings` (the outbox relay), each read from the service's
own prefix (`MNEMO_NAVIGATOR_PORT`, `MNEMO_AUDIT_TOKEN_SECRET`, ...).

    class Settings(ServiceSettings, AuthSettings):
        model_config = SettingsConfigDict(env_prefix="MNEMO_AUDIT_", frozen=True, extra="ignore")
        port: int = 8083

A few names are also read without the service's prefix, as one value for every service:
`MNEMO_TOKEN_SECRET`, `MNEMO_TOKEN_PUBLIC_KEY`, `MNEMO_JWKS_URL` (what `mnemo token` signs with),
`MNEMO_TOKEN_ISSUER`, `MNEMO_TOKEN_AUDIENCE`, `MNEMO_DEVELOPMENT` and `MNEMO_RELAY_DATABASE_URL`.
The service's own name wins when both are set.

A service with an HTTP API fails closed: without a token key it refuses to start, unless
`MNEMO_DEVELOPMENT` is on (the local stack and the tests), where it verifies with the public
development key. `load_settings` turns a refused configuration into one line and exit status 2.
"""

from __future__ import annotations

import sys
from typing import Any, Self, TypeVar

from mnemo_auth import DEFAULT_AUDIENCE, DEFAULT_ISSUER, DEVELOPMENT_SECRET, TokenKeys
from mnemo_events.settings import KafkaSettings
from mnemo_telemetry.http_limits import HttpSettings
from mnemo_telemetry.tracing import TracingSettings
from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

SHARED_NAMES = frozenset(
    {
        "token_secret",
        "token_public_key",
        "jwks_url",
        "token_issuer",
        "token_audience",
        "development",
        "relay_database_url",
    }
)
"""Fields also read as `MNEMO_<FIELD>`, the same for every service."""


class _SharedEnv(EnvSettingsSource):
    """`MNEMO_<FIELD>` for the fields of `SHARED_NAMES` only (below the service's own names)."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls, env_prefix="MNEMO_")

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if field_name not in SHARED_NAMES:
            return None, field_name, False
        return super().get_field_value(field, field_name)


S = TypeVar("S", bound=BaseSettings)


class ServiceSettings(BaseSettings):
    """What every service is configured with; a service's class sets its `env_prefix`, its
    `port` and `database_url` defaults, and adds its own fields."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    database_url: SecretStr = SecretStr("postgresql://mnemo:mnemo@127.0.0.1:25432/mnemo")
    """As the service's own least-privilege role (`MNEMO_<SERVICE>_DATABASE_URL`)."""
    pool_size: int = Field(default=4, ge=1)
    log_level: str = "INFO"
    http: HttpSettings = Field(default_factory=HttpSettings)
    """`MNEMO_HTTP_…`: connection cap, header/body/keep-alive time-outs (every service's)."""
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    """`MNEMO_KAFKA_…`."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """`MNEMO_OTLP_ENDPOINT`: where spans go (none: made, exported nowhere)."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            _SharedEnv(settings_cls),
            dotenv_settings,
            file_secret_settings,
        )


class AuthSettings(BaseSettings):
    """How a service with an HTTP API verifies bearer tokens: exactly one key source of
    `jwks_url`, `token_public_key`, `token_secret`. None set, the service refuses to start, unless
    `development` is on: then it verifies with the public local development key."""

    token_secret: SecretStr | None = None
    """HS256 shared secret."""
    token_public_key: str | None = None
    """PEM public key (RS256/ES256)."""
    jwks_url: str | None = None
    token_issuer: str = DEFAULT_ISSUER
    token_audience: str = DEFAULT_AUDIENCE
    development: bool = False
    """`MNEMO_DEVELOPMENT`: with no key set, verify with `mnemo_auth.DEVELOPMENT_SECRET` (public:
    the local stack and the tests only). Off, a missing key refuses the configuration."""

    @model_validator(mode="after")
    def _one_key_source(self) -> Self:
        prefix = str(self.model_config.get("env_prefix") or "MNEMO_")
        names = f"{prefix}TOKEN_SECRET, {prefix}TOKEN_PUBLIC_KEY or {prefix}JWKS_URL"
        given = [name for name, value in self._key_sources().items() if value]
        if len(given) > 1:
            raise ValueError(f"set one token key of {names}, not {len(given)} ({', '.join(given)})")
        if not given and not self.development:
            raise ValueError(
                f"no token key: set {names} (or MNEMO_TOKEN_SECRET, ...), "
                "or MNEMO_DEVELOPMENT=1 to use the public development key locally"
            )
        return self

    def _key_sources(self) -> dict[str, bool]:
        secret = self.token_secret.get_secret_value() if self.token_secret else ""
        return {
            "token_secret": bool(secret),
            "token_public_key": bool(self.token_public_key),
            "jwks_url": bool(self.jwks_url),
        }

    def token_keys(self) -> TokenKeys:
        """The one key source configured (the development key in development mode, when none is)."""
        issuer, audience = self.token_issuer, self.token_audience
        if self.jwks_url:
            return TokenKeys(jwks_url=self.jwks_url, issuer=issuer, audience=audience)
        if self.token_public_key:
            return TokenKeys(public_key=self.token_public_key, issuer=issuer, audience=audience)
        secret = self.token_secret.get_secret_value() if self.token_secret else ""
        if not secret and not self.development:  # the validator refuses this; never fall open
            raise ValueError("no token key configured")
        return TokenKeys(secret=secret or DEVELOPMENT_SECRET, issuer=issuer, audience=audience)


class RelaySettings(BaseSettings):
    """The outbox relay of a service that writes outbox rows."""

    relay_database_url: SecretStr = SecretStr(
        "postgresql://mnemo_relay:mnemo_relay@127.0.0.1:25432/mnemo"
    )
    """The relay connects as `mnemo_relay`, whose policy reaches the outbox only
    (`MNEMO_RELAY_DATABASE_URL`)."""
    relay_batch_size: int = Field(default=500, ge=1)
    relay_outbox: bool = True
    """Run the relay in this process (off: another process publishes the outbox)."""


def load_settings(settings_cls: type[S], service: str) -> S:
    """`settings_cls()` from the environment, or exit with status 2 and one line on stderr that
    names each refused setting (a service's `__main__` starts with this)."""
    try:
        return settings_cls()
    except ValidationError as error:
        # A nested settings class (KafkaSettings, ...) raises its own error: name it.
        where = "" if error.title == settings_cls.__name__ else f"{error.title} "
        reasons = "; ".join(
            f"{where}{'.'.join(str(part) for part in e['loc']) or 'settings'}: {e['msg']}"
            for e in error.errors()
        )
        print(f"{service}: refusing to start: {reasons}", file=sys.stderr)
        raise SystemExit(2) from None
