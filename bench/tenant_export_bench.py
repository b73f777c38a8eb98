"""How `mnemo tenant export` and `mnemo tenant import` scale: time and peak memory per size.

For each size N it declares a documents + edges store pair of its own (`mnemo apply`'s code path),
creates a tenant with N documents and N edges (bodies of about 300 characters) and 3 audit rows,
then runs `mnemo tenant export` and `mnemo tenant import --as` as child processes, each timed and
measured by its own peak resident memory (`ru_maxrss`). Memory that stays flat while N
grows tenfold is what "streams in bounded memory" means. Everything it made is erased and dropped
afterwards. Runs as the owner role (`MNEMO_OWNER_DATABASE_URL`), writes with the application role
(`MNEMO_DATABASE_URL`) and appends audit rows as `MNEMO_AUDIT_DATABASE_URL`.

    python bench/tenant_export_bench.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from mnemo_axon.compiler import load_deployment
from mnemo_store import Store, StoreCorpus
from mnemo_store.applier import apply_deployment
from mnemo_store.audit_log import AuditLog, NewAuditEvent
from mnemo_store.erasure import erase_tenant
from mnemo_store.identifiers import store_table

LOCAL = "postgresql://{0}:{0}@127.0.0.1:25432/mnemo"
DECLARATIONS = """
axonstore BenchDocs_{s} {{
    backend: postgresql
    schema {{ id: Uuid primary_key  title: Text not_null  body: Text }}
}}
axonstore BenchEdges_{s} {{
    backend: postgresql
    schema {{ from_id: Uuid not_null  to_id: Uuid not_null  etype: Text not_null  weight: Float not_null }}
}}
corpus BenchGraph_{s} from axonstore {{
    documents: BenchDocs_{s}(id, title, body)
    relations: BenchEdges_{s}(from_id, to_id, etype, weight)
}}
"""


_CHILD = (
    "import resource, sys\n"
    "from mnemo_cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "raise SystemExit(code)\n"
)


def child(argv: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of `mnemo …` run as a child process of its own."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - started
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


async def fill(store: Store, corpus: StoreCorpus, tenant: uuid.UUID, n: int) -> None:
    ids = [uuid.uuid4() for _ in range(n)]
    body = "words about rivers, deltas and the mountains they come from; " * 5
    for start in range(0, n, 5000):
        chunk = ids[start : start + 5000]
        async with store.tenant(tenant) as tx:
            await tx.insert_rows(
                corpus.documents,
                [
                    {"id": d, "title": f"note {start + i}", "body": body}
                    for i, d in enumerate(chunk)
                ],
            )
            await tx.insert_rows(
                corpus.relations,
                [
                    {
                        "from_id": d,
                        "to_id": ids[(start + i) * 7 % n],
                        "etype": "cite",
                        "weight": 0.5,
                    }
                    for i, d in enumerate(chunk)
                ],
            )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    owner_dsn = os.environ.get("MNEMO_OWNER_DATABASE_URL", LOCAL.format("mnemo_owner"))
    os.environ["MNEMO_OWNER_DATABASE_URL"] = owner_dsn
    app_dsn = os.environ.get("MNEMO_DATABASE_URL", LOCAL.format("mnemo_app"))
    audit_dsn = os.environ.get("MNEMO_AUDIT_DATABASE_URL", LOCAL.format("mnemo_audit"))
    owner = await asyncpg.connect(owner_dsn)
    suffix = uuid.uuid4().hex[:8]
    deployment = load_deployment(DECLARATIONS.format(s=suffix), "bench.axon")
    await apply_deployment(owner, deployment, gateway_base_url="http://127.0.0.1:8080")
    corpus = StoreCorpus.from_deployment(deployment, f"BenchGraph_{suffix}")
    work = Path(tempfile.mkdtemp(prefix="mnemo-export-bench-"))
    made: list[uuid.UUID] = []
    print(
        f"{'documents':>10} {'export s':>9} {'export MB':>10} {'import s':>9} {'import MB':>10} {'files MB':>9}"
    )
    try:
        async with (
            await Store.connect(app_dsn, max_size=2) as store,
            await AuditLog.connect(audit_dsn) as audit,
        ):
            for n in args.sizes:
                name = f"bench-export-{suffix}-{n}"
                tenant: uuid.UUID = await owner.fetchval(
                    "INSERT INTO mnemo.tenants (name) VALUES ($1) RETURNING tenant_id", name
                )
                made.append(tenant)
                await fill(store, corpus, tenant, n)
                await audit.append(
                    tenant,
                    [
                        NewAuditEvent(
                            uuid.uuid4(), "query", datetime.now(UTC), "bench", None, {"n": i}
                        )
                        for i in range(3)
                    ],
                )
                out = work / str(n)
                export_s, export_mb = child(["tenant", "export", name, str(out), "--quiet"])
                size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
                import_s, import_mb = child(
                    ["tenant", "import", str(out), "--as", name + "-copy", "--quiet"]
                )
                copy = await owner.fetchval(
                    "SELECT tenant_id FROM mnemo.tenants WHERE name = $1", name + "-copy"
                )
                made.append(copy)
                print(
                    f"{n:>10} {export_s:>9.1f} {export_mb:>10.0f} {import_s:>9.1f} {import_mb:>10.0f} {size:>9.1f}"
                )
    finally:
        for tenant in made:
            await erase_tenant(owner, tenant)
        for store_decl in deployment.stores:
            await owner.execute(f"DROP TABLE IF EXISTS {store_table(store_decl.name)}")
        await owner.execute("DELETE FROM mnemo.corpora WHERE corpus_id = $1", corpus.name)
        await owner.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
