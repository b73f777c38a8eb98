"""Exporting a tenant to a directory of JSON lines, and importing it into a database, as the owner role.

The directory:

- `manifest.json`: format, the tenant's id and name, when, and for every other file its row count
  and SHA-256;
- `declarations.jsonl`: each exported store with its columns and types, and the registry's
  corpora that read those stores (an import checks the target declares the same stores);
- `stores/<store>.jsonl`: the tenant's rows of each store it has rows in;
- `system/<table>.jsonl`: its navigation memory (`nav_outcomes`, and `declared_edge_weights`, the
  weights it learned on declared graphs) and parked edges (`pending_edges`);
- `audit.jsonl`: its audit chain, every column, in seq order.

Each data line is `{"row": {...}, "sha256": <hex of the row's canonical JSON>}`; the hidden tenant
column, change marks and generated columns are left out (the target regenerates them). Rows stream
through a server-side cursor and are written as they come, so memory stays bounded whatever the
tenant's size; `progress(file, rows)` is called every `PROGRESS_EVERY` rows.

An import reads everything once before writing anything: a line whose row no longer matches its
digest, a file whose count or digest differs from the manifest, or an audit chain that does not
verify is refused naming the file and row (or seq). Then, in one transaction, it creates the tenant
(the original id and name, or a new id under `as_name`), inserts the rows in batches, and appends
the audit events again through the chain trigger: under the same tenant id an unredacted chain
comes out with the very same hashes; under a new id it is a new chain of the same events (the id
is part of every link). Rows that were redacted are redacted again.

What the digests prove: that the files are what the export wrote, against accidental damage and
edits that leave the manifest alone. Someone rewriting a file and the manifest together is not
detected (nothing is signed); the audit chain is checked by its own links.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import asyncpg
import rfc8785

from mnemo_store.audit_chain import ChainRow, ChainVerifier
from mnemo_store.errors import StoreError, UnknownTenantError
from mnemo_store.identifiers import STORE_SCHEMA, TENANT_COLUMN, quote
from mnemo_store.registry import list_corpora

FORMAT = 1
PROGRESS_EVERY = 10_000
BATCH = 1_000
SYSTEM_TABLES = ("declared_edge_weights", "nav_outcomes", "pending_edges")
"""The tables of `mnemo` with a tenant's rows that an export carries."""
NOT_CARRIED = {
    "audit_log": "carried as audit.jsonl and re-appended through its chain trigger",
    "audit_chain_heads": "the chain trigger keeps it as the audit rows are re-appended",
    "graph_revisions": "the stores' triggers move it as the rows are inserted",
    "inbox": "which event ids this database's consumers processed: not the tenant's data",
    "outbox": "events of this database still to publish: the other database never relays them",
}
"""The tables of `mnemo` with a tenant's rows that an export leaves, and why (a new tenant
table is one or the other: a test holds every one of them to these two lists)."""
_SKIPPED = (TENANT_COLUMN, "axon_changed")
_SET_TENANT = "SELECT set_config('mnemo.tenant', $1, true)"
_AUDIT_COLUMNS = (
    "seq, event_id, kind, occurred_at, producer, trace, payload, payload_digest, prev_hash,"
    " hash, recorded_at, redacted_at"
)

Progress = Callable[[str, int], None]


class ExportIntegrityError(StoreError):
    """An export directory that is not what its export wrote: names the file and row."""


@dataclass(frozen=True, slots=True)
class FileSummary:
    rows: int
    sha256: str


@dataclass(frozen=True, slots=True)
class TransferReport:
    """What an export wrote or an import restored."""

    tenant: uuid.UUID
    name: str
    files: dict[str, FileSummary] = field(default_factory=dict)
    audit_head_seq: int = 0
    audit_head_hash: str = ""


def _line(row: dict[str, Any]) -> str:
    digest = hashlib.sha256(rfc8785.dumps(row)).hexdigest()
    return json.dumps({"row": row, "sha256": digest}, ensure_ascii=False) + "\n"


class _Writer:
    def __init__(self, root: Path, relative: str, progress: Progress | None) -> None:
        self.relative = relative
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("w", encoding="utf-8")
        self._hash = hashlib.sha256()
        self.rows = 0
        self._progress = progress

    def write(self, row: dict[str, Any]) -> None:
        text = _line(row)
        self._file.write(text)
        self._hash.update(text.encode("utf-8"))
        self.rows += 1
        if self._progress is not None and self.rows % PROGRESS_EVERY == 0:
            self._progress(self.relative, self.rows)

    def close(self) -> FileSummary:
        self._file.close()
        if self._progress is not None:
            self._progress(self.relative, self.rows)
        return FileSummary(self.rows, self._hash.hexdigest())


