"""The engine-side client of the KVPool data agent.

Control goes over the agent's HTTP API (``/v1/save``, ``/v1/load``, ``/v1/query``, ``/v1/remove``,
``/v1/status``); block bytes go through the shared-memory segment the agent created (a file in ``/dev/shm``,
mapped here as well), so payloads never travel through JSON. The lower half of the segment is the engine's: put
blocks there and pass their offsets; loads land at offsets the engine chooses, or in the agent's half (its load
ring) when it passes none. The Java counterpart is ``dev.kvpool.api.agent.AgentClient``.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ._http import HttpTransport, describe, safe_text
from .errors import (InvalidArgument, KvpoolError, LayerwiseLoadFailed, ProtocolError, TransportError)
from .keys import IntSequence, check_int64, check_keys, int_list

if TYPE_CHECKING:  # numpy is optional: only the array views need it
    import numpy

__all__ = ["AgentClient", "Loaded", "LayerwiseLoad", "MAX_KEYS_PER_CALL", "OFFSET_ALIGNMENT"]

#: The most keys one agent call takes (the agent's ``AgentResource.MAX_KEYS_PER_CALL``).
MAX_KEYS_PER_CALL = 1 << 16
#: Offsets into the shared segment are multiples of this.
OFFSET_ALIGNMENT = 4096
# one line of a layer-wise stream: the last one carries every offset and tier (~3 MB for 65,536 keys)
_MAX_LINE = 32 << 20


@dataclass(frozen=True)
class Loaded:
    """The result of a load, one entry per requested key, in request order.

    Attributes:
        found: whether the block's bytes are at ``offsets[i]`` and were verified by the agent.
        offsets: where each block's bytes are (or would have been) in the shared segment.
        tiers: the tier that had each block (``gpu``, ``host``, ``nvme``, ``pool``), None for a miss.
        hits: how many were found.
        error: for a layer-wise load the agent reported as failed, what failed (every ``found`` is then False).
    """

    found: List[bool]
    offsets: List[int]
    tiers: List[Optional[str]]
    hits: int
    error: Optional[str] = None

    def __len__(self) -> int:
        return len(self.found)

    @property
    def missing(self) -> List[int]:
        """Indexes of the keys that were not found."""
        return [i for i, f in enumerate(self.found) if not f]

    def prefix_hits(self) -> int:
        """How many keys from the first one were found in a row: the blocks an engine can skip computing."""
        n = 0
        for f in self.found:
            if not f:
                break
            n += 1
        return n


def _bools(doc: Dict[str, Any], name: str, n: int, route: str) -> List[bool]:
    v = doc.get(name)
    if not isinstance(v, list) or len(v) != n or not all(isinstance(x, bool) for x in v):
        raise ProtocolError(f"expected '{name}': {n} booleans, got {safe_text(json.dumps(v).encode(), 200)}",
                            status=200, route=route)
    return v


def _loaded(doc: Any, n: int, route: str, error: Optional[str] = None) -> Loaded:
    if not isinstance(doc, dict):
        raise ProtocolError("expected a JSON object", status=200, route=route)
    found = _bools(doc, "found", n, route)
    offsets = doc.get("offsets")
    tiers = doc.get("tiers")
    hits = doc.get("hits")
    if not isinstance(offsets, list) or len(offsets) != n or not all(type(o) is int for o in offsets):
        raise ProtocolError(f"expected 'offsets': {n} integers", status=200, route=route)
    if not isinstance(tiers, list) or len(tiers) != n or not all(t is None or isinstance(t, str) for t in tiers):
        raise ProtocolError(f"expected 'tiers': {n} strings or nulls", status=200, route=route)
    if type(hits) is not int:
        raise ProtocolError("expected 'hits': an integer", status=200, route=route)
    return Loaded(found, offsets, tiers, hits, error)


class AgentClient:
    """A connection to one data agent and a mapping of its shared segment.

    ``AgentClient(url)`` reads ``/v1/status`` and maps the segment named there, so it must run on the agent's host
    (the segment is a file in ``/dev/shm``) with read and write access to that file.

    Thread safety: every method may be called from several threads at once. Each HTTP call takes a kept-alive
    connection of its own from a small pool (``max_idle_connections`` kept between calls), so calls do not
    serialise on one socket, and a layer-wise load holds its connection until its stream is read to the end.
    Writes into the shared segment are the caller's to coordinate: the agent reads a save's bytes while the save
    call runs, and writes a load's bytes before it answers (or, layer-wise, before each layer's line).

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, url: str = "http://127.0.0.1:6390", timeout: float = 10.0, *,
                 max_idle_connections: int = 4) -> None:
        """Connects to the agent at ``url``, reads its status and maps its shared segment.

        Args:
            url: the agent's engine API (``kvpool.agent.http-host``/``http-port``).
            timeout: seconds to wait for a connection and for each read of an answer (for a layer-wise load,
                for each layer's line).
            max_idle_connections: kept-alive connections kept between calls.

        Raises:
            TransportError: the agent does not answer.
            KvpoolError: its shared segment cannot be mapped here.
        """
        self._http = HttpTransport(url, timeout, max_idle=max_idle_connections)
        self._closed = False
        try:
            st = self.status()
            self._read_status(st)
            self._map()
        except BaseException:
            self._http.close()
            raise

    def _read_status(self, st: Any) -> None:
        route = "/v1/status"
        if not isinstance(st, dict):
            raise ProtocolError("expected a JSON object", status=200, route=route)
        bb = st.get("block_bytes")
        shm = st.get("shm")
        if type(bb) is not int or bb <= 0 or not isinstance(shm, dict):
            raise ProtocolError("expected 'block_bytes' and 'shm' in the agent's status", status=200, route=route)
        path, size = shm.get("path"), shm.get("bytes")
        if not isinstance(path, str) or not path or type(size) is not int or size <= 0:
            raise ProtocolError("expected 'shm': {'path', 'bytes'} in the agent's status", status=200, route=route)
        area = shm.get("engine_area", [0, size // 2])
        if (not isinstance(area, list) or len(area) != 2 or not all(type(a) is int for a in area)
                or not 0 <= area[0] <= area[1] <= size):
            raise ProtocolError("expected 'shm.engine_area': [start, end] inside the segment", status=200, route=route)
        layers = st.get("layers", 1)
        if type(layers) is not int or layers <= 0 or bb % layers:
            raise ProtocolError(f"'layers' {layers!r} does not divide block_bytes {bb}", status=200, route=route)
        layer_bytes = st.get("layer_bytes", bb // layers)
        if type(layer_bytes) is not int or layer_bytes * layers != bb:
            raise ProtocolError(f"'layer_bytes' {layer_bytes!r} x {layers} layers is not block_bytes {bb}",
                                status=200, route=route)
        layout = st.get("layout", "contiguous")
        self._agent_id: str = str(st.get("agent", ""))
        self._block_bytes: int = bb
        self._shm_path: str = path
        self._shm_size: int = size
        self._engine_area: Tuple[int, int] = (area[0], area[1])
        self._layers: int = layers
        self._layer_bytes: int = layer_bytes
        self._layout: str = str(layout)

    def _map(self) -> None:
        try:
            fd = os.open(self._shm_path, os.O_RDWR)
        except OSError as e:
            raise KvpoolError(f"cannot open the agent's shared segment {self._shm_path}: {describe(e)} (the client "
                              "must run on the agent's host, with read and write access to that file)") from e
        try:
            actual = os.fstat(fd).st_size
            if actual != self._shm_size:
                raise KvpoolError(f"the shared segment {self._shm_path} has {actual} bytes, the agent reports "
                                  f"{self._shm_size}: is it another agent's file?")
            st = os.fstat(fd)
            self._shm_id: Tuple[int, int] = (st.st_dev, st.st_ino)
            self._mm = mmap.mmap(fd, self._shm_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self._mv = memoryview(self._mm)

    def _check_segment(self) -> None:
        """The file at the segment's path must still be the one mapped: a clean stop removes it, and a new agent
        creates another one there, so bytes moved through a stale mapping would be the wrong ones (one stat)."""
        try:
            st = os.stat(self._shm_path)
            now: Optional[Tuple[int, int]] = (st.st_dev, st.st_ino)
        except OSError:
            now = None
        if now != self._shm_id:
            raise KvpoolError(f"the agent's shared segment {self._shm_path} was "
                              f"{'removed' if now is None else 'replaced'} since this client mapped it (the agent "
                              "stopped or restarted): create a new AgentClient")

    # -- what the agent is ----------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The agent's engine API."""
        return self._http.url

    @property
    def agent_id(self) -> str:
        """The agent's id (``kvpool.agent.id``)."""
        return self._agent_id

    @property
    def block_bytes(self) -> int:
        """Bytes per block (``kvpool.agent.block-bytes``)."""
        return self._block_bytes

    @property
    def layers(self) -> int:
        """Layers per block (1 for an agent without layer-wise loads). Layer i of a block is bytes
        ``[i * layer_bytes, (i+1) * layer_bytes)`` of it."""
        return self._layers

    @property
    def layer_bytes(self) -> int:
        """Bytes of one layer of one block: ``block_bytes // layers``."""
        return self._layer_bytes

    @property
    def layout(self) -> str:
        """How the agent keeps blocks: ``contiguous`` or ``layered`` (each layer addressable on its own)."""
        return self._layout

    @property
    def shm_path(self) -> str:
        """The shared segment's file."""
        return self._shm_path

    @property
    def shm_size(self) -> int:
        """The shared segment's size in bytes."""
        return self._shm_size

    @property
    def engine_area(self) -> Tuple[int, int]:
        """``(start, end)`` byte offsets of the engine's half of the segment."""
        return self._engine_area

    @property
    def engine_blocks(self) -> int:
        """How many whole blocks the engine's half holds."""
        return (self._engine_area[1] - self._engine_area[0]) // self._block_bytes

    # -- views of the shared segment (no copies) ------------------------------------------------------------------

    def _view(self) -> memoryview:
        if self._closed:
            raise KvpoolError("the client is closed")
        return self._mv

    @property
    def shared_memory(self) -> memoryview:
        """The whole shared segment, writable. The engine owns :attr:`engine_area`; the rest is the agent's."""
        return self._view()

    @property
    def engine_buffer(self) -> memoryview:
        """The engine's half of the segment, writable."""
        return self._view()[self._engine_area[0]:self._engine_area[1]]

    def block_offset(self, i: int) -> int:
        """The segment offset of block ``i`` of the engine's half."""
        i = check_int64(i, "block index")
        if not 0 <= i < self.engine_blocks:
            raise IndexError(f"block index {i} is outside the engine's half (0 to {self.engine_blocks - 1})")
        return self._engine_area[0] + i * self._block_bytes

    def block(self, i: int) -> memoryview:
        """Block ``i`` of the engine's half (at offset ``block_offset(i)``): a writable view, no copy."""
        o = self.block_offset(i)
        return self._view()[o:o + self._block_bytes]

    def block_at(self, offset: int) -> memoryview:
        """The block at a segment offset (e.g. one of :attr:`Loaded.offsets`): a writable view, no copy."""
        o = self._check_offset(offset, "offset")
        return self._view()[o:o + self._block_bytes]

    def layer_at(self, offset: int, layer: int) -> memoryview:
        """Layer ``layer`` of the block at a segment offset: ``layer_bytes`` bytes, a writable view."""
        o = self._check_offset(offset, "offset")
        layer = check_int64(layer, "layer")
        if not 0 <= layer < self._layers:
            raise IndexError(f"layer {layer} is outside 0 to {self._layers - 1}")
        s = o + layer * self._layer_bytes
        return self._view()[s:s + self._layer_bytes]

    def array(self, offset: int, count: int = 1, dtype: Any = "uint8") -> "numpy.ndarray":
        """``count`` consecutive blocks from a segment offset as a numpy array of shape
        ``(count, block_bytes // itemsize)`` over the shared segment (no copy; writes go to the segment).

        Raises ImportError without numpy.
        """
        import numpy as np

        count = check_int64(count, "count")
        if count <= 0:
            raise InvalidArgument(f"count: expected at least 1, got {count}")
        o = self._check_offset(offset, "offset")
        if count > (self._shm_size - o) // self._block_bytes:
            raise InvalidArgument(f"count: {count} blocks from offset {o} pass the end of the "
                                  f"{self._shm_size}-byte segment")
        dt = np.dtype(dtype)
        if self._block_bytes % dt.itemsize:
            raise InvalidArgument(f"dtype: block_bytes {self._block_bytes} is not a multiple of {dt} ({dt.itemsize} B)")
        a = np.frombuffer(self._view(), dtype=dt, count=count * self._block_bytes // dt.itemsize, offset=o)
        return a.reshape(count, self._block_bytes // dt.itemsize)

    def engine_array(self, dtype: Any = "uint8") -> "numpy.ndarray":
        """The engine's half as a numpy array of shape ``(engine_blocks, block_bytes // itemsize)``: row i is
        :meth:`block` (i). No copy."""
        return self.array(self._engine_area[0], self.engine_blocks, dtype)

    def _check_offset(self, offset: Any, what: str) -> int:
        o = check_int64(offset, what)
        # o > size - len, not o + len > size: the same overflow-free check the agent makes
        if o < 0 or o % OFFSET_ALIGNMENT or o > self._shm_size - self._block_bytes:
            raise InvalidArgument(f"{what}: offset {o} (+{self._block_bytes} bytes) is not a 4 KiB-aligned block "
                                  f"range of the {self._shm_size}-byte shared segment {self._shm_path}")
        return o

    def _offsets(self, offsets: IntSequence, n: int, route: str) -> List[int]:
        offs = int_list(offsets, "offsets", allow_empty=True)
        if len(offs) != n:
            raise InvalidArgument(f"offsets: {route} needs one shared-memory offset per key ({n} keys, "
                                  f"{len(offs)} offsets)")
        # one pass at C speed for the usual case; the first bad one named otherwise
        if offs and (min(offs) < 0 or max(offs) > self._shm_size - self._block_bytes
                     or any(o & (OFFSET_ALIGNMENT - 1) for o in offs)):
            for i, o in enumerate(offs):
                self._check_offset(o, f"offsets[{i}]")
        return offs

    # -- the engine API -------------------------------------------------------------------------------------------

    def save(self, keys: IntSequence, offsets: IntSequence, parent: Optional[int] = None) -> List[bool]:
        """Saves blocks already placed in the shared segment.

        Args:
            keys: one signed 64-bit key per block (at most 65,536).
            offsets: the segment offset of each block's bytes (4 KiB-aligned, a whole block inside the segment).
            parent: the key of the block before the first one in its chain, for the ``stored`` events.

        Returns:
            per key, whether its bytes are safe in the agent's first tier when the call returns.
        """
        ks = check_keys(keys, MAX_KEYS_PER_CALL)
        body: Dict[str, Any] = {"keys": ks, "offsets": self._offsets(offsets, len(ks), "save")}
        if parent is not None:
            body["parent"] = check_int64(parent, "parent")
        self._check_segment()
        doc = self._post("/v1/save", body)
        return _bools(doc, "stored", len(ks), "/v1/save")

    def load(self, keys: IntSequence, offsets: Optional[IntSequence] = None) -> Loaded:
        """Loads blocks into the shared segment and returns when all are there (or known missing).

        Args:
            keys: the blocks' keys.
            offsets: where each block's bytes go; None: the agent picks offsets in its half (its load ring; they
                stay valid until the ring wraps, so copy the bytes out before the next loads fill it).
        """
        ks = check_keys(keys, MAX_KEYS_PER_CALL)
        body: Dict[str, Any] = {"keys": ks}
        if offsets is not None:
            body["offsets"] = self._offsets(offsets, len(ks), "load")
        self._check_segment()
        return self._where(_loaded(self._post("/v1/load", body), len(ks), "/v1/load"), body.get("offsets"))

    def _where(self, r: Loaded, asked: Optional[List[int]]) -> Loaded:
        """The offsets of an answer are where the caller will read: the ones asked for, or (the agent's choice)
        block ranges of the segment."""
        if asked is not None and r.offsets != asked:
            raise ProtocolError("the agent answered other offsets than the ones asked for", status=200,
                                route="/v1/load")
        if asked is None:
            for i, o in enumerate(r.offsets):
                if o < 0 or o % OFFSET_ALIGNMENT or o > self._shm_size - self._block_bytes:
                    raise ProtocolError(f"offsets[{i}]: {o} from the agent is not a block range of the segment",
                                        status=200, route="/v1/load")
        return r

    def load_layerwise(self, keys: IntSequence, offsets: Optional[IntSequence] = None) -> "LayerwiseLoad":
        """Starts a load that reports each layer as soon as layer i of every block is in place and verified.

        Returns at once with a :class:`LayerwiseLoad` (errors in the request are raised here, before anything
        streams); :meth:`LayerwiseLoad.wait_layer` blocks until a layer is there. Blocks are layer-major in the
        buffer: layer i of the block at offset o is ``[o + i*layer_bytes, o + (i+1)*layer_bytes)``.
        """
        ks = check_keys(keys, MAX_KEYS_PER_CALL)
        body: Dict[str, Any] = {"keys": ks}
        if offsets is not None:
            body["offsets"] = self._offsets(offsets, len(ks), "load")
        body["layerwise"] = True
        route = "/v1/load"
        self._check_segment()
        raw = json.dumps(body, separators=(",", ":")).encode()
        conn, resp = self._http.stream("POST", route, raw, {"Accept": "application/x-ndjson, application/json"})
        ctype = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/x-ndjson":
            conn.close()
            raise ProtocolError(f"expected a layer-wise stream (application/x-ndjson), got '{safe_text(ctype.encode())}'"
                                " (an agent without layer-wise loads?)", status=resp.status, route=route)
        return LayerwiseLoad(self._http, conn, resp, len(ks), self._layers, route,
                             lambda r: self._where(r, body.get("offsets")))

    def query(self, keys: IntSequence) -> List[List[str]]:
        """Per key, the tiers holding it (``gpu``, ``host``, ``nvme``, ``pool``); an empty list when none."""
        ks = check_keys(keys, MAX_KEYS_PER_CALL)
        doc = self._post("/v1/query", {"keys": ks})
        blocks = doc.get("blocks") if isinstance(doc, dict) else None
        if not isinstance(blocks, list) or len(blocks) != len(ks):
            raise ProtocolError(f"expected 'blocks': {len(ks)} entries", status=200, route="/v1/query")
        out: List[List[str]] = []
        for b in blocks:
            tiers = b.get("tiers") if isinstance(b, dict) else None
            if not isinstance(tiers, list) or not all(isinstance(t, str) for t in tiers):
                raise ProtocolError("expected 'tiers': a list of strings per block", status=200, route="/v1/query")
            out.append(tiers)
        return out

    def remove(self, keys: IntSequence, global_: bool = False) -> List[bool]:
        """Removes blocks from this agent's tiers (and, with ``global_``, from the global pool); per key, whether
        the agent held it."""
        ks = check_keys(keys, MAX_KEYS_PER_CALL)
        if not isinstance(global_, bool):
            raise InvalidArgument(f"global_: expected True or False, got {global_!r}")
        doc = self._post("/v1/remove", {"keys": ks, "global": global_})
        return _bools(doc, "removed", len(ks), "/v1/remove")

    def status(self) -> Dict[str, Any]:
        """The agent's ``/v1/status``: tiers, devices, counters, shared segment, layers."""
        doc = self._http.get_json("/v1/status")
        if not isinstance(doc, dict):
            raise ProtocolError("expected a JSON object", status=200, route="/v1/status")
        return doc

    def _post(self, route: str, body: Dict[str, Any]) -> Dict[str, Any]:
        doc = self._http.post_json(route, body)
        if not isinstance(doc, dict):
            raise ProtocolError("expected a JSON object", status=200, route=route)
        return doc

    # -- life cycle -----------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connections and unmaps the segment.

        Views handed out (:meth:`block`, numpy arrays) keep the mapping alive: it is unmapped when the last of
        them is released, never under them.
        """
        if self._closed:
            return
        self._closed = True
        self._http.close()
        mv = getattr(self, "_mv", None)
        if mv is not None:
            mv.release()
            try:
                self._mm.close()
            except BufferError:
                pass  # views still exported: the mapping goes when they do

    def __enter__(self) -> "AgentClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"AgentClient({self.url!r}, agent={self._agent_id!r}, block_bytes={self._block_bytes}, "
                f"layers={self._layers}, shm={self._shm_path!r})")


class LayerwiseLoad:
    """A layer-wise load in progress: the agent's stream of per-layer completions.

    Each ``wait_layer(i)`` blocks until the agent's line for layer i has arrived (reading the response stream;
    no polling) and returns the indexes (into the requested keys) of the blocks whose bytes are NOT valid. Every
    other block's layer i is then in the buffer at its offset and was verified by the agent. Layers arrive in
    order, so waiting for layer i also takes in the lines before it.

    The missing sets only grow: a block missing at layer k is missing at every later layer and in the result,
    even if a misbehaving agent said otherwise, so an engine never computes on bytes the agent called invalid.

    Safe to use from several threads (reads are serialised). Close it (or use it as a context manager) if it is
    abandoned before its end; the connection is then closed rather than reused.
    """

    def __init__(self, http: HttpTransport, conn: Any, resp: Any, n: int, layers: int, route: str,
                 check: Callable[[Loaded], Loaded] = lambda r: r) -> None:
        self._http = http
        self._check = check
        self._conn = conn
        self._resp = resp
        self._n = n
        self._layers = layers
        self._route = route
        self._lock = threading.Lock()
        self._buf = bytearray()
        self._per_layer: List[List[int]] = []
        self._cumulative: Set[int] = set()
        self._result: Optional[Loaded] = None
        self._failure: Optional[KvpoolError] = None
        self._open = True

    @property
    def layers(self) -> int:
        """Layers per block, as the agent reported at connect time."""
        return self._layers

    @property
    def done(self) -> bool:
        """Whether the agent's final line has been read."""
        return self._result is not None

    @property
    def layers_arrived(self) -> int:
        """How many layer lines have been read so far."""
        return len(self._per_layer)

    def wait_layer(self, i: int) -> List[int]:
        """Blocks until layer ``i`` of every requested block is in the buffer; returns the missing indexes.

        After a load the agent reported as failed, layers it had not delivered return every index (all missing).

        Raises:
            TransportError: the stream broke or no line came within the timeout (treat every block as missing).
            ProtocolError: the agent sent something out of protocol.
        """
        i = check_int64(i, "layer")
        if not 0 <= i < self._layers:
            raise InvalidArgument(f"layer: {i} is outside 0 to {self._layers - 1}")
        with self._lock:
            while len(self._per_layer) <= i and self._result is None:
                self._next()
            if i < len(self._per_layer):
                return list(self._per_layer[i])
            return list(range(self._n))  # the load failed before this layer

    def __iter__(self) -> Iterator[Tuple[int, List[int]]]:
        """``(layer, missing)`` for each layer in order, as each arrives."""
        for i in range(self._layers):
            yield i, self.wait_layer(i)

    def result(self, raise_on_error: bool = False) -> Loaded:
        """Reads the stream to its end and returns the load's result (as :meth:`AgentClient.load` would).

        A block listed missing in any layer line is not found here either. A load the agent reported as failed
        midway is all misses with :attr:`Loaded.error` set, or LayerwiseLoadFailed with ``raise_on_error``.
        """
        with self._lock:
            while self._result is None:
                self._next()
            r = self._result
        if raise_on_error and r.error is not None:
            raise LayerwiseLoadFailed(r.error, status=200, route=self._route)
        return r

    def close(self) -> None:
        """Stops reading; an unfinished stream's connection is closed."""
        with self._lock:
            if self._open:
                self._open = False
                self._conn.close()

    def __enter__(self) -> "LayerwiseLoad":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the stream -----------------------------------------------------------------------------------------------

    def _fail(self, e: KvpoolError) -> KvpoolError:
        self._failure = e
        if self._open:
            self._open = False
            self._conn.close()
        return e

    def _line(self) -> bytes:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                return line
            if len(self._buf) > _MAX_LINE:
                raise self._fail(ProtocolError(f"a line of the layer-wise stream passed {_MAX_LINE} bytes",
                                               status=200, route=self._route))
            try:
                chunk = self._resp.read1(1 << 16)
            except Exception as e:  # http.client.IncompleteRead, socket timeout, reset
                raise self._fail(TransportError(f"the layer-wise stream broke after {len(self._per_layer)} of "
                                                f"{self._layers} layers: {describe(e)}", status=200,
                                                route=self._route)) from e
            if not chunk:
                raise self._fail(TransportError(f"the layer-wise stream ended after {len(self._per_layer)} of "
                                                f"{self._layers} layers without its final line", status=200,
                                                route=self._route))
            self._buf += chunk

    def _next(self) -> None:
        if self._failure is not None:
            raise self._failure
        if not self._open:
            raise KvpoolError("the layer-wise load was closed", route=self._route)
        raw = self._line()
        if not raw.strip():
            return
        try:
            doc = json.loads(raw)
        except ValueError:
            raise self._fail(ProtocolError(f"a line that is not JSON: {safe_text(raw, 200)!r}", status=200,
                                           route=self._route)) from None
        if not isinstance(doc, dict):
            raise self._fail(ProtocolError("a line that is not a JSON object", status=200, route=self._route))
        if doc.get("done") is True:
            self._finish(doc)
            return
        layer = doc.get("layer")
        missing = doc.get("missing")
        if type(layer) is not int or layer != len(self._per_layer) or layer >= self._layers:
            raise self._fail(ProtocolError(f"expected the line of layer {len(self._per_layer)} of {self._layers}, "
                                           f"got {safe_text(raw, 200)}", status=200, route=self._route))
        if (not isinstance(missing, list)
                or not all(type(m) is int and 0 <= m < self._n for m in missing)):
            raise self._fail(ProtocolError(f"layer {layer}: 'missing' must list indexes 0 to {self._n - 1}",
                                           status=200, route=self._route))
        self._cumulative.update(missing)
        self._per_layer.append(sorted(self._cumulative))

    def _finish(self, doc: Dict[str, Any]) -> None:
        error = doc.get("error")
        if error is not None and not isinstance(error, str):
            error = safe_text(json.dumps(error).encode(), 500)
        try:
            r = self._check(_loaded(doc, self._n, self._route, error))
        except ProtocolError as e:
            raise self._fail(e) from None
        if error is None and len(self._per_layer) != self._layers:
            raise self._fail(ProtocolError(f"the stream ended after {len(self._per_layer)} of {self._layers} "
                                           "layers without an error", status=200, route=self._route))
        found = [False] * self._n if error is not None else [
            f and i not in self._cumulative for i, f in enumerate(r.found)]
        tiers = [t if f else None for t, f in zip(r.tiers, found)]
        self._result = Loaded(found, r.offsets, tiers, sum(found), error)
        # read the rest of the (chunked) response so that its connection can carry the next call
        try:
            rest = self._resp.read(1 << 16)
        except Exception:
            rest = b"x"
        self._open = False
        if rest.strip() or self._buf.strip():
            self._conn.close()
        else:
            self._http.release(self._conn, not self._resp.will_close)
