"""A client of the metadata plane's KVCM meta HTTP API (``POST /api/<rpc>``, proto3 JSON, port 6382).

These are the calls an engine connector makes (the same ones KVCM's vLLM and SGLang connectors make): register
its instance, match a prompt's blocks (prefix match), find where blocks are (batch get), write blocks in two
phases (start: the plane hands out locations; finish: the true per-location success mask), remove blocks.

KVCM answers logical errors with HTTP 200 and a status in the response header; this client raises them as
:class:`~kvpool_client.errors.MetaError` with the code name and the server's message. Field names are the proto
names; int64 values come back as JSON strings and are returned here as ints.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union
from urllib.parse import parse_qsl, urlsplit

from ._http import HttpTransport
from .errors import InvalidArgument, MetaError, ProtocolError
from .keys import IntSequence, check_int64, check_keys

__all__ = [
    "MetaClient", "QueryType", "StorageType", "LocationSpecInfo", "ModelDeployment", "LocationSpecGroup",
    "RegisterInstanceRequest", "RegisterInstanceResponse", "StorageConfig", "LocationSpec", "CacheLocation",
    "BlockMask", "GetCacheLocationResponse", "StartWriteCacheResponse", "InstanceInfo", "ClusterInfo",
    "FileUri", "MAX_KEYS_PER_CALL", "MAX_TOKENS_PER_CALL",
]

#: The platform's bounds per call (api's ``Limits``).
MAX_KEYS_PER_CALL = 1 << 20
MAX_TOKENS_PER_CALL = 1 << 24
_MAX_TEXT = 1024


class QueryType(str, Enum):
    """How ``getCacheLocation`` matches keys."""

    BATCH_GET = "QT_BATCH_GET"
    """One location per key, in order; a miss is a placeholder whose URIs are empty."""
    PREFIX_MATCH = "QT_PREFIX_MATCH"
    """Locations of the keys from the first one up to the first miss: ``len(locations)`` is the hit count."""
    REVERSE_ROLL_SW_MATCH = "QT_REVERSE_ROLL_SW_MATCH"
    """The right-most window of ``sw_size`` consecutive hits (sliding-window attention)."""


class StorageType(str, Enum):
    """Storage kinds of a location."""

    UNSPECIFIED = "ST_UNSPECIFIED"
    THREE_FS = "ST_3FS"
    MOONCAKE = "ST_MOONCAKE"
    TAIR_MEMPOOL = "ST_TAIRMEMPOOL"
    NFS = "ST_NFS"
    VCNS_3FS = "ST_VCNS_3FS"


def _text(v: Any, what: str, *, required: bool = True) -> str:
    if not isinstance(v, str):
        raise InvalidArgument(f"{what}: expected a string, got {v!r}")
    if required and not v:
        raise InvalidArgument(f"{what}: must not be empty")
    if len(v) > _MAX_TEXT:
        raise InvalidArgument(f"{what}: at most {_MAX_TEXT} characters, got {len(v)}")
    return v


def _int32(v: Any, what: str, lo: int = -(1 << 31)) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v < (1 << 31):
        raise InvalidArgument(f"{what}: expected an integer from {lo} to {(1 << 31) - 1}, got {v!r}")
    return v


def _int(v: Any, what: str, route: str) -> int:
    """An int64 the plane printed (a JSON string, as proto3 JSON prints int64) or an int32 (a number)."""
    if type(v) is int:
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise ProtocolError(f"expected an integer for '{what}', got {v!r}", status=200, route=route)


@dataclass(frozen=True)
class LocationSpecInfo:
    """A spec of an instance: a named part of each block (``tp0``, one per TP rank) and its bytes per block."""

    name: str
    size: int

    def to_json(self) -> Dict[str, Any]:
        return {"name": _text(self.name, "location_spec_infos.name"),
                "size": check_int64(self.size, "location_spec_infos.size")}


@dataclass(frozen=True)
class ModelDeployment:
    """The model an instance serves; part of its identity (``user_data`` is not)."""

    model_name: str
    dtype: str
    use_mla: bool = False
    tp_size: int = 0
    dp_size: int = 0
    lora_name: str = ""
    pp_size: int = 0
    extra: str = ""
    user_data: str = ""

    def to_json(self) -> Dict[str, Any]:
        if not isinstance(self.use_mla, bool):
            raise InvalidArgument(f"model_deployment.use_mla: expected True or False, got {self.use_mla!r}")
        return {"model_name": _text(self.model_name, "model_deployment.model_name"),
                "dtype": _text(self.dtype, "model_deployment.dtype"), "use_mla": self.use_mla,
                "tp_size": _int32(self.tp_size, "model_deployment.tp_size", 0),
                "dp_size": _int32(self.dp_size, "model_deployment.dp_size", 0),
                "lora_name": _text(self.lora_name, "model_deployment.lora_name", required=False),
                "pp_size": _int32(self.pp_size, "model_deployment.pp_size", 0),
                "extra": _text(self.extra, "model_deployment.extra", required=False),
                "user_data": _text(self.user_data, "model_deployment.user_data", required=False)}

    @staticmethod
    def from_json(d: Mapping[str, Any], route: str) -> "ModelDeployment":
        return ModelDeployment(str(d.get("model_name", "")), str(d.get("dtype", "")), bool(d.get("use_mla", False)),
                               _int(d.get("tp_size", 0), "tp_size", route), _int(d.get("dp_size", 0), "dp_size", route),
                               str(d.get("lora_name", "")), _int(d.get("pp_size", 0), "pp_size", route),
                               str(d.get("extra", "")), str(d.get("user_data", "")))


@dataclass(frozen=True)
class LocationSpecGroup:
    """A named subset of an instance's specs (a write can ask for one group's specs only)."""

    name: str
    spec_names: Sequence[str]

    def to_json(self) -> Dict[str, Any]:
        return {"name": _text(self.name, "location_spec_groups.name"),
                "spec_names": [_text(s, "location_spec_groups.spec_names") for s in self.spec_names]}


@dataclass(frozen=True)
class RegisterInstanceRequest:
    """``registerInstance``: idempotent for the same identity (block_size, specs, model, groups)."""

    instance_group: str
    instance_id: str
    block_size: int
    location_spec_infos: Sequence[LocationSpecInfo]
    model_deployment: ModelDeployment
    location_spec_groups: Sequence[LocationSpecGroup] = ()

    def to_json(self) -> Dict[str, Any]:
        if not self.location_spec_infos:
            raise InvalidArgument("location_spec_infos: an instance needs at least one spec")
        return {"instance_group": _text(self.instance_group, "instance_group"),
                "instance_id": _text(self.instance_id, "instance_id"),
                "block_size": _int32(self.block_size, "block_size", 0),
                "location_spec_infos": [s.to_json() for s in self.location_spec_infos],
                "model_deployment": self.model_deployment.to_json(),
                "location_spec_groups": [g.to_json() for g in self.location_spec_groups]}


@dataclass(frozen=True)
class StorageConfig:
    """One storage of the instance's group, from ``registerInstance``'s ``storage_configs``."""

    type: str
    is_available: bool
    global_unique_name: str
    storage_spec: Optional[Dict[str, Any]]


@dataclass(frozen=True)
class RegisterInstanceResponse:
    """``storage_configs`` as the plane sent it (a JSON text) and parsed."""

    request_id: str
    storage_configs: str
    storages: List[StorageConfig]


@dataclass(frozen=True)
class LocationSpec:
    """Where one spec of a block is: ``uri`` is empty for a miss (a BATCH_GET placeholder)."""

    name: str
    uri: str


@dataclass(frozen=True)
class FileUri:
    """A ``file://<storage>/<path>?blkid=<i>&size=<bytes>`` location: the block is at ``offset`` in ``path``."""

    storage: str
    path: str
    blkid: int
    size: int

    @property
    def offset(self) -> int:
        """``blkid * size``: where the block's bytes start in the file."""
        return self.blkid * self.size

    @staticmethod
    def parse(uri: str) -> "FileUri":
        """Parses a file location; InvalidArgument for anything else."""
        p = urlsplit(uri)
        if p.scheme != "file" or not p.netloc or not p.path:
            raise InvalidArgument(f"not a file:// location: {uri!r}")
        q = dict(parse_qsl(p.query))
        try:
            blkid, size = int(q.get("blkid", "0")), int(q["size"])
        except (KeyError, ValueError):
            raise InvalidArgument(f"a file location needs decimal blkid and size: {uri!r}") from None
        if blkid < 0 or size <= 0:
            raise InvalidArgument(f"blkid must be >= 0 and size > 0: {uri!r}")
        return FileUri(p.netloc, p.path, blkid, size)


