"""Block keys: checks of what callers pass, and the KVCM token-to-key derivation.

Keys are signed 64-bit integers everywhere in KVPool (the agent, the metadata plane, events). Python's ints are
unbounded and numpy has unsigned types, so every key and offset is checked here before it is sent: a key of 2**63
would otherwise be refused by the server at best, or read as another key by a careless one.
"""

from __future__ import annotations

import hashlib
import operator
from typing import Any, Iterable, List, Sequence, Union, cast

from .errors import InvalidArgument

__all__ = ["INT64_MIN", "INT64_MAX", "token_block_keys", "string_key", "int_list", "check_int64"]

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
