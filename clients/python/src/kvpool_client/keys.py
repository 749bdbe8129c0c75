"""Block keys: checks of what callers pass, the KVCM token-to-key derivation and vLLM's CBOR prefix hashes.

Keys are signed 64-bit integers everywhere in KVPool (the agent, the metadata plane, events). Python's ints are
unbounded and numpy has unsigned types, so every key and offset is checked here before it is sent: a key of 2**63
would otherwise be refused by the server at best, or read as another key by a careless one.
"""

from __future__ import annotations

import hashlib
import operator
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Union, cast

from .errors import InvalidArgument

__all__ = ["INT64_MIN", "INT64_MAX", "token_block_keys", "string_key", "vllm_block_keys", "int_list", "check_int64"]

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_MASK = (1 << 64) - 1

IntSequence = Union[Sequence[int], Iterable[int], Any]  # lists, tuples, ranges, numpy integer arrays


def _signed(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def token_block_keys(token_ids: IntSequence, block_size: int) -> List[int]:
    """The block keys the metadata plane derives from ``token_ids`` (KVCM's scheme, from RTP-LLM).

    One running signed 64-bit hash over all tokens; key *b* is the hash after ``(b+1) * block_size`` tokens, so it
    names the whole prefix. A trailing partial block has no key. Use it to give the agent the same keys a vLLM
    connector makes the metadata plane derive from tokens.

    >>> token_block_keys(range(1, 17), 4)[0]
    455111481605203084
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise InvalidArgument(f"block_size: expected a positive integer, got {block_size!r}")
    tokens = int_list(token_ids, "token_ids", allow_empty=True)
    keys: List[int] = []
    h = 0
    golden = 0x9E3779B97F4A7C15
    for n, t in enumerate(tokens, 1):
        if not INT64_MIN <= t <= INT64_MAX:
            raise InvalidArgument(f"token_ids[{n - 1}]: {t} is outside the signed 64-bit range")
        # h ^= (t + 0x9E3779B97F4A7C15 + (h << 12) + (h >> 32)), in wrapping int64 arithmetic (>> is arithmetic)
        h = _signed(h ^ ((t + golden + (h << 12) + (h >> 32)) & _MASK))
        if n % block_size == 0:
            keys.append(h)
    return keys


def string_key(text: str) -> int:
    """The block key of a string page hash, as KVCM's SGLang HiCache connector makes it: the first 8 bytes of
    SHA-256 of its UTF-8, as a big-endian signed 64-bit integer.

    >>> string_key("abc")
    -5010229573455851542
    """
    if not isinstance(text, str):
        raise InvalidArgument(f"text: expected a string, got {type(text).__name__}")
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big", signed=True)


def check_int64(value: Any, what: str) -> int:
    """``value`` as an int in the signed 64-bit range, or InvalidArgument naming ``what``."""
    if isinstance(value, bool):
        raise InvalidArgument(f"{what}: expected an integer, got {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise InvalidArgument(f"{what}: expected an integer, got {value!r}") from None
    if not INT64_MIN <= v <= INT64_MAX:
        raise InvalidArgument(f"{what}: {v} is outside the signed 64-bit range [-2**63, 2**63-1]")
    return v


def int_list(values: IntSequence, what: str, *, allow_empty: bool = False) -> List[int]:
    """A sequence of integers (list, tuple, range, 1-D numpy integer array) as a list of Python ints.

    Floats, bools and strings are refused, as the servers refuse them: a key of 1.5 is not block 1.
    """
    if values is None:
        raise InvalidArgument(f"{what}: expected a sequence of integers, got None")
    if isinstance(values, (str, bytes, bytearray, memoryview)) or isinstance(values, dict):
        raise InvalidArgument(f"{what}: expected a sequence of integers, got {type(values).__name__}")
    dtype = getattr(values, "dtype", None)
    if dtype is not None and hasattr(values, "tolist"):  # numpy: one conversion, not one call per element
        if getattr(values, "ndim", 1) != 1:
            raise InvalidArgument(f"{what}: expected a 1-D array, got shape {getattr(values, 'shape', '?')}")
        if getattr(dtype, "kind", "") not in ("i", "u"):
            raise InvalidArgument(f"{what}: expected an integer array, got dtype {dtype}")
        seq = values.tolist()
    else:
        try:
            seq = list(values)
        except TypeError:
            raise InvalidArgument(f"{what}: expected a sequence of integers, got {type(values).__name__}") from None
    if not seq and not allow_empty:
        raise InvalidArgument(f"{what}: expected at least one value, got none")
    if all(type(v) is int for v in seq):  # the usual case, checked at C speed
        return cast(List[int], seq)
    out: List[int] = []
    for i, v in enumerate(seq):
        if type(v) is int:
            out.append(v)
            continue
        if isinstance(v, bool):
            raise InvalidArgument(f"{what}[{i}]: expected an integer, got {v!r}")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise InvalidArgument(f"{what}[{i}]: expected an integer, got {v!r}") from None
    return out


def check_keys(keys: IntSequence, max_keys: int, what: str = "keys") -> List[int]:
    """Keys as int64 values, at least one and at most ``max_keys``."""
    ks = int_list(keys, what)
    if len(ks) > max_keys:
        raise InvalidArgument(f"{what}: at most {max_keys} keys per call, got {len(ks)}")
    if ks and (min(ks) < INT64_MIN or max(ks) > INT64_MAX):
        for i, k in enumerate(ks):
            if not INT64_MIN <= k <= INT64_MAX:
                raise InvalidArgument(f"{what}[{i}]: {k} is outside the signed 64-bit range [-2**63, 2**63-1]")
    return ks


# ---- vLLM's CBOR prefix hashes (sha256_cbor, xxhash_cbor) ----------------------------------------------------------
# shared/spec/hashing.md §2-§3: digest_i = H(cbor([parent_i, [tokens of block i], extra_i or None])), parent_0 =
# NONE_HASH = H(cbor(PYTHONHASHSEED)), parent_{i+1} = the full digest of block i; the key is the digest's last 8 bytes
# big-endian. Bit-exact with KVPool's vllm-sha256-cbor / vllm-xxhash-cbor schemes (dev.kvpool.api.hash).

MAX_MM_ITEMS = 4096
MAX_TEXT_BYTES = 1024  # a LoRA name or a multimodal identifier, in UTF-8 bytes
MAX_SALT_BYTES = 4096

_ALGOS = ("sha256_cbor", "xxhash_cbor")


def _cbor_head(major: int, n: int) -> bytes:
    m = major << 5
    if n < 24:
        return bytes((m | n,))
    if n < 0x100:
        return bytes((m | 24, n))
    if n < 0x10000:
        return bytes((m | 25,)) + n.to_bytes(2, "big")
    if n < 0x100000000:
        return bytes((m | 26,)) + n.to_bytes(4, "big")
    return bytes((m | 27,)) + n.to_bytes(8, "big")


def _cbor(obj: Any, out: bytearray) -> None:
    """Canonical CBOR of the few types vLLM hashes (shortest integer heads, as cbor2's canonical=True)."""
    if obj is None:
        out.append(0xF6)
    elif type(obj) is int:
        out += _cbor_head(0, obj) if obj >= 0 else _cbor_head(1, -1 - obj)
    elif isinstance(obj, str):
        b = obj.encode("utf-8")
        out += _cbor_head(3, len(b))
        out += b
    elif isinstance(obj, (bytes, bytearray)):
        out += _cbor_head(2, len(obj))
        out += obj
    elif isinstance(obj, (list, tuple)):
        out += _cbor_head(4, len(obj))
        for v in obj:
            _cbor(v, out)
    else:
        raise InvalidArgument(f"cannot CBOR-encode a {type(obj).__name__}")


def _hasher(algo: str) -> Any:
    if algo == "sha256_cbor":
        return lambda b: hashlib.sha256(b).digest()
    if algo == "xxhash_cbor":
        try:
            import xxhash  # optional: pip install kvpool-client[xxhash]
        except ImportError:
            raise ImportError("algo 'xxhash_cbor' needs the xxhash package (pip install 'kvpool-client[xxhash]' or "
                              "pip install xxhash); sha256_cbor needs nothing") from None
        # xxh3_128_digest: big-endian, high 64 bits first (spec §3.6)
        return lambda b: xxhash.xxh3_128_digest(b)
    raise InvalidArgument(f"algo: expected one of {', '.join(_ALGOS)}, got {algo!r} (vLLM's pickle-based sha256 and "
                          "xxhash are not reproducible outside CPython and are not supported)")


def _text(value: Any, what: str, max_bytes: int) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{what}: expected a string, got {type(value).__name__}")
    if not value:
        raise InvalidArgument(f"{what}: must not be empty")
    try:
        n = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what}: is not valid Unicode text (unpaired surrogate)") from None
    if n > max_bytes:
        raise InvalidArgument(f"{what}: at most {max_bytes} UTF-8 bytes, got {n}")
    return value


def _mm_items(mm_items: Any) -> List[tuple]:
    if mm_items is None:
        return []
    if isinstance(mm_items, (str, bytes, Mapping)):
        raise InvalidArgument(f"mm_items: expected a sequence of items, got {type(mm_items).__name__}")
    items = list(mm_items)
    if len(items) > MAX_MM_ITEMS:
        raise InvalidArgument(f"mm_items: at most {MAX_MM_ITEMS} items, got {len(items)}")
    out = []
    for i, it in enumerate(items):
        at = f"mm_items[{i}]"
        if isinstance(it, Mapping):
            missing = [k for k in ("identifier", "offset", "length") if k not in it]
            if missing:
                raise InvalidArgument(f"{at}.{missing[0]} is required")
            ident, off, length = it["identifier"], it["offset"], it["length"]
        elif isinstance(it, (tuple, list)) and len(it) == 3:
            ident, off, length = it
        else:
            raise InvalidArgument(f"{at}: expected (identifier, offset, length) or a mapping with those keys")
        ident = _text(ident, f"{at}.identifier", MAX_TEXT_BYTES)
        off = check_int64(off, f"{at}.offset")
        length = check_int64(length, f"{at}.length")
        if off < 0:
            raise InvalidArgument(f"{at}.offset: must be >= 0, was {off}")
        if length < 0:
            raise InvalidArgument(f"{at}.length: must be >= 0, was {length}")
        if off + length > INT64_MAX:
            raise InvalidArgument(f"{at}.offset + length overflows a 64-bit integer ({off} + {length})")
        out.append((ident, off, length))
    return out


def _extra_keys(blocks: int, block_size: int, lora_name: Optional[str], cache_salt: Optional[str],
                items: List[tuple]) -> List[Optional[tuple]]:
    """vLLM's generate_block_hash_extra_keys for every full block, all tokens being prompt tokens (spec §3.4)."""
    out: List[Optional[tuple]] = []
    cur = 0
    for b in range(blocks):
        start, end = b * block_size, (b + 1) * block_size
        keys: List[Any] = []
        if lora_name is not None:
            keys.append(lora_name)
        if items and items[-1][1] + items[-1][2] >= start:
            while cur < len(items):
                ident, off, length = items[cur]
                if end <= off:
                    break  # the block has not reached this item
                if start > off + length:
                    cur += 1  # the block has passed it
                    continue
                keys.append((ident, off - start))  # negative when the item began in an earlier block
                if end >= off + length:
                    cur += 1
                else:
                    break
        if b == 0 and cache_salt:
            keys.append(cache_salt)
        out.append(tuple(keys) if keys else None)
    return out


def vllm_block_keys(token_ids: IntSequence, block_size: int, seed: Optional[str], algo: str = "sha256_cbor",
                    lora_name: Optional[str] = None, cache_salt: Optional[str] = None,
                    mm_items: Any = None) -> List[int]:
    """The block keys vLLM computes with ``--prefix-caching-hash-algo`` ``sha256_cbor`` or ``xxhash_cbor``, as
    KVPool's ``vllm-sha256-cbor`` / ``vllm-xxhash-cbor`` instances derive them from the same inputs.

    ``seed`` is the engine's ``PYTHONHASHSEED`` string (``""`` is a seed; None means unset, where vLLM's root hash is
    random: refused). ``lora_name`` keys every block, ``cache_salt`` the first (an empty salt is none), ``mm_items``
    are ``(identifier, offset, length)`` tuples (or mappings) of multimodal placeholders in position order. Keys are
    returned as signed int64 (KVPool's form); vLLM's KV events print the same bits unsigned: ``k & (2**64 - 1)``.
    ``xxhash_cbor`` needs the ``xxhash`` package.

    >>> vllm_block_keys(range(1, 17), 16, "0", lora_name="my-lora", cache_salt="salt-A")
    [859214314393778358]
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise InvalidArgument(f"block_size: expected a positive integer, got {block_size!r}")
    if seed is None:
        raise InvalidArgument("seed: vLLM's PYTHONHASHSEED is needed; without it vLLM's root hash (NONE_HASH) is 32 "
                              "random bytes per process, so its block keys cannot be derived")
    if not isinstance(seed, str):
        raise InvalidArgument(f"seed: expected the PYTHONHASHSEED string, got {type(seed).__name__}")
    digest = _hasher(algo)
    if lora_name is not None:
        _text(lora_name, "lora_name", MAX_TEXT_BYTES)
    if cache_salt is not None and cache_salt != "":
        _text(cache_salt, "cache_salt", MAX_SALT_BYTES)
    items = _mm_items(mm_items)
    tokens = int_list(token_ids, "token_ids", allow_empty=True)
    if tokens and (min(tokens) < INT64_MIN or max(tokens) > INT64_MAX):
        for i, t in enumerate(tokens):
            if not INT64_MIN <= t <= INT64_MAX:
                raise InvalidArgument(f"token_ids[{i}]: {t} is outside the signed 64-bit range")
    blocks = len(tokens) // block_size
    extras = _extra_keys(blocks, block_size, lora_name, cache_salt, items)
    buf = bytearray()
    _cbor(seed, buf)
    parent = digest(bytes(buf))
    keys: List[int] = []
    for b in range(blocks):
        buf = bytearray()
        _cbor((parent, tuple(tokens[b * block_size:(b + 1) * block_size]), extras[b]), buf)
        parent = digest(bytes(buf))
        keys.append(int.from_bytes(parent[-8:], "big", signed=True))
    return keys
