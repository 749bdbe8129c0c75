"""Exceptions raised by the KVPool clients.

Every error is a :class:`KvpoolError`. Errors a server answered carry its HTTP status and its own message
(``status``, ``message``), so an engine can log what the server said rather than a generic failure.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "KvpoolError",
    "InvalidArgument",
    "TransportError",
    "ProtocolError",
    "HttpError",
    "BadRequest",
    "NotFound",
    "PayloadTooLarge",
    "ServerError",
    "MetaError",
    "LayerwiseLoadFailed",
]


class KvpoolError(Exception):
    """Base of every error of this package.

    Attributes:
        status: the HTTP status the server answered, or None when no answer came (or the error is the client's).
        message: what went wrong, in the server's words where the server said it.
        route: the route called (``/v1/load``, ``/api/startWriteCache``), when one was.
    """

    def __init__(self, message: str, *, status: Optional[int] = None, route: Optional[str] = None) -> None:
        self.status: Optional[int] = status
        self.message: str = message
        self.route: Optional[str] = route
        where = f"{route}: " if route else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}")


class InvalidArgument(KvpoolError, ValueError):
    """Refused by the client before anything was sent (a bad key, offset, length); also a ValueError."""


class TransportError(KvpoolError, ConnectionError):
    """No answer: connection refused or reset, a timeout, a stream cut short. Also a ConnectionError."""


class ProtocolError(KvpoolError):
    """The server answered something this client cannot read (not JSON, a field missing, lines out of order)."""


class HttpError(KvpoolError):
    """The server answered with an HTTP status other than 200; ``message`` is the error it sent."""


class BadRequest(HttpError, ValueError):
    """400: the server refused the request's content (``message`` names the field, e.g. ``offsets[0]: ...``)."""


class NotFound(HttpError):
    """404: no such route (an agent or plane of another version?)."""


class PayloadTooLarge(HttpError, ValueError):
    """413: the request body was larger than the server takes."""


class ServerError(HttpError):
    """5xx: the server failed."""


class MetaError(KvpoolError):
    """A KVCM meta call answered HTTP 200 with a status other than OK in its header.

    Attributes:
        code: the KVCM error code name (``INVALID_ARGUMENT``, ``INSTANCE_NOT_EXIST``, ``SERVER_NOT_LEADER``, ...).
        request_id: the server's request id, for its logs.
    """

    def __init__(self, code: str, message: str, *, route: Optional[str] = None, request_id: str = "") -> None:
        self.code: str = code
        self.request_id: str = request_id
        super().__init__(f"{code}: {message}", status=200, route=route)
        self.message = message


class LayerwiseLoadFailed(KvpoolError):
    """A layer-wise load the agent reported as failed midway (``"error"`` in its last line).

    Only raised by :meth:`kvpool_client.LayerwiseLoad.result` with ``raise_on_error=True``; by default a failed load
    is a load of misses (every block not found), which is what an engine should do with it anyway.
    """


def for_status(status: int, message: str, route: str) -> HttpError:
    """The HttpError subclass for an HTTP status."""
    if status == 400:
        return BadRequest(message, status=status, route=route)
    if status == 404:
        return NotFound(message, status=status, route=route)
    if status == 413:
        return PayloadTooLarge(message, status=status, route=route)
    if status >= 500:
        return ServerError(message, status=status, route=route)
    return HttpError(message, status=status, route=route)