@dataclass(frozen=True)
class CacheLocation:
    """The location of one block: its storage type and one URI per spec."""

    type: str
    spec_size: int
    location_specs: List[LocationSpec]

    @property
    def found(self) -> bool:
        """False for a placeholder (a miss in BATCH_GET): every URI empty."""
        return any(s.uri for s in self.location_specs)

    def uri(self, spec: str) -> Optional[str]:
        """The URI of the spec named ``spec`` (e.g. this TP rank's ``tp0``), or None."""
        for s in self.location_specs:
            if s.name == spec:
                return s.uri
        return None

    @staticmethod
    def from_json(d: Any, route: str) -> "CacheLocation":
        if not isinstance(d, dict):
            raise ProtocolError("expected a location object", status=200, route=route)
        specs = d.get("location_specs", [])
        if not isinstance(specs, list):
            raise ProtocolError("expected 'location_specs': a list", status=200, route=route)
        out = []
        for s in specs:
            if not isinstance(s, dict) or not isinstance(s.get("name", ""), str) or not isinstance(s.get("uri", ""), str):
                raise ProtocolError("expected location specs {name, uri}", status=200, route=route)
            out.append(LocationSpec(s.get("name", ""), s.get("uri", "")))
        return CacheLocation(str(d.get("type", "ST_UNSPECIFIED")), _int(d.get("spec_size", 0), "spec_size", route), out)