async def _columns(connection: asyncpg.Connection, schema: str, table: str) -> list[dict[str, str]]:
    records = await connection.fetch(
        "SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type"
        " FROM pg_attribute AS a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0"
        " AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum",
        f"{quote(schema)}.{quote(table)}",
    )
    return [{"name": r["name"], "type": r["type"]} for r in records if r["name"] not in _SKIPPED]


def _row_query(schema: str, table: str, columns: list[dict[str, str]]) -> str:
    keys = ", ".join(f"'{c['name']}', t.{quote(c['name'])}" for c in columns)
    return (
        f"SELECT jsonb_build_object({keys})::text AS row FROM {quote(schema)}.{quote(table)} AS t"
        f" WHERE t.{quote(TENANT_COLUMN)} = $1"
    )


async def _stream(
    connection: asyncpg.Connection,
    query: str,
    tenant: uuid.UUID,
    writer: _Writer,
) -> FileSummary:
    async for record in connection.cursor(query, tenant, prefetch=BATCH):
        writer.write(json.loads(record["row"]))
    return writer.close()


def _prepare(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise StoreError(f"{directory} is not empty: export into a new or empty directory")


async def export_tenant(
    connection: asyncpg.Connection,
    tenant: uuid.UUID,
    directory: Path,
    progress: Progress | None = None,
) -> TransferReport:
    """Write the tenant's export into `directory` (created; must be empty) from one snapshot.

    A CLI's work: the files are written synchronously, a line at a time."""
    _prepare(directory)
    name: str | None = await connection.fetchval(
        "SELECT name FROM mnemo.tenants WHERE tenant_id = $1", tenant
    )
    if name is None:
        raise UnknownTenantError(f"unknown tenant {tenant}: `mnemo tenant list` shows the tenants")
    files: dict[str, FileSummary] = {}
    async with connection.transaction(isolation="repeatable_read", readonly=True):
        await connection.execute(_SET_TENANT, str(tenant))
        stores = [
            r["relname"]
            for r in await connection.fetch(
                "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname",
                STORE_SCHEMA,
            )
        ]
        declared: list[dict[str, Any]] = []
        for store in stores:
            columns = await _columns(connection, STORE_SCHEMA, store)
            if not await connection.fetchval(
                f"SELECT EXISTS (SELECT FROM {quote(STORE_SCHEMA)}.{quote(store)}"
                f" WHERE {quote(TENANT_COLUMN)} = $1)",
                tenant,
            ):
                continue
            declared.append({"store": store, "columns": columns})
            relative = f"stores/{store}.jsonl"
            files[relative] = await _stream(
                connection,
                _row_query(STORE_SCHEMA, store, columns),
                tenant,
                _Writer(directory, relative, progress),
            )
        for table in SYSTEM_TABLES:
            columns = await _columns(connection, "mnemo", table)
            relative = f"system/{table}.jsonl"
            files[relative] = await _stream(
                connection,
                _row_query("mnemo", table, columns),
                tenant,
                _Writer(directory, relative, progress),
            )
        corpora = await list_corpora(connection)
        writer = _Writer(directory, "declarations.jsonl", None)
        names = {d["store"] for d in declared}
        for item in declared:
            writer.write({"store": item["store"], "columns": item["columns"]})
        for corpus in corpora:
            text = json.dumps(corpus.definition)
            if any(f'"{store}"' in text for store in names):
                writer.write({"corpus": corpus.corpus_id, "definition": corpus.definition})
        files["declarations.jsonl"] = writer.close()
        audit = _Writer(directory, "audit.jsonl", progress)
        head_seq, head_hash = 0, ""
        query = (
            "SELECT jsonb_build_object('seq', seq, 'event_id', event_id, 'kind', kind,"
            " 'occurred_at', occurred_at, 'producer', producer, 'trace', trace,"
            " 'payload', payload, 'payload_digest', encode(payload_digest, 'hex'),"
            " 'prev_hash', encode(prev_hash, 'hex'), 'hash', encode(hash, 'hex'),"
            " 'recorded_at', recorded_at, 'redacted_at', redacted_at)::text AS row"
            " FROM mnemo.audit_log WHERE axon_tenant = $1 ORDER BY seq"
        )
        async for record in connection.cursor(query, tenant, prefetch=BATCH):
            row = json.loads(record["row"])
            audit.write(row)
            head_seq, head_hash = row["seq"], row["hash"]
        files["audit.jsonl"] = audit.close()
    manifest = {
        "format": FORMAT,
        "tenant_id": str(tenant),
        "name": name,
        "exported_at": datetime.now(UTC).isoformat(),
        "audit_head": {"seq": head_seq, "hash": head_hash},
        "files": {k: {"rows": v.rows, "sha256": v.sha256} for k, v in sorted(files.items())},
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return TransferReport(tenant, name, files, head_seq, head_hash)


# --------------------------------------------------------------------------------------- import


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / "manifest.json"
    try:
        manifest: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise ExportIntegrityError(f"manifest.json: cannot be read as JSON ({error})") from None
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
        raise ExportIntegrityError(f"manifest.json: not a format-{FORMAT} Mnemo tenant export")
    for relative in manifest["files"]:
        if (
            not isinstance(relative, str)
            or ".." in Path(relative).parts
            or relative.startswith("/")
        ):
            raise ExportIntegrityError(
                f"manifest.json: names a file outside the export: {relative!r}"
            )
    return manifest


def _rows(directory: Path, relative: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, row) of a data file, each line checked against its digest."""
    with (directory / relative).open("r", encoding="utf-8") as file:
        for number, text in enumerate(file, start=1):
            try:
                line = json.loads(text)
                row = line["row"]
                claimed = line["sha256"]
            except (ValueError, KeyError, TypeError):
                raise ExportIntegrityError(f"{relative} row {number}: not an export line") from None
            if hashlib.sha256(rfc8785.dumps(row)).hexdigest() != claimed:
                raise ExportIntegrityError(
                    f"{relative} row {number}: its content does not match its digest (edited after"
                    " the export)"
                )
            yield number, row


def _audit_row(tenant: uuid.UUID, row: dict[str, Any]) -> ChainRow:
    return ChainRow(
        tenant=tenant,
        seq=int(row["seq"]),
        event_id=uuid.UUID(row["event_id"]),
        kind=row["kind"],
        occurred_at=datetime.fromisoformat(row["occurred_at"]),
        producer=row["producer"],
        trace=row["trace"],
        payload=row["payload"],
        prev_hash=bytes.fromhex(row["prev_hash"]),
        hash=bytes.fromhex(row["hash"]),
        payload_digest=bytes.fromhex(row["payload_digest"]),
        redacted_at=None
        if row["redacted_at"] is None
        else datetime.fromisoformat(row["redacted_at"]),
    )


def check_export(directory: Path) -> dict[str, Any]:
    """Read the whole export once; the manifest when every file, row and audit link holds, else
    `ExportIntegrityError` naming the file and row (or seq)."""
    manifest = _read_manifest(directory)
    tenant = uuid.UUID(manifest["tenant_id"])
    for relative, expected in sorted(manifest["files"].items()):
        digest = hashlib.sha256()
        count = 0
        verifier = ChainVerifier() if relative == "audit.jsonl" else None
        try:
            with (directory / relative).open("rb") as raw:
                for chunk in iter(lambda: raw.read(1 << 20), b""):
                    digest.update(chunk)
            for number, row in _rows(directory, relative):
                count = number
                if verifier is not None:
                    try:
                        broken = verifier.feed(_audit_row(tenant, row))
                    except (KeyError, ValueError, TypeError) as error:
                        raise ExportIntegrityError(
                            f"{relative} row {number}: not an audit row ({error})"
                        ) from None
                    if broken is not None:
                        raise ExportIntegrityError(
                            f"{relative} row {number}: the audit chain breaks at seq {broken.seq}"
                            f" ({broken.problem}: {broken.detail})"
                        )
        except OSError as error:
            raise ExportIntegrityError(f"{relative}: cannot be read ({error})") from None
        if count != expected["rows"]:
            raise ExportIntegrityError(
                f"{relative}: {count} rows, the manifest says {expected['rows']} (rows removed or"
                " added after the export)"
            )
        if digest.hexdigest() != expected["sha256"]:
            raise ExportIntegrityError(
                f"{relative}: its SHA-256 differs from the manifest's (edited after the export)"
            )
    return manifest


async def _insert_batches(
    connection: asyncpg.Connection,
    directory: Path,
    relative: str,
    schema: str,
    table: str,
    tenant: uuid.UUID,
    progress: Progress | None,
) -> int:
    target = f"{quote(schema)}.{quote(table)}"
    columns = await _columns(connection, schema, table)
    names = ", ".join(quote(c["name"]) for c in columns)
    statement = (
        f"INSERT INTO {target} ({quote(TENANT_COLUMN)}, {names}) OVERRIDING SYSTEM VALUE"
        f" SELECT $1, {names} FROM jsonb_populate_recordset(NULL::{target}, $2::jsonb)"
    )
    batch: list[dict[str, Any]] = []
    count = 0
    for _, row in _rows(directory, relative):
        batch.append(row)
        if len(batch) == BATCH:
            await connection.execute(statement, tenant, json.dumps(batch))
            count += len(batch)
            batch.clear()
            if progress is not None and count % PROGRESS_EVERY == 0:
                progress(relative, count)
    if batch:
        await connection.execute(statement, tenant, json.dumps(batch))
        count += len(batch)
    identities = await connection.fetch(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attidentity <> ''",
        target,
    )
    for identity in identities:
        # The sequence is shared by every tenant: moved past what was imported, never back.
        await connection.execute(
            "SELECT setval(q.seq, greatest(s.last, coalesce(m.top, 1)))"
            " FROM (SELECT pg_get_serial_sequence($1, $2) AS seq) AS q,"
            " LATERAL (SELECT coalesce(last_value, 1) AS last FROM pg_sequences"
            "   WHERE format('%I.%I', schemaname, sequencename)::regclass = q.seq::regclass) AS s,"
            f" LATERAL (SELECT max({quote(identity['attname'])}) AS top FROM {target}) AS m",
            target,
            identity["attname"],
        )
    if progress is not None:
        progress(relative, count)
    return count


async def import_tenant(
    connection: asyncpg.Connection,
    directory: Path,
    *,
    as_name: str | None = None,
    progress: Progress | None = None,
) -> TransferReport:
    """Restore an export (see the module's text) over an owner connection; one transaction."""
    manifest = check_export(directory)
    original = uuid.UUID(manifest["tenant_id"])
    files = manifest["files"]
    declared = [row for _, row in _rows(directory, "declarations.jsonl") if "store" in row]
    for item in declared:
        have = await _columns(connection, STORE_SCHEMA, item["store"])
        if not have:
            raise StoreError(
                f"store {item['store']!r} is not declared in this database: `mnemo apply` its"
                " declarations first"
            )
        missing = [c for c in item["columns"] if c not in have]
        if missing:
            raise StoreError(
                f"store {item['store']!r} here lacks the exported columns"
                f" {', '.join(c['name'] + ' ' + c['type'] for c in missing)}"
            )
    async with connection.transaction():
        if as_name is None:
            exists = await connection.fetchval(
                "SELECT EXISTS (SELECT FROM mnemo.tenants WHERE tenant_id = $1 OR lower(name) = lower($2))",
                original,
                manifest["name"],
            )
            if exists:
                raise StoreError(
                    f"tenant {original} ({manifest['name']}) already exists here: import under"
                    " another name with --as NAME"
                )
            if await connection.fetchval(
                "SELECT EXISTS (SELECT FROM mnemo.erased_tenants WHERE tenant_id = $1)", original
            ):
                raise StoreError(
                    f"tenant {original} was erased here, and its id stays refused: import under"
                    " another name with --as NAME"
                )
            tenant, name = original, manifest["name"]
            await connection.execute(
                "INSERT INTO mnemo.tenants (tenant_id, name) VALUES ($1, $2)", tenant, name
            )
        else:
            name = as_name
            tenant = await connection.fetchval(
                "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", name
            )
        await connection.execute(_SET_TENANT, str(tenant))
        for relative in sorted(files):
            if relative.startswith("stores/"):
                store = relative.removeprefix("stores/").removesuffix(".jsonl")
                await _insert_batches(
                    connection, directory, relative, STORE_SCHEMA, store, tenant, progress
                )
            elif relative.startswith("system/"):
                table = relative.removeprefix("system/").removesuffix(".jsonl")
                if table not in SYSTEM_TABLES:
                    raise ExportIntegrityError(f"manifest.json: unknown system table {table!r}")
                await _insert_batches(
                    connection, directory, relative, "mnemo", table, tenant, progress
                )
        head_seq, head_hash = 0, ""
        redacted: list[int] = []
        for _, row in _rows(directory, "audit.jsonl"):
            record = await connection.fetchrow(
                "INSERT INTO mnemo.audit_log (axon_tenant, event_id, kind, occurred_at, producer,"
                " trace, payload) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING seq, hash",
                tenant,
                uuid.UUID(row["event_id"]),
                row["kind"],
                datetime.fromisoformat(row["occurred_at"]),
                row["producer"],
                row["trace"],
                json.dumps(row["payload"]),
            )
            head_seq, head_hash = int(record["seq"]), bytes(record["hash"]).hex()
            if row["redacted_at"] is not None:
                redacted.append(head_seq)
        if redacted:
            await connection.execute(
                "UPDATE mnemo.audit_log SET payload = '{}'::jsonb, redacted_at = now()"
                " WHERE axon_tenant = $1 AND seq = ANY($2::bigint[])",
                tenant,
                redacted,
            )
    summaries = {k: FileSummary(v["rows"], v["sha256"]) for k, v in files.items()}
    return TransferReport(tenant, name, summaries, head_seq, head_hash)
