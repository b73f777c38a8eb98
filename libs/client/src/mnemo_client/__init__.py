"""mnemo-client: Mnemo's navigator API for Python apps, typed (pydantic) and on httpx, sync and
async; `MnemoCorpus` as a `CorpusProtocol`. The MCP server over it is `mnemo_client.mcp`
(the `mcp` extra)."""

from mnemo_client.client import AsyncMnemoClient, MnemoClient
from mnemo_client.corpus import CorpusEntry, MnemoCorpus
from mnemo_client.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MnemoError,
    NoAnswerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    UnavailableError,
)
from mnemo_client.models import (
    Chunk,
    CorpusInfo,
    Document,
    DocumentsPage,
    ErrorBody,
    ErrorDetail,
    ForgetAccepted,
    Hit,
    NavigateRequest,
    NavigateResponse,
    RetrievedItem,
    RetrieveRequest,
    RetrieveResponse,
    SearchRequest,
    SearchResponse,
    Via,
    WriteAccepted,
    WriteRequest,
)
from mnemo_client.retry import RetryPolicy

__all__ = [
    "AsyncMnemoClient",
    "AuthenticationError",
    "BadRequestError",
    "Chunk",
    "ConflictError",
    "CorpusEntry",
    "CorpusInfo",
    "Document",
    "DocumentsPage",
    "ErrorBody",
    "ErrorDetail",
    "ForgetAccepted",
    "Hit",
    "MnemoClient",
    "MnemoCorpus",
    "MnemoError",
    "NavigateRequest",
    "NavigateResponse",
    "NoAnswerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RetrieveRequest",
    "RetrieveResponse",
    "RetrievedItem",
    "RetryPolicy",
    "SearchRequest",
    "SearchResponse",
    "UnavailableError",
    "Via",
    "WriteAccepted",
    "WriteRequest",
]