@dataclass(frozen=True)
class BlockMask:
    """KVCM's block mask: either a prefix (``offset`` = k: the first k are masked) or one boolean per entry.

    From ``startWriteCache`` it says which keys already exist (no location is handed out for them); to
    ``finishWriteCache`` it says which handed-out locations were written successfully.
    """

    offset: Optional[int] = None
    values: Optional[Sequence[bool]] = None

    def __post_init__(self) -> None:
        if (self.offset is None) == (self.values is None):
            raise InvalidArgument("block_mask: give exactly one of offset and values")
        if self.offset is not None:
            _int32(self.offset, "block_mask.offset", 0)
        if self.values is not None and not all(isinstance(v, bool) for v in self.values):
            raise InvalidArgument("block_mask.values: expected booleans")

    @staticmethod
    def prefix(k: int) -> "BlockMask":
        return BlockMask(offset=k)

    @staticmethod
    def of(values: Sequence[bool]) -> "BlockMask":
        return BlockMask(values=list(values))

    def masked(self, i: int) -> bool:
        """Whether entry i is masked (exists / succeeded)."""
        if self.offset is not None:
            return i < self.offset
        assert self.values is not None
        return i < len(self.values) and bool(self.values[i])

    def unmasked(self, n: int) -> List[int]:
        """The indexes among ``n`` that are not masked: in a ``startWriteCache`` answer, the keys that got a
        location, in the order of the locations."""
        return [i for i in range(n) if not self.masked(i)]

    def to_json(self) -> Dict[str, Any]:
        if self.offset is not None:
            return {"offset": self.offset}
        return {"bool_masks": {"values": list(self.values or [])}}

    @staticmethod
    def from_json(d: Any, route: str) -> "BlockMask":
        if not isinstance(d, dict):
            raise ProtocolError("expected a block mask object", status=200, route=route)
        if "offset" in d:
            return BlockMask(offset=_int(d["offset"], "block_mask.offset", route))
        bm = d.get("bool_masks", {})
        vals = bm.get("values", []) if isinstance(bm, dict) else None
        if not isinstance(vals, list) or not all(isinstance(v, bool) for v in vals):
            raise ProtocolError("expected block_mask.bool_masks.values: booleans", status=200, route=route)
        return BlockMask(values=vals)


