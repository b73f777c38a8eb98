"""What a verified tenant costs per transaction: plain `set_config` against a signed assertion.

Today a service enters a tenant with `set_config('mnemo.tenant', …, true)` and the tenant policy
reads that setting. The design in docs/ARCHITECTURE.md ("Tenant assertions") replaces it with a
SECURITY DEFINER setter that verifies a short-lived assertion `tenant|role|expiry|mac`
(mac = HMAC-SHA256 with pgcrypto, key readable only by the setter's owner) and leaves, next to the
tenant, a proof bound to the session, the role and the transaction start; the policy honours the
tenant only with a valid proof (`(SELECT verified_tenant())`, once per statement). This script
builds that prototype in a schema of its own, checks that it refuses what it must, and times one
transaction per mode, interleaved in rounds:

- `set only`: BEGIN; enter the tenant; COMMIT
- `set + 1 read`: BEGIN; enter the tenant; one primary-key read under the policy; COMMIT
- `set + 10 reads`: the same with ten reads (the policy's check runs once per statement)

It runs as the owner role (`MNEMO_OWNER_DATABASE_URL`, the local stack's default otherwise) with
FORCE ROW LEVEL SECURITY on its tables, creates pgcrypto when the database lacks it (a trusted
extension: the database owner may), and drops everything it made. Prints a ratio table and writes
bench/results/tenant_assertion_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import platform
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

RESULTS = Path(__file__).parent / "results" / "tenant_assertion_bench.json"
SCHEMA = "mnemo_bench_assertion"
TENANTS = 10
ROWS_PER_TENANT = 1_000
ASSERTION_SECONDS = 60

SETUP = f"""
CREATE SCHEMA {SCHEMA};
REVOKE ALL ON SCHEMA {SCHEMA} FROM PUBLIC;
-- The assertion key of each role (shared with the component that mints that role's assertions)
-- and the database's own proof key: readable only by the owner of the functions below.
CREATE TABLE {SCHEMA}.assertion_keys (role name PRIMARY KEY, key bytea NOT NULL);
CREATE TABLE {SCHEMA}.proof_key (key bytea NOT NULL);
REVOKE ALL ON {SCHEMA}.assertion_keys, {SCHEMA}.proof_key FROM PUBLIC;

CREATE FUNCTION {SCHEMA}.proof(tenant text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT encode(@ext@.hmac(
    convert_to(tenant || '|' || session_user || '|' || pg_backend_pid()::text || '|'
      || (extract(epoch FROM now()) * 1000000)::bigint::text, 'UTF8'),
    (SELECT key FROM {SCHEMA}.proof_key), 'sha256'), 'hex')
$fn$;

-- assertion = tenant|role|expiry (unix seconds)|hex(HMAC-SHA256(key(role), tenant|role|expiry))
CREATE FUNCTION {SCHEMA}.enter_tenant(assertion text) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  part text[] := string_to_array(assertion, '|');
  signing_key bytea;
BEGIN
  IF coalesce(array_length(part, 1), 0) <> 4 THEN
    RAISE EXCEPTION 'tenant assertion: expected tenant|role|expiry|mac' USING ERRCODE = '28000';
  END IF;
  IF part[2] <> session_user THEN
    RAISE EXCEPTION 'tenant assertion: issued to %, not to %', part[2], session_user
      USING ERRCODE = '28000';
  END IF;
  IF part[3] !~ '^[0-9]{{1,12}}$' OR part[3]::bigint < extract(epoch FROM clock_timestamp()) THEN
    RAISE EXCEPTION 'tenant assertion: expired or unreadable expiry' USING ERRCODE = '28000';
  END IF;
  SELECT key INTO signing_key FROM {SCHEMA}.assertion_keys WHERE role = part[2];
  IF signing_key IS NULL OR part[4] !~ '^[0-9a-f]{{64}}$' OR @ext@.hmac(
       convert_to(part[1] || '|' || part[2] || '|' || part[3], 'UTF8'), signing_key, 'sha256')
       <> decode(part[4], 'hex')
  THEN
    RAISE EXCEPTION 'tenant assertion: signature does not verify' USING ERRCODE = '28000';
  END IF;
  PERFORM set_config('mnemo.tenant', part[1]::uuid::text, true);
  PERFORM set_config('mnemo.tenant_proof', {SCHEMA}.proof(part[1]::uuid::text), true);
  RETURN part[1]::uuid;
END
$fn$;

-- The tenant the policy honours: the setting, only with the proof the setter left for this
-- session, role and transaction; otherwise NULL (no rows).
CREATE FUNCTION {SCHEMA}.verified_tenant() RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  tenant text := NULLIF(current_setting('mnemo.tenant', true), '');
  given text := current_setting('mnemo.tenant_proof', true);
BEGIN
  IF tenant IS NULL OR given IS NULL OR given <> {SCHEMA}.proof(tenant) THEN
    RETURN NULL;
  END IF;
  RETURN tenant::uuid;
END
$fn$;

CREATE TABLE {SCHEMA}.plain_rows (
  axon_tenant uuid NOT NULL, id int NOT NULL, body text NOT NULL, PRIMARY KEY (axon_tenant, id));
CREATE TABLE {SCHEMA}.verified_rows (LIKE {SCHEMA}.plain_rows INCLUDING ALL);
ALTER TABLE {SCHEMA}.plain_rows ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
ALTER TABLE {SCHEMA}.verified_rows ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON {SCHEMA}.plain_rows
  USING (axon_tenant = (SELECT NULLIF(current_setting('mnemo.tenant', true), '')::uuid));
CREATE POLICY tenant_isolation ON {SCHEMA}.verified_rows
  USING (axon_tenant = (SELECT {SCHEMA}.verified_tenant()));
"""

READ_PLAIN = f"SELECT body FROM {SCHEMA}.plain_rows WHERE axon_tenant = $1 AND id = $2"
READ_VERIFIED = f"SELECT body FROM {SCHEMA}.verified_rows WHERE axon_tenant = $1 AND id = $2"
SET_PLAIN = "SELECT set_config('mnemo.tenant', $1, true)"
SET_VERIFIED = f"SELECT {SCHEMA}.enter_tenant($1)"


def mint(key: bytes, tenant: uuid.UUID, role: str, seconds: int = ASSERTION_SECONDS) -> str:
    """An assertion as the minting component makes it (here: the benchmark, holding the key)."""
    claim = f"{tenant}|{role}|{int(time.time()) + seconds}"
    return claim + "|" + hmac.new(key, claim.encode(), hashlib.sha256).hexdigest()


def local_owner_dsn() -> str:
    port = os.environ.get("MNEMO_PG_PORT", "25432")
    default = f"postgresql://mnemo_owner:mnemo_owner@127.0.0.1:{port}/mnemo"
    return os.environ.get("MNEMO_OWNER_DATABASE_URL", default)


async def setup(connection: asyncpg.Connection, key: bytes) -> bool:
    """Build the prototype; returns whether this run created pgcrypto (and must drop it)."""
    found = await connection.fetchval(
        "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pgcrypto'"
    )
    created = found is None
    if created:
        await connection.execute(f"CREATE SCHEMA {SCHEMA}_ext")
        await connection.execute(f"CREATE EXTENSION pgcrypto SCHEMA {SCHEMA}_ext")
        found = f"{SCHEMA}_ext"
    await connection.execute(SETUP.replace("@ext@", str(found)))
    role = await connection.fetchval("SELECT session_user")
    await connection.execute(f"INSERT INTO {SCHEMA}.assertion_keys VALUES ($1, $2)", role, key)
    await connection.execute(f"INSERT INTO {SCHEMA}.proof_key VALUES ($1)", secrets.token_bytes(32))
    return created


async def seed(connection: asyncpg.Connection, key: bytes, role: str) -> None:
    for k in range(TENANTS):
        tenant = uuid.UUID(int=k + 1)
        async with connection.transaction():
            await connection.execute(SET_PLAIN, str(tenant))
            await connection.execute(
                f"INSERT INTO {SCHEMA}.plain_rows SELECT $1::uuid, i, md5($1::uuid::text || i)"
                " FROM generate_series(1, $2) AS i",
                tenant,
                ROWS_PER_TENANT,
            )
        async with connection.transaction():
            await connection.execute(SET_VERIFIED, mint(key, tenant, role))
            await connection.execute(
                f"INSERT INTO {SCHEMA}.verified_rows SELECT $1::uuid, i, md5($1::uuid::text || i)"
                " FROM generate_series(1, $2) AS i",
                tenant,
                ROWS_PER_TENANT,
            )


async def teardown(connection: asyncpg.Connection, created_extension: bool) -> None:
    await connection.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    if created_extension:
        await connection.execute("DROP EXTENSION IF EXISTS pgcrypto")
        await connection.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}_ext CASCADE")


async def checks(connection: asyncpg.Connection, key: bytes, role: str) -> dict[str, bool]:
    """What the prototype must refuse, and what it must allow."""
    tenant, other = uuid.UUID(int=1), uuid.UUID(int=2)
    count = f"SELECT count(*) FROM {SCHEMA}.verified_rows"
    results: dict[str, bool] = {}
    async with connection.transaction():
        await connection.execute(SET_PLAIN, str(tenant))
        results["the plain setting alone reads no rows"] = await connection.fetchval(count) == 0
    async with connection.transaction():
        await connection.execute(SET_PLAIN, str(tenant))
        await connection.execute("SELECT set_config('mnemo.tenant_proof', $1, true)", "0" * 64)
        results["a forged proof reads no rows"] = await connection.fetchval(count) == 0
    async with connection.transaction():
        await connection.execute(SET_VERIFIED, mint(key, tenant, role))
        rows = await connection.fetch(f"SELECT DISTINCT axon_tenant FROM {SCHEMA}.verified_rows")
        results["a valid assertion reads exactly its tenant"] = [r[0] for r in rows] == [tenant]
        await connection.execute(SET_PLAIN, str(other))
        results["switching the setting afterwards reads no rows"] = (
            await connection.fetchval(count) == 0
        )
    async with connection.transaction():
        await connection.execute(SET_VERIFIED, mint(key, tenant, role))
        proof = await connection.fetchval("SELECT current_setting('mnemo.tenant_proof')")
    async with connection.transaction():
        await connection.execute(SET_PLAIN, str(tenant))
        await connection.execute("SELECT set_config('mnemo.tenant_proof', $1, true)", proof)
        results["a proof replayed in a later transaction reads no rows"] = (
            await connection.fetchval(count) == 0
        )
    for name, assertion in (
        ("an expired assertion is refused", mint(key, tenant, role, seconds=-5)),
        ("an assertion for another role is refused", mint(key, tenant, "mnemo_navigator")),
        ("an assertion signed with another key is refused", mint(b"x" * 32, tenant, role)),
        ("a changed tenant is refused", mint(key, tenant, role).replace(str(tenant), str(other))),
    ):
        try:
            async with connection.transaction():
                await connection.execute(SET_VERIFIED, assertion)
            results[name] = False
        except asyncpg.InvalidAuthorizationSpecificationError:
            results[name] = True
    return results


Transaction = Callable[[], Awaitable[None]]


def workloads(
    connection: asyncpg.Connection, key: bytes, role: str, plain: Any, verified: Any
) -> dict[str, tuple[Transaction, Transaction]]:
    tenants = [uuid.UUID(int=k + 1) for k in range(TENANTS)]
    counter = {"n": 0}

    def pick() -> tuple[uuid.UUID, int]:
        counter["n"] += 1
        n = counter["n"]
        return tenants[n % TENANTS], 1 + (n * 7919) % ROWS_PER_TENANT

    def make(reads: int, verify: bool) -> Transaction:
        async def run() -> None:
            tenant, row = pick()
            async with connection.transaction():
                if verify:
                    await connection.execute(SET_VERIFIED, mint(key, tenant, role))
                else:
                    await connection.execute(SET_PLAIN, str(tenant))
                for r in range(reads):
                    statement = verified if verify else plain
                    value = await statement.fetchval(tenant, 1 + (row + r) % ROWS_PER_TENANT)
                    if value is None:
                        raise AssertionError("a read under the tenant found no row")

        return run

    return {
        "set only": (make(0, False), make(0, True)),
        "set + 1 read": (make(1, False), make(1, True)),
        "set + 10 reads": (make(10, False), make(10, True)),
    }


async def timed(run: Transaction, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": round(statistics.median(ordered), 1),
        "p95_us": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        "mean_us": round(statistics.fmean(ordered), 1),
    }


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dsn", default=local_owner_dsn(), help="an owner-role URL")
    parser.add_argument("--transactions", type=int, default=3000, help="per mode and workload")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    args = parser.parse_args(argv)
    key = secrets.token_bytes(32)
    connection = await asyncpg.connect(args.dsn)
    created = False
    try:
        await teardown(connection, created_extension=False)
        created = await setup(connection, key)
        role = str(await connection.fetchval("SELECT session_user"))
        await seed(connection, key, role)
        verdicts = await checks(connection, key, role)
        plain = await connection.prepare(READ_PLAIN)
        verified = await connection.prepare(READ_VERIFIED)
        load = workloads(connection, key, role, plain, verified)
        per_round = max(1, args.transactions // args.rounds)
        samples: dict[str, dict[str, list[float]]] = {
            name: {"plain": [], "verified": []} for name in load
        }
        for plain_run, verified_run in load.values():  # warm-up
            await timed(plain_run, 200)
            await timed(verified_run, 200)
        for _ in range(args.rounds):
            for name, (plain_run, verified_run) in load.items():
                samples[name]["plain"] += await timed(plain_run, per_round)
                samples[name]["verified"] += await timed(verified_run, per_round)
        server = await connection.fetchval("SHOW server_version")
    finally:
        await teardown(connection, created)
        await connection.close()

    print("checks:")
    for name, ok in verdicts.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print()
    header = f"{'workload':<16}{'plain median':>14}{'verified median':>17}{'ratio':>8}"
    header += f"{'plain p95':>11}{'verified p95':>14}{'ratio':>8}{'added':>10}"
    print(header)
    rows = []
    for name, modes in samples.items():
        p, v = summary(modes["plain"]), summary(modes["verified"])
        row = {
            "workload": name,
            "transactions": len(modes["plain"]),
            "plain": p,
            "verified": v,
            "median_ratio": round(v["median_us"] / p["median_us"], 2),
            "p95_ratio": round(v["p95_us"] / p["p95_us"], 2),
            "added_median_us": round(v["median_us"] - p["median_us"], 1),
        }
        rows.append(row)
        print(
            f"{name:<16}{p['median_us']:>12.1f}us{v['median_us']:>15.1f}us"
            f"{row['median_ratio']:>7.2f}x{p['p95_us']:>9.1f}us{v['p95_us']:>12.1f}us"
            f"{row['p95_ratio']:>7.2f}x{row['added_median_us']:>8.1f}us"
        )
    try:
        load_average = os.getloadavg()[0]
    except OSError:
        load_average = float("nan")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "tenant_assertion_bench",
                "postgres": server,
                "python": platform.python_version(),
                "load_average_1m": round(load_average, 2),
                "tenants": TENANTS,
                "rows_per_tenant": ROWS_PER_TENANT,
                "checks": verdicts,
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(
        f"\nwrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}"
    )
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
