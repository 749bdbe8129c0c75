"""HTTP/1.1 over http.client with kept-alive connections, shared safely between threads.

Each call takes an idle connection (or opens one), sends, reads the whole answer and puts the connection back, so
calls from several threads run at once on separate connections and a streamed answer (a layer-wise load) holds its
own connection until it is read to the end.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from .errors import KvpoolError, ProtocolError, TransportError, for_status

# Answers are bounded: 65,536 keys with offsets and tiers are ~3 MB of JSON. Anything far past that is not an
# answer of the servers this talks to.
MAX_RESPONSE_BYTES = 64 << 20

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def describe(e: BaseException) -> str:
    """A short cause for a failed exchange."""
    if isinstance(e, (socket.timeout, TimeoutError)):
        return "no answer in time (timeout)"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (is the server running on that port?)"
    if isinstance(e, _STALE):
        return "connection closed by the server before it answered"
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}"


def safe_text(raw: bytes, limit: int = 1000) -> str:
    """A server's bytes as text for a message: decoded, control characters escaped, cut at ``limit``."""
    s = raw[: limit * 4].decode("utf-8", errors="replace")
    s = "".join(c if c >= " " or c == "\t" else repr(c)[1:-1] for c in s)
    return s if len(s) <= limit else s[:limit] + "..."


class HttpTransport:
    """A base URL, a timeout and a small pool of kept-alive connections to it."""

    def __init__(self, url: str, timeout: float, *, max_idle: int = 4,
                 headers: Optional[Mapping[str, str]] = None) -> None:
        if not isinstance(url, str) or not url:
            raise ValueError("url: expected a URL such as http://127.0.0.1:6390")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url: expected http://host:port, got {url!r}")
        if parts.query or parts.fragment or parts.username:
            raise ValueError(f"url: expected http://host:port[/base], without query, fragment or user, got {url!r}")
        try:
            port = parts.port
        except ValueError as e:
            raise ValueError(f"url: bad port in {url!r}: {e}") from None
        self.url = url.rstrip("/")
        self.timeout = float(timeout)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = port
        self._base = parts.path.rstrip("/")
        self._max_idle = max_idle
        self._headers: Dict[str, str] = {"Accept": "application/json", **(headers or {})}
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- connections ------------------------------------------------------------------------------------------

    def _new(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _acquire(self) -> Tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._closed:
                raise KvpoolError("the client is closed")
            if self._idle:
                return self._idle.pop(), True
        return self._new(), False

    def release(self, conn: http.client.HTTPConnection, reusable: bool) -> None:
        """Puts a connection whose answer was read to the end back into the pool, or closes it."""
        if reusable:
            with self._lock:
                if not self._closed and len(self._idle) < self._max_idle:
                    self._idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections; those in use are closed when their call ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    # -- exchanges --------------------------------------------------------------------------------------------

    def _exchange(self, method: str, route: str, body: Optional[bytes],
                  headers: Optional[Mapping[str, str]]) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        h = dict(self._headers)
        if body is not None:
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        for attempt in (0, 1):
            conn, reused = self._acquire()
            try:
                conn.request(method, self._base + route, body=body, headers=h)
                return conn, conn.getresponse()
            except _STALE as e:
                if not isinstance(e, http.client.RemoteDisconnected):
                    # the server may have answered before it took the whole body (413 for a body past its bound,
                    # then closed): that answer says more than the broken pipe
                    try:
                        return conn, conn.getresponse()
                    except (OSError, http.client.HTTPException):
                        pass
                conn.close()
                # a kept-alive connection the server closed while it was idle (the agent closes idle ones after
                # 60 s): the request never reached it, so sending it once more on a new connection is safe
                if reused and attempt == 0:
                    continue
                raise TransportError(f"{self.url}{route} failed: {describe(e)}", route=route) from e
            except http.client.HTTPException as e:
                conn.close()
                raise ProtocolError(f"{self.url}{route}: not an HTTP answer: {describe(e)}", route=route) from e
            except OSError as e:
                conn.close()
                raise TransportError(f"{self.url}{route} failed: {describe(e)}", route=route) from e
        raise AssertionError("unreachable")

    def _read_all(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, route: str) -> bytes:
        try:
            data = resp.read(MAX_RESPONSE_BYTES + 1)
            if len(data) > MAX_RESPONSE_BYTES:
                conn.close()
                raise ProtocolError(f"answer larger than {MAX_RESPONSE_BYTES} bytes", status=resp.status, route=route)
            # the rest of a bounded read: nothing, but it completes the response so the connection can be reused
            if resp.read(1):
                conn.close()
                raise ProtocolError(f"answer larger than {MAX_RESPONSE_BYTES} bytes", status=resp.status, route=route)
        except http.client.IncompleteRead as e:
            conn.close()
            raise TransportError(f"answer cut short after {len(e.partial)} bytes", status=resp.status,
                                 route=route) from e
        except OSError as e:
            conn.close()
            raise TransportError(f"reading the answer failed: {describe(e)}", status=resp.status, route=route) from e
        return data

    def request(self, method: str, route: str, body: Optional[bytes] = None,
                headers: Optional[Mapping[str, str]] = None) -> Tuple[int, http.client.HTTPMessage, bytes]:
        """One exchange, read to the end: (status, headers, body). Raises TransportError when no answer came."""
        conn, resp = self._exchange(method, route, body, headers)
        data = self._read_all(conn, resp, route)
        self.release(conn, not resp.will_close)
        return resp.status, resp.headers, data

    def stream(self, method: str, route: str, body: Optional[bytes] = None,
               headers: Optional[Mapping[str, str]] = None) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request whose 200 answer is read by the caller (who then calls :meth:`release`); any other
        answer is read here and raised as the error the server sent."""
        conn, resp = self._exchange(method, route, body, headers)
        if resp.status != 200:
            data = self._read_all(conn, resp, route)
            self.release(conn, not resp.will_close)
            raise for_status(resp.status, error_message(resp.status, resp.headers, data), route)
        return conn, resp

    def post_json(self, route: str, payload: Any, headers: Optional[Mapping[str, str]] = None) -> Any:
        """POST a JSON body; a 200 answer's JSON, or the server's error raised as an HttpError."""
        status, hdrs, data = self.request("POST", route, json.dumps(payload, separators=(",", ":")).encode(), headers)
        return self._json_or_raise(status, hdrs, data, route)

    def get_json(self, route: str) -> Any:
        status, hdrs, data = self.request("GET", route)
        return self._json_or_raise(status, hdrs, data, route)

    @staticmethod
    def _json_or_raise(status: int, hdrs: http.client.HTTPMessage, data: bytes, route: str) -> Any:
        if status != 200:
            raise for_status(status, error_message(status, hdrs, data), route)
        try:
            return json.loads(data)
        except ValueError as e:
            raise ProtocolError(f"answer is not JSON: {safe_text(data, 200)!r}", status=status, route=route) from e


def error_message(status: int, headers: http.client.HTTPMessage, data: bytes) -> str:
    """The server's own words for an error: the agent's ``{"error": ...}``, KVPool's ``X-KVPool-Error`` header
    (the KVCM routes answer ``{}`` bodies, as KVCM does), or the body's text."""
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"]:
        return safe_text(doc["error"].encode())
    header = headers.get("X-KVPool-Error") if headers is not None else None
    if header:
        return safe_text(header.encode())
    if data and data.strip() not in (b"{}", b""):
        return safe_text(data)
    return f"HTTP {status} without a message"