@dataclass(frozen=True)
class GetCacheLocationResponse:
    request_id: str
    locations: List[CacheLocation]

    @property
    def hits(self) -> int:
        """For PREFIX_MATCH: how many blocks matched (one location each); for BATCH_GET: how many were found."""
        return sum(1 for loc in self.locations if loc.found)


@dataclass(frozen=True)
class StartWriteCacheResponse:
    """A write session: locations for the keys that did not exist yet (``block_mask`` marks the ones that did),
    in key order. Write each location, then call ``finish_write_cache`` with one success flag per location."""

    request_id: str
    write_session_id: str
    block_mask: BlockMask
    locations: List[CacheLocation]

    def new_key_indexes(self, n_keys: int) -> List[int]:
        """Indexes (into the keys of the request) of the blocks to write, one per location."""
        idx = self.block_mask.unmasked(n_keys)
        if len(idx) != len(self.locations):
            raise ProtocolError(f"{len(self.locations)} locations for {len(idx)} new keys",
                                status=200, route="/api/startWriteCache")
        return idx


@dataclass(frozen=True)
class InstanceInfo:
    instance_id: str
    instance_group: str
    quota_group_name: str
    block_size: int
    location_spec_infos: List[LocationSpecInfo]
    model_deployment: Optional[ModelDeployment]


@dataclass(frozen=True)
class ClusterInfo:
    self_node_id: str
    leader_node_id: str
    leader_endpoint: Optional[Dict[str, Any]]


_counter = itertools.count()


