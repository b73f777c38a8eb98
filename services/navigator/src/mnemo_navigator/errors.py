"""What can go wrong serving a request, each error with the HTTP status it answers."""

from __future__ import annotations


class NavigatorError(Exception):
    """Base of every error of the navigator; `status` is its HTTP status, `code` a stable name."""

    status = 400
    code = "BAD_REQUEST"


class UnknownCorpusError(NavigatorError):
    status = 404
    code = "NOT_FOUND"


class CorpusNotServedError(NavigatorError):
    """The corpus exists but is not `published`, or is not a kind the navigator serves."""

    status = 409
    code = "CORPUS_NOT_SERVED"


class ScopeForbiddenError(NavigatorError):
    """A client-confined token asked for a corpus without a pinned scope, or cannot bind it."""

    status = 403
    code = "SCOPE_FORBIDDEN"


class InvalidRequestError(NavigatorError):
    """A filter, seed or parameter the navigator cannot use; the message says which and why."""

    status = 422
    code = "INVALID_REQUEST"


class UnknownTenantError(NavigatorError):
    """The token's tenant is not a row of `mnemo.tenants` (never created, or removed)."""

    status = 403
    code = "UNKNOWN_TENANT"


class NavigatorBusyError(NavigatorError):
    """As many navigations are in flight as the navigator takes (`Policy.max_navigations`): it
    answers at once instead of queueing work its callers will have given up on."""

    status = 503
    code = "BUSY"
