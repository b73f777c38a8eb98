"""The navigator's spans and metrics, kept beside the use cases rather than inside them.

- `traced_navigation` wraps `Navigator.navigate` in a `mnemo.navigate` span (corpus, mode, cache
  state, EPR iterations, hits returned, and `mnemo.navigate.<phase>_ms` for each phase the
  navigation timed) and records `mnemo_navigate_duration_seconds` and
  `mnemo_graph_cache_requests_total` for navigations that were served;
- `traced_retrieval` wraps `Navigator.retrieve` (and so search) in a `mnemo.retrieve` span;
- `observe_graph` is called by `navigate` once it holds the graph: graph size on the span, and
  `mnemo_epr_seconds` for the one EPR computation each graph object gets (EPR is memoised on the
  graph, so a cached graph is timed only the first time).

Failed navigations (unknown corpus, bad filter) end their span with the error and record no
latency: a corpus label only ever comes from a corpus that was served.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from mnemo_mdn import DEFAULT_PARAMS, CorpusGraph, epr
from mnemo_telemetry.metrics import EPR_SECONDS, GRAPH_CACHE_REQUESTS, NAVIGATE_DURATION
from mnemo_telemetry.tracing import current_span, navigate_span, retrieve_span

Method = TypeVar("Method", bound=Callable[..., Awaitable[Any]])

_EPR_TIMED = "mnemo_navigator:epr-timed"
CACHE_RESULTS = frozenset({"hit", "miss", "refresh"})


def traced_navigation(method: Method) -> Method:
    @functools.wraps(method)
    async def navigate(
        self: Any, caller: Any, corpus_id: str, request: Any, *args: Any, **options: Any
    ) -> Any:
        started = time.perf_counter()
        with navigate_span(
            tenant=str(caller.principal.tenant), corpus=corpus_id, mode=request.mode
        ) as span:
            result = await method(self, caller, corpus_id, request, *args, **options)
            iterations = result.navigation.diagnostics.get("epr_iterations")
            span.set(
                cache=result.cache,
                epr_iterations=iterations if isinstance(iterations, int) else None,
                hits=len(result.navigation.hits),
            )
            for phase, ms in result.timings.items():
                span.span.set_attribute(f"mnemo.navigate.{phase}_ms", round(ms, 3))
        NAVIGATE_DURATION.labels(corpus=corpus_id, mode=request.mode).observe(
            time.perf_counter() - started
        )
        if result.cache in CACHE_RESULTS:
            GRAPH_CACHE_REQUESTS.labels(corpus=corpus_id, result=result.cache).inc()
        return result

    return cast(Method, navigate)


def traced_retrieval(method: Method) -> Method:
    @functools.wraps(method)
    async def retrieve(self: Any, caller: Any, corpus_id: str, *args: Any, **options: Any) -> Any:
        with retrieve_span(tenant=str(caller.principal.tenant), corpus=corpus_id) as span:
            result = await method(self, caller, corpus_id, *args, **options)
            span.set(hits=len(result.items))
        return result

    return cast(Method, retrieve)


async def observe_graph(graph: CorpusGraph) -> None:
    """Graph size on the current (navigate) span; the graph's EPR computed and timed once."""
    current_span().set(graph_documents=graph.n_documents, graph_edges=graph.n_edges)
    marker = object()
    if graph.memo(_EPR_TIMED, lambda: marker) is marker:  # first time this graph is navigated
        await asyncio.to_thread(_timed_epr, graph)


def compute_epr(graph: CorpusGraph) -> None:
    """The graph's EPR computed and timed now, in the calling thread (`observe_graph` then
    finds it done): for a caller that overlaps it with other work on a new graph."""
    marker = object()
    if graph.memo(_EPR_TIMED, lambda: marker) is marker:
        _timed_epr(graph)


def _timed_epr(graph: CorpusGraph) -> None:
    started = time.perf_counter()
    epr(graph, DEFAULT_PARAMS)  # memoised on the graph: the navigation reuses it
    EPR_SECONDS.observe(time.perf_counter() - started)
