"""The service kit: the environment names a service's settings read (its own prefix first, a few
shared names second), the token secret kept out of reprs, and the HTTP API answering 503 until
the lifespan has built it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace

import httpx
import pytest
from fastapi import APIRouter
from mnemo_auth import DEVELOPMENT_SECRET
from mnemo_service import (
    AuthSettings,
    Composition,
    RelaySettings,
    ServiceSettings,
    load_settings,
)
from pydantic import ValidationError
from pydantic_settings import SettingsConfigDict

pytestmark = pytest.mark.unit


class KitSettings(ServiceSettings, AuthSettings, RelaySettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_KIT_", frozen=True, extra="ignore")


def test_a_service_reads_its_own_prefixed_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_KIT_PORT", "9001")
    monkeypatch.setenv("MNEMO_KIT_DATABASE_URL", "postgresql://kit@db/mnemo")
    monkeypatch.setenv("MNEMO_KIT_TOKEN_SECRET", "own-secret")
    monkeypatch.setenv("MNEMO_KIT_RELAY_BATCH_SIZE", "7")
    settings = KitSettings()
    assert (settings.port, settings.database_url.get_secret_value()) == (
        9001,
        "postgresql://kit@db/mnemo",
    )
    assert settings.token_keys().secret == "own-secret"
    assert settings.relay_batch_size == 7


def test_database_passwords_never_show_in_the_settings_printed_or_dumped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_KIT_DATABASE_URL", "postgresql://kit:own-password@db/mnemo")
    monkeypatch.setenv("MNEMO_RELAY_DATABASE_URL", "postgresql://relay:relay-password@db/mnemo")
    settings = KitSettings()
    shown = f"{settings!r} {settings} {settings.model_dump()} {settings.model_dump_json()}"
    assert "own-password" not in shown
    assert "relay-password" not in shown
    assert settings.database_url.get_secret_value().endswith("own-password@db/mnemo")


def test_the_shared_token_and_relay_names_apply_when_the_service_sets_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_TOKEN_SECRET", "shared-secret")
    monkeypatch.setenv("MNEMO_RELAY_DATABASE_URL", "postgresql://relay@db/mnemo")
    monkeypatch.setenv("MNEMO_PORT", "1")  # not a shared name: ignored
    settings = KitSettings()
    assert settings.token_keys().secret == "shared-secret"
    assert settings.relay_database_url.get_secret_value() == "postgresql://relay@db/mnemo"
    assert settings.port == 8080


def test_the_services_own_name_wins_over_the_shared_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_TOKEN_SECRET", "shared-secret")
    monkeypatch.setenv("MNEMO_KIT_TOKEN_SECRET", "own-secret")
    assert KitSettings().token_keys().secret == "own-secret"


def test_the_token_secret_is_never_shown_and_no_key_means_the_development_key_in_development(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MNEMO_DEVELOPMENT", raising=False)
    settings = KitSettings(token_secret="hunter2")
    assert "hunter2" not in repr(settings)
    assert KitSettings(development=True).token_keys().secret == DEVELOPMENT_SECRET
    monkeypatch.setenv("MNEMO_DEVELOPMENT", "1")
    assert KitSettings().token_keys().secret == DEVELOPMENT_SECRET


@pytest.mark.parametrize("empty", [None, ""])
def test_without_a_token_key_outside_development_mode_the_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, empty: str | None
) -> None:
    monkeypatch.delenv("MNEMO_DEVELOPMENT", raising=False)
    monkeypatch.delenv("MNEMO_TOKEN_SECRET", raising=False)
    with pytest.raises(ValidationError, match="no token key: set MNEMO_KIT_TOKEN_SECRET"):
        KitSettings(token_secret=empty)
    monkeypatch.setenv("MNEMO_KIT_DEVELOPMENT", "false")
    monkeypatch.setenv("MNEMO_KIT_TOKEN_SECRET", "")
    with pytest.raises(ValidationError, match="MNEMO_DEVELOPMENT=1"):
        KitSettings()


def test_a_public_key_or_a_jwks_url_alone_is_a_key_outside_development_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MNEMO_DEVELOPMENT", raising=False)
    assert KitSettings(token_public_key="PEM").token_keys().public_key == "PEM"
    monkeypatch.setenv("MNEMO_JWKS_URL", "https://issuer/jwks")
    assert KitSettings().token_keys().jwks_url == "https://issuer/jwks"


def test_two_key_sources_are_refused_rather_than_one_silently_chosen() -> None:
    with pytest.raises(ValidationError, match="not 2 \\(token_secret, jwks_url\\)"):
        KitSettings(token_secret="s", jwks_url="https://issuer/jwks")
    with pytest.raises(ValidationError, match="set one token key"):
        KitSettings(token_secret="s", token_public_key="PEM")


def test_the_issuer_and_audience_are_shared_names_every_token_verifying_service_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_TOKEN_ISSUER", "https://idp.example")
    monkeypatch.setenv("MNEMO_TOKEN_AUDIENCE", "mnemo-prod")
    monkeypatch.setenv("MNEMO_KIT_TOKEN_AUDIENCE", "kit-only")
    keys = KitSettings(token_secret="s").token_keys()
    assert (keys.issuer, keys.audience) == ("https://idp.example", "kit-only")


def test_load_settings_refuses_a_bad_configuration_with_one_line_and_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MNEMO_DEVELOPMENT", raising=False)
    for setting, reason in [
        ("MNEMO_KIT_TOKEN_SECRET", "kit: refusing to start: settings: Value error, no token key: "),
        ("MNEMO_KIT_PORT", "kit: refusing to start: port: Input should be greater than or equal"),
    ]:
        monkeypatch.setenv(setting, "0" if setting.endswith("PORT") else "")
        with pytest.raises(SystemExit) as exited:
            load_settings(KitSettings, "kit")
        assert exited.value.code == 2
        line = capsys.readouterr().err
        assert line.count("\n") == 1
        assert line.startswith(reason), line
    monkeypatch.setenv("MNEMO_KIT_PORT", "9000")
    monkeypatch.setenv("MNEMO_DEVELOPMENT", "1")
    monkeypatch.setenv("MNEMO_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    with pytest.raises(SystemExit):
        load_settings(KitSettings, "kit")
    line = capsys.readouterr().err
    assert line.startswith("kit: refusing to start: KafkaSettings settings: Value error, "), line
    assert "needs MNEMO_KAFKA_SASL_USERNAME" in line


async def test_the_api_answers_503_until_the_lifespan_has_built_it_and_probes_answer_at_once() -> (
    None
):
    kit = Composition("kit", KitSettings(), broker=False)
    kit.http_app(title="kit")
    opened: list[str] = []

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        router = APIRouter()

        @router.get("/v1/thing")
        async def thing() -> dict[str, str]:
            return {"built": "yes"}

        kit.include(router)
        opened.append("open")
        yield
        opened.append("closed")

    runtime = kit.runtime(lifespan)
    assert runtime.app is not None
    transport = httpx.ASGITransport(app=runtime.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kit") as client:
        starting = await client.get("/v1/thing")
        assert starting.status_code == 503
        assert "starting" in starting.json()["detail"]
        assert (await client.get("/healthz")).status_code == 200
        not_ready = await client.get("/readyz")
        assert not_ready.status_code == 503
        assert "not connected to Postgres yet" in not_ready.text
        await runtime.start()
        assert (await client.get("/v1/thing")).json() == {"built": "yes"}
        await runtime.stop()
    assert opened == ["open", "closed"]


async def test_an_http_api_is_ready_without_kafka_and_partitions_are_reported_apart() -> None:
    kit = Composition("kit", KitSettings(development=True))  # a broker, never started
    kit.http_app(title="kit")

    async def connected() -> None:
        return None

    kit.checks["database"] = connected
    # A subscriber whose consumer has not joined its group (the broker is never started).
    kit._subscribers.append(SimpleNamespace(consumer=None, topics=[SimpleNamespace(name="t")]))
    assert set(kit.checks) == {"started", "database"}
    assert set(kit.consumer_checks) == {"kafka", "partitions"}
    assert kit.app is not None
    transport = httpx.ASGITransport(app=kit.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kit") as client:
        # Not ready while the start gate still turns requests away.
        starting = await client.get("/readyz")
        assert starting.status_code == 503
        assert set(starting.json()["problems"]) == {"started"}
        kit._started = True
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        strict = await client.get("/readyz", params={"consumers": "true"})
        assert strict.status_code == 503
        assert set(strict.json()["problems"]) == {"kafka", "partitions"}
        assert "no partitions assigned yet" in strict.json()["problems"]["partitions"]


def test_a_consumer_only_service_needs_its_broker_to_be_ready_but_not_its_partitions() -> None:
    kit = Composition("kit", KitSettings(development=True))
    assert set(kit.checks) == {"started", "database", "kafka"}
    assert set(kit.consumer_checks) == {"partitions"}
    assert "consumer-partitions" in [name for name, _ in kit._background]
