"""KVPool clients for inference engines.

* :class:`AgentClient`: the node's data agent, block bytes through its shared-memory segment (save, load,
  layer-wise load, query, remove).
* :class:`MetaClient`: the metadata plane's KVCM meta HTTP API (register an instance, match, two-phase write,
  remove).
"""

from .agent import MAX_KEYS_PER_CALL, AgentClient, LayerwiseLoad, Loaded
from .errors import (BadRequest, HttpError, InvalidArgument, KvpoolError, LayerwiseLoadFailed, MetaError, NotFound,
                     PayloadTooLarge, ProtocolError, ServerError, TransportError)
from .keys import INT64_MAX, INT64_MIN, string_key, token_block_keys, vllm_block_keys
from .meta import (BlockMask, CacheLocation, ClusterInfo, FileUri, GetCacheLocationResponse, InstanceInfo,
                   LocationSpec, LocationSpecGroup, LocationSpecInfo, MetaClient, ModelDeployment, QueryType,
                   RegisterInstanceRequest, RegisterInstanceResponse, StartWriteCacheResponse, StorageConfig,
                   StorageType)

__version__ = "0.1.0"

__all__ = [
    "AgentClient", "Loaded", "LayerwiseLoad", "MAX_KEYS_PER_CALL",
    "MetaClient", "QueryType", "StorageType", "LocationSpecInfo", "ModelDeployment", "LocationSpecGroup",
    "RegisterInstanceRequest", "RegisterInstanceResponse", "StorageConfig", "LocationSpec", "CacheLocation",
    "BlockMask", "GetCacheLocationResponse", "StartWriteCacheResponse", "InstanceInfo", "ClusterInfo", "FileUri",
    "KvpoolError", "InvalidArgument", "TransportError", "ProtocolError", "HttpError", "BadRequest", "NotFound",
    "PayloadTooLarge", "ServerError", "MetaError", "LayerwiseLoadFailed",
    "token_block_keys", "string_key", "vllm_block_keys", "INT64_MIN", "INT64_MAX", "__version__",
]