class MetaClient:
    """The KVCM meta HTTP API of a metadata plane.

    Thread safety as :class:`~kvpool_client.AgentClient`: calls from several threads run on separate kept-alive
    connections. Use it as a context manager or call :meth:`close`.
    """

    def __init__(self, url: str = "http://127.0.0.1:6382", timeout: float = 5.0, *, token: Optional[str] = None,
                 trace_prefix: str = "py", max_idle_connections: int = 4) -> None:
        """Args:
            url: the meta HTTP listener (``kvpool.meta.http-port``, 6382).
            timeout: seconds for a connection and for each read of an answer.
            token: a bearer token, where the plane requires authentication.
            trace_prefix: start of each call's ``trace_id`` (the plane's request ids and logs carry it).
        """
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._http = HttpTransport(url, timeout, max_idle=max_idle_connections, headers=headers)
        self._trace = f"{_text(trace_prefix, 'trace_prefix')}-{os.getpid()}"

    @property
    def url(self) -> str:
        return self._http.url

    def _call(self, rpc: str, body: Dict[str, Any]) -> Dict[str, Any]:
        route = f"/api/{rpc}"
        body = {"trace_id": f"{self._trace}-{next(_counter)}", **body}
        doc = self._http.post_json(route, body)
        if not isinstance(doc, dict):
            raise ProtocolError("expected a JSON object", status=200, route=route)
        header = doc.get("header")
        status = header.get("status") if isinstance(header, dict) else None
        if not isinstance(header, dict) or not isinstance(status, dict):
            raise ProtocolError("expected 'header.status' in the answer", status=200, route=route)
        code = status.get("code", "UNSPECIFIED")
        if code != "OK":
            raise MetaError(str(code), str(status.get("message", "")), route=route,
                            request_id=str(header.get("request_id", "")))
        return doc

    @staticmethod
    def _key_source(block_keys: Optional[IntSequence], token_ids: Optional[IntSequence]) -> Dict[str, Any]:
        if (block_keys is None) == (token_ids is None):
            raise InvalidArgument("give exactly one of block_keys and token_ids")
        if block_keys is not None:
            return {"block_keys": check_keys(block_keys, MAX_KEYS_PER_CALL, "block_keys")}
        return {"token_ids": check_keys(token_ids, MAX_TOKENS_PER_CALL, "token_ids")}

    # -- instances ------------------------------------------------------------------------------------------------

    def register_instance(self, request: RegisterInstanceRequest) -> RegisterInstanceResponse:
        """Registers an instance (OK again for the same identity; DUPLICATE_ENTITY for another one)."""
        route = "/api/registerInstance"
        doc = self._call("registerInstance", request.to_json())
        raw = doc.get("storage_configs", "")
        storages: List[StorageConfig] = []
        if isinstance(raw, str) and raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise ProtocolError("storage_configs is not JSON", status=200, route=route) from None
            if not isinstance(parsed, list):
                raise ProtocolError("storage_configs is not a JSON array", status=200, route=route)
            for s in parsed:
                if not isinstance(s, dict):
                    raise ProtocolError("storage_configs: expected objects", status=200, route=route)
                spec = s.get("storage_spec")
                storages.append(StorageConfig(str(s.get("type", "")), bool(s.get("is_available", False)),
                                              str(s.get("global_unique_name", "")),
                                              spec if isinstance(spec, dict) else None))
        return RegisterInstanceResponse(str(doc["header"].get("request_id", "")), raw if isinstance(raw, str) else "",
                                        storages)

    def get_instance_info(self, instance_id: str) -> InstanceInfo:
        route = "/api/getInstanceInfo"
        doc = self._call("getInstanceInfo", {"instance_id": _text(instance_id, "instance_id")})
        info = doc.get("instance_info")
        if not isinstance(info, dict):
            raise ProtocolError("expected 'instance_info'", status=200, route=route)
        specs = [LocationSpecInfo(str(s.get("name", "")), _int(s.get("size", 0), "size", route))
                 for s in info.get("location_spec_infos", []) if isinstance(s, dict)]
        md = info.get("model_deployment")
        return InstanceInfo(str(info.get("instance_id", "")), str(info.get("instance_group_name", "")),
                            str(info.get("quota_group_name", "")), _int(info.get("block_size", 0), "block_size", route),
                            specs, ModelDeployment.from_json(md, route) if isinstance(md, dict) else None)

    def get_cluster_info(self) -> ClusterInfo:
        """Which node leads (any node answers; no instance needed)."""
        doc = self._call("getClusterInfo", {})
        ep = doc.get("leader_endpoint")
        return ClusterInfo(str(doc.get("self_node_id", "")), str(doc.get("leader_node_id", "")),
                           ep if isinstance(ep, dict) else None)

    # -- reads ----------------------------------------------------------------------------------------------------

    def get_cache_location(self, instance_id: str, *, block_keys: Optional[IntSequence] = None,
                           token_ids: Optional[IntSequence] = None,
                           query_type: QueryType = QueryType.PREFIX_MATCH, block_mask: Optional[BlockMask] = None,
                           sw_size: int = 0, location_spec_names: Sequence[str] = ()) -> GetCacheLocationResponse:
        """Where blocks are (only fully written ones are served).

        Args:
            block_keys / token_ids: the blocks, by key or by the prompt's tokens (the plane derives the keys as
                :func:`kvpool_client.token_block_keys` does).
            query_type: PREFIX_MATCH (the connectors' query), BATCH_GET or REVERSE_ROLL_SW_MATCH.
            block_mask: for PREFIX_MATCH, blocks to skip at the start (the engine has them already).
            sw_size: the window for REVERSE_ROLL_SW_MATCH.
            location_spec_names: only these specs in each location.
        """
        route = "/api/getCacheLocation"
        body: Dict[str, Any] = {"instance_id": _text(instance_id, "instance_id"),
                                "query_type": QueryType(query_type).value, **self._key_source(block_keys, token_ids),
                                "sw_size": _int32(sw_size, "sw_size", 0),
                                "location_spec_names": [_text(s, "location_spec_names") for s in location_spec_names]}
        if block_mask is not None:
            body["block_mask"] = block_mask.to_json()
        doc = self._call("getCacheLocation", body)
        locs = doc.get("locations", [])
        if not isinstance(locs, list):
            raise ProtocolError("expected 'locations': a list", status=200, route=route)
        return GetCacheLocationResponse(str(doc["header"].get("request_id", "")),
                                        [CacheLocation.from_json(x, route) for x in locs])

    def match_prefix(self, instance_id: str, *, block_keys: Optional[IntSequence] = None,
                     token_ids: Optional[IntSequence] = None, skip: int = 0) -> List[CacheLocation]:
        """PREFIX_MATCH: the locations of the blocks from ``skip`` on, up to the first miss; its length is the
        number of blocks an engine can load instead of computing (after the ``skip`` it has already)."""
        return self.get_cache_location(instance_id, block_keys=block_keys, token_ids=token_ids,
                                       query_type=QueryType.PREFIX_MATCH,
                                       block_mask=BlockMask.prefix(skip)).locations

    def get_cache_location_len(self, instance_id: str, *, block_keys: Optional[IntSequence] = None,
                               token_ids: Optional[IntSequence] = None,
                               query_type: QueryType = QueryType.PREFIX_MATCH, sw_size: int = 0) -> int:
        """The hit count of a query without the locations."""
        route = "/api/getCacheLocationLen"
        doc = self._call("getCacheLocationLen", {"instance_id": _text(instance_id, "instance_id"),
                                                 "query_type": QueryType(query_type).value,
                                                 **self._key_source(block_keys, token_ids),
                                                 "sw_size": _int32(sw_size, "sw_size", 0)})
        return _int(doc.get("cache_location_len", 0), "cache_location_len", route)

    # -- writes ---------------------------------------------------------------------------------------------------

    def start_write_cache(self, instance_id: str, *, block_keys: Optional[IntSequence] = None,
                          token_ids: Optional[IntSequence] = None, write_timeout_seconds: int = 30,
                          location_spec_group_names: Sequence[str] = ()) -> StartWriteCacheResponse:
        """Phase one of a write: locations for the keys that do not exist yet (write them within the timeout)."""
        route = "/api/startWriteCache"
        body = {"instance_id": _text(instance_id, "instance_id"), **self._key_source(block_keys, token_ids),
                "write_timeout_seconds": _int32(write_timeout_seconds, "write_timeout_seconds", 1),
                "location_spec_group_names": [_text(s, "location_spec_group_names") for s in location_spec_group_names]}
        doc = self._call("startWriteCache", body)
        sid = doc.get("write_session_id")
        locs = doc.get("locations", [])
        if not isinstance(sid, str) or not isinstance(locs, list):
            raise ProtocolError("expected 'write_session_id' and 'locations'", status=200, route=route)
        return StartWriteCacheResponse(str(doc["header"].get("request_id", "")), sid,
                                       BlockMask.from_json(doc.get("block_mask", {}), route),
                                       [CacheLocation.from_json(x, route) for x in locs])

    def finish_write_cache(self, instance_id: str, write_session_id: str,
                           success: Union[BlockMask, Sequence[bool]]) -> None:
        """Phase two: one flag per location of the session, True only for locations written in full. The plane
        serves those and frees the others; a block whose write failed is never served."""
        mask = success if isinstance(success, BlockMask) else BlockMask.of(success)
        self._call("finishWriteCache", {"instance_id": _text(instance_id, "instance_id"),
                                        "write_session_id": _text(write_session_id, "write_session_id"),
                                        "success_blocks": mask.to_json()})

    def remove_cache(self, instance_id: str, *, block_keys: Optional[IntSequence] = None,
                     token_ids: Optional[IntSequence] = None) -> None:
        """Removes blocks (reads miss them as soon as this returns)."""
        self._call("removeCache", {"instance_id": _text(instance_id, "instance_id"),
                                   **self._key_source(block_keys, token_ids)})

    # -- life cycle -----------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "MetaClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MetaClient({self.url!r})"
