"""The httpx adapter of `mnemo_corpus.HttpTransport` (the corpus library itself stays pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from mnemo_corpus import HttpResponse


class HttpxTransport:
    def __init__(self, timeout: float = 30.0) -> None:
        self._client = httpx.Client(timeout=timeout)

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> HttpResponse:
        try:
            response = self._client.request(
                method, url, headers=dict(headers), params=params, json=json_body
            )
        except httpx.TransportError as error:
            raise ConnectionError(str(error) or type(error).__name__) from error
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return HttpResponse(response.status_code, body)

    def close(self) -> None:
        self._client.close()
