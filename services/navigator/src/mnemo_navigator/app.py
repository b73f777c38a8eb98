"""`create_app()`: the only place that reads settings; its lifespan opens the pool, builds the
adapters, the cache and the use case, and the HTTP API, the request consumer and the outbox relay
over them. Nothing connects until the runtime starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager

from mnemo_auth import TokenVerifier
from mnemo_events.consumer import single
from mnemo_events.models import NavigateRequested
from mnemo_events.topics import TOPICS
from mnemo_service import TRANSIENT, Composition
from mnemo_store import LoadLimits, Store
from mnemo_store.graph_cache import GraphCache
from mnemo_telemetry.http_limits import BodyLimitMiddleware
from mnemo_telemetry.service import ServiceRuntime

from mnemo_navigator.adapters import (
    PostgresCatalogue,
    PostgresStoredDocuments,
    PostgresStoreDirectory,
    PostgresTransactions,
    PostgresWriteLog,
)
from mnemo_navigator.catalogue_routes import catalogue_router
from mnemo_navigator.console import console_router
from mnemo_navigator.corpus_forms import FormsNavigator, PostgresDeclaredCorpora
from mnemo_navigator.mcp_corpora import McpCorpora
from mnemo_navigator.mcp_http import mount_mcp, published_corpora
from mnemo_navigator.ports import Catalogue, Transactions
from mnemo_navigator.prefetch import Prefetcher, PrefetchPolicy
from mnemo_navigator.prefetch_routes import prefetch_router
from mnemo_navigator.registry_adapters import HttpGateway, PostgresRegistry
from mnemo_navigator.routes import TokenFirstMiddleware, api_router, install_error_handlers
from mnemo_navigator.settings import Settings
from mnemo_navigator.store_routes import store_router
from mnemo_navigator.subscribers import navigate_requested_handler
from mnemo_navigator.use_cases import Navigator, Policy
from mnemo_navigator.writes import WritePolicy, Writes

SERVICE = "navigator"


def build_navigator(
    settings: Settings,
    transactions: Transactions,
    catalogue: Catalogue,
    pinned_scopes: Mapping[str, str] | None = None,
) -> Navigator:
    policy = Policy(
        pinned_scopes=dict(settings.pinned_scopes) if pinned_scopes is None else pinned_scopes,
        audit_query_text=settings.audit_query_text == "text",
        audit_topic=settings.audit_topic,
        default_budget=settings.default_budget,
        limits=LoadLimits(max_documents=settings.max_documents, max_edges=settings.max_edges),
        tenant_cache_seconds=settings.tenant_cache_seconds,
        max_navigations=settings.max_navigations,
    )
    cache = GraphCache(
        settings.cache_max_bytes,
        tenant_share=settings.cache_tenant_share,
        scopes_per_corpus=settings.cache_scopes_per_corpus,
    )
    return Navigator(transactions, catalogue, cache, policy)


@contextmanager
def compute_threads(count: int) -> Iterator[None]:
    """Every `asyncio.to_thread` of the process (graph work) on `count` threads of its own while
    the service runs; the loop's previous pool afterwards (a test's loop outlives the service)."""
    loop = asyncio.get_running_loop()
    state = vars(loop)  # asyncio keeps its pool in `_default_executor` and has no getter
    previous = state.get("_default_executor")
    threads = ThreadPoolExecutor(count, thread_name_prefix="mnemo-compute")
    loop.set_default_executor(threads)
    try:
        yield
    finally:
        state["_default_executor"] = previous
        threads.shutdown(wait=False)


def create_app(
    settings: Settings | None = None, *, pinned_scopes: Mapping[str, str] | None = None
) -> ServiceRuntime:
    """The navigator process. `pinned_scopes` replaces the settings' table with a live mapping
    (tests pin scopes of corpora they declare while the service runs)."""
    settings = settings or Settings()
    verifier = TokenVerifier(settings.token_keys())
    # Kafka for the navigate requests and for the outbox relay of the query audit events.
    kit = Composition(
        SERVICE,
        settings,
        broker=settings.consume_requests or settings.relay_outbox,
        client_id="mnemo.navigator",
    )
    app = kit.http_app(
        title="Mnemo navigator",
        version="1",
        description="Navigate, retrieve and search living knowledge graphs (bearer JWT).",
    )
    # Outermost last (the kit adds metrics outermost): the token is checked, then the body
    # bounded, before anything reads the body.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(TokenFirstMiddleware, verifier=verifier)
    install_error_handlers(app, TRANSIENT)

    @asynccontextmanager
    async def lifespan(kit: Composition) -> AsyncIterator[None]:
        with compute_threads(settings.compute_threads):
            async with serving(kit):
                yield

    @asynccontextmanager
    async def serving(kit: Composition) -> AsyncIterator[None]:
        if kit.broker is not None:
            await kit.ensure_topics(
                *TOPICS,
                settings.requests_topic,
                settings.audit_topic,
                settings.persist_topic,
                settings.forget_topic,
            )
        pool = await kit.pool(
            settings.database_url, max_size=settings.pool_size, command_timeout=60
        )
        navigator = build_navigator(
            settings, PostgresTransactions(Store(pool)), PostgresCatalogue(pool), pinned_scopes
        )
        app.state.navigator = navigator  # its graph cache, for tests that look inside
        mcp = McpCorpora(
            settings.mcp_servers,
            ttl_seconds=settings.mcp_cache_seconds,
            timeout_seconds=settings.mcp_timeout_seconds,
        )
        forms = FormsNavigator(
            navigator, PostgresCatalogue(pool), PostgresDeclaredCorpora(pool), mcp
        )
        if settings.consume_requests:
            kit.consume(
                topic=settings.requests_topic,
                group=settings.group,
                data_model=NavigateRequested,
                handler=single(navigate_requested_handler(forms, kit.broker, verifier)),
            )
        kit.include(api_router(forms, verifier))
        # Routes, prefetch, the catalogue and its console (issue 25).
        registry = PostgresRegistry(pool)
        gateway = HttpGateway(settings.prefetch_timeout_seconds)
        prefetcher = Prefetcher(
            registry,
            gateway,
            PostgresTransactions(Store(pool)),
            navigator.admit,
            PrefetchPolicy(
                settings.audit_query_text == "text",
                settings.audit_topic,
                (settings.gateway_url or f"http://{settings.host}:{settings.port}").rstrip("/")
                + "/v1/corpora/",
            ),
        )
        kit.include(prefetch_router(prefetcher, verifier))
        kit.include(catalogue_router(registry, verifier))
        kit.include(console_router())
        relay = await kit.relay(
            settings, (settings.audit_topic, settings.persist_topic, settings.forget_topic)
        )
        # Rows written over HTTP, through the outbox to ingest (issue 23).
        writes = Writes(
            PostgresCatalogue(pool),
            PostgresStoreDirectory(pool),
            PostgresWriteLog(pool, settings.ingest_inbox, relay),
            WritePolicy(
                pinned_scopes=dict(settings.pinned_scopes)
                if pinned_scopes is None
                else pinned_scopes,
                persist_topic=settings.persist_topic,
                forget_topic=settings.forget_topic,
                publish_seconds=settings.write_publish_seconds,
            ),
            PostgresStoredDocuments(pool),
        )
        kit.include(store_router(writes, verifier))
        # MCP over streamable HTTP beside the API, with the same bearer tokens (issue 23).
        async with mount_mcp(app, verifier, forms, published_corpora(pool)):
            yield
        await gateway.close()

    return kit.runtime(lifespan)
