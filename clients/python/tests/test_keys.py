"""Pure functions: the token-to-key derivations (KVCM's and vLLM's test vectors), input checks, masks, file locations."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from kvpool_client import BlockMask, FileUri, InvalidArgument, string_key, token_block_keys, vllm_block_keys
from kvpool_client.keys import check_keys, int_list


@pytest.mark.parametrize("tokens, block_size, keys", [
    (range(1, 17), 4, [455111481605203084, 6902853672176602142, -6574591296779146224, 3436079420768077133]),
    (range(128), 64, [2681637840371060507, -6990124544746687103]),
    ([151643, 872, 198, 3838], 2, [-8366447770138823354, 555627685913999257]),
    ([1, 2, 3, 4, 5], 2, [-8366447769517741626, 455111481605203084]),
    ([7], 4, []),
    ([], 4, []),
])
def test_token_keys_are_kvcms(tokens, block_size, keys) -> None:
    # the vectors of kvcm-compat.md 3.2.3 (computed in Python, C++ and Java there)
    assert token_block_keys(tokens, block_size) == keys


def test_a_key_names_its_whole_prefix_whatever_the_block_size() -> None:
    assert token_block_keys(range(1, 5), 4)[0] == token_block_keys(range(1, 5), 2)[1]
    assert token_block_keys(np.arange(1, 17, dtype=np.int64), 4) == token_block_keys(list(range(1, 17)), 4)


def test_token_key_inputs() -> None:
    with pytest.raises(InvalidArgument, match="block_size"):
        token_block_keys([1], 0)
    with pytest.raises(InvalidArgument, match=r"token_ids\[1\]: expected an integer"):
        token_block_keys([1, 2.0], 1)
    with pytest.raises(InvalidArgument, match=r"token_ids\[0\]: .* outside"):
        token_block_keys([1 << 63], 1)


def test_string_keys_are_the_sglang_connectors() -> None:
    # kvcm-compat.md 3.2.4
    assert string_key("abc") == -5010229573455851542
    assert string_key("page-0") == -3906683858646686286
    with pytest.raises(InvalidArgument):
        string_key(b"abc")  # type: ignore[arg-type]


def test_int_lists() -> None:
    assert int_list(np.array([1, -2, 3], dtype=np.int32), "k") == [1, -2, 3]
    assert int_list((x for x in [4, 5]), "k") == [4, 5]
    assert int_list([np.int64(7), np.uint8(8)], "k") == [7, 8]
    with pytest.raises(InvalidArgument, match="1-D"):
        int_list(np.zeros((2, 2), dtype=np.int64), "k")
    with pytest.raises(InvalidArgument, match=r"k\[0\]: expected an integer, got None"):
        int_list([None], "k")
    with pytest.raises(InvalidArgument, match="got None"):
        int_list(None, "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="got bytes"):
        int_list(b"\x01", "k")
    assert check_keys([-(1 << 63), (1 << 63) - 1], 2) == [-(1 << 63), (1 << 63) - 1]
    with pytest.raises(InvalidArgument, match="at most 2 keys per call, got 3"):
        check_keys([1, 2, 3], 2)


def test_block_masks() -> None:
    assert BlockMask(offset=2).unmasked(4) == [2, 3]
    assert BlockMask.of([True, False, True]).unmasked(4) == [1, 3]  # past the end counts as unmasked
    assert BlockMask(offset=0).to_json() == {"offset": 0}  # a zero offset is still printed: clients test for it
    assert BlockMask.of([False]).to_json() == {"bool_masks": {"values": [False]}}
    assert BlockMask.from_json({"offset": "3"}, "r") == BlockMask(offset=3)
    assert BlockMask.from_json({"bool_masks": {"values": [True]}}, "r") == BlockMask(values=[True])
    assert BlockMask.from_json({}, "r") == BlockMask(values=[])
    with pytest.raises(InvalidArgument):
        BlockMask()
    with pytest.raises(InvalidArgument):
        BlockMask(offset=1, values=[True])
    with pytest.raises(InvalidArgument):
        BlockMask(offset=-1)


def test_file_uris() -> None:
    f = FileUri.parse("file://nfs_01/tmp/nfs/inst/tp0/64_ab?blkid=3&size=1024")
    assert (f.storage, f.path, f.blkid, f.size, f.offset) == ("nfs_01", "/tmp/nfs/inst/tp0/64_ab", 3, 1024, 3072)
    assert FileUri.parse("file://s/x?size=8").offset == 0  # no blkid: the start of the file
    for bad in ["", "mooncake://mc/?key=k&size=1", "file://s/x?blkid=1", "file://s/x?blkid=a&size=1",
                "file://s/x?blkid=-1&size=1"]:
        with pytest.raises(InvalidArgument):
            FileUri.parse(bad)


def test_the_docstring_examples() -> None:
    import doctest

    import kvpool_client.keys

    assert doctest.testmod(kvpool_client.keys).failed == 0


# ---- vLLM sha256_cbor / xxhash_cbor (shared/spec/hashing.md §2-§3) -------------------------------------------------
# Each spec payload is assembled here from the spec's hex and hashed with hashlib / xxhash directly; the client's
# vllm_block_keys must give the same int64 from the tokens and request-level extras.

SHA_NONE_0 = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"
XXH_NONE_0 = "1ebe36576dcb573f26b99533a20aaeca"
TOKENS_1_16 = "90" + "0102030405060708090a0b0c0d0e0f10"
TOKENS_17_32 = "90" + "11121314151617" + "18181819181a181b181c181d181e181f1820"
U64 = (1 << 64) - 1


def _sha(payload_hex: str) -> bytes:
    return hashlib.sha256(bytes.fromhex(payload_hex)).digest()


def _int64(digest: bytes) -> int:
    return int.from_bytes(digest[-8:], "big")  # unsigned, as the spec prints it


def _unsigned(keys):
    return [k & U64 for k in keys]


def _shared_dir() -> Path:
    env = os.environ.get("KVPOOL_SHARED")
    if env:
        return Path(env)
    for d in Path(__file__).resolve().parents:
        if (d.parent / "shared" / "data").is_dir():
            return d.parent / "shared"
    pytest.fail("shared/data not found above the tests; set KVPOOL_SHARED to the shared folder")


def test_vllm_sha256_cbor_sample_file() -> None:
    cases = json.loads((_shared_dir() / "data/hash-vectors/vllm_sha256_cbor_sample.json").read_text())["cases"]
    assert cases
    for c in cases:
        bs = c["block_size"]
        tokens = [90_000 + i for i in range(c["num_tokens"])]  # positions the file lists no block for
        for b in c["blocks"]:
            tokens[b["block_index"] * bs:(b["block_index"] + 1) * bs] = b["token_ids"]
            assert b["extra_keys"] is None
            assert hashlib.sha256(bytes.fromhex(b["cbor_payload_hex"])).hexdigest() == b["block_hash_hex"]
        keys = vllm_block_keys(tokens, bs, c["python_hash_seed"])
        assert len(keys) == c["num_tokens"] // bs
        assert _unsigned(keys)[:len(c["blocks"])] == [b["external_int64_unsigned"] for b in c["blocks"]]
        assert all(-(1 << 63) <= k < (1 << 63) for k in keys)


def test_vllm_sha256_cbor_lora_and_salt() -> None:
    d0 = _sha("835820" + SHA_NONE_0 + TOKENS_1_16 + "82" + "676d792d6c6f7261" + "6673616c742d41")
    assert d0.hex().startswith("360a0f3e") and _int64(d0) == 859214314393778358
    d1 = _sha("835820" + d0.hex() + TOKENS_17_32 + "81" + "676d792d6c6f7261")  # no salt after block 0
    assert d1.hex().endswith("8bdf14") and _int64(d1) == 8381049053207322388
    keys = vllm_block_keys(range(1, 33), 16, "0", lora_name="my-lora", cache_salt="salt-A")
    assert _unsigned(keys) == [_int64(d0), _int64(d1)]


def test_vllm_sha256_cbor_multimodal_offsets_8_and_minus_8() -> None:
    d0 = _sha("835820" + SHA_NONE_0 + TOKENS_1_16 + "81" + "82" + "6b6d6d2d686173682d616263" + "08")
    assert d0.hex().startswith("ac93157e") and _int64(d0) == 5879507683218172094
    d1 = _sha("835820" + d0.hex() + TOKENS_17_32 + "81" + "82" + "6b6d6d2d686173682d616263" + "27")  # 27 = -8
    assert d1.hex().startswith("3d2ef6fa") and _int64(d1) == 1674493178585245433
    for items in ([("mm-hash-abc", 8, 16)], [{"identifier": "mm-hash-abc", "offset": 8, "length": 16}]):
        assert _unsigned(vllm_block_keys(range(1, 33), 16, "0", mm_items=items)) == [_int64(d0), _int64(d1)]
    # an item that ends inside block 0 leaves block 1 without extra keys
    plain1 = _sha("835820" + d0.hex() + TOKENS_17_32 + "f6")
    assert _unsigned(vllm_block_keys(range(1, 33), 16, "0", mm_items=[("mm-hash-abc", 8, 8)])) == \
        [_int64(d0), _int64(plain1)]


def test_vllm_keys_without_extras_and_partial_blocks() -> None:
    d0 = _sha("835820" + SHA_NONE_0 + TOKENS_1_16 + "f6")
    assert _unsigned(vllm_block_keys(list(range(1, 20)), 16, "0")) == [_int64(d0)]
    assert vllm_block_keys([1, 2, 3], 16, "0") == []
    # an empty salt and no items are no extra keys (null, not an empty array)
    assert vllm_block_keys(range(1, 17), 16, "0", cache_salt="", mm_items=[]) == vllm_block_keys(range(1, 17), 16, "0")
    # "" is a seed (PYTHONHASHSEED set to empty): H(cbor("")) = H(60)
    root = hashlib.sha256(bytes.fromhex("60")).digest()
    d = _sha("835820" + root.hex() + "84" + "01020304" + "f6")
    assert _unsigned(vllm_block_keys([1, 2, 3, 4], 4, "")) == [_int64(d)]
    assert vllm_block_keys(np.arange(1, 17, dtype=np.int64), 16, "0") == vllm_block_keys(range(1, 17), 16, "0")


def test_vllm_xxhash_cbor_two_block_chain() -> None:
    xxhash = pytest.importorskip("xxhash", reason="xxhash_cbor needs the xxhash wheel (run-tests.sh installs it)")
    assert xxhash.xxh3_128_digest(b"abc").hex() == "06b05ab6733a618578af5f94892f3950"  # high half first
    assert xxhash.xxh3_128_digest(bytes.fromhex("6130")).hex() == XXH_NONE_0
    d0 = xxhash.xxh3_128_digest(bytes.fromhex("8350" + XXH_NONE_0 + TOKENS_1_16 + "f6"))
    assert d0.hex() == "c2d7a75070fc6d6b0c3fb0af456c1009" and _int64(d0) == 882618318818381833
    d1 = xxhash.xxh3_128_digest(bytes.fromhex("8350" + d0.hex() + TOKENS_17_32 + "f6"))
    assert d1.hex() == "93add93233ea572fb2e2b1685bac6f8d" and _int64(d1) == 12890060145260523405
    assert _unsigned(vllm_block_keys(range(1, 40), 16, "0", algo="xxhash_cbor")) == [_int64(d0), _int64(d1)]


def test_vllm_keys_refuse_bad_inputs() -> None:
    with pytest.raises(InvalidArgument, match="PYTHONHASHSEED"):
        vllm_block_keys(range(1, 17), 16, None)
    with pytest.raises(InvalidArgument, match="seed: expected the PYTHONHASHSEED string"):
        vllm_block_keys(range(1, 17), 16, 0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="algo: expected one of sha256_cbor, xxhash_cbor, got 'sha256'"):
        vllm_block_keys(range(1, 17), 16, "0", algo="sha256")
    with pytest.raises(InvalidArgument, match="block_size"):
        vllm_block_keys(range(1, 17), 0, "0")
    with pytest.raises(InvalidArgument, match=r"token_ids\[1\]: expected an integer"):
        vllm_block_keys([1, 2.5], 1, "0")
    with pytest.raises(InvalidArgument, match=r"token_ids\[0\]: .* outside"):
        vllm_block_keys([1 << 63], 1, "0")
    with pytest.raises(InvalidArgument, match="lora_name: must not be empty"):
        vllm_block_keys([1], 1, "0", lora_name="")
    with pytest.raises(InvalidArgument, match="cache_salt: at most 4096 UTF-8 bytes"):
        vllm_block_keys([1], 1, "0", cache_salt="s" * 4097)
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].offset: must be >= 0, was -8"):
        vllm_block_keys([1], 1, "0", mm_items=[("x", -8, 16)])
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].length is required"):
        vllm_block_keys([1], 1, "0", mm_items=[{"identifier": "x", "offset": 0}])
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].identifier: at most 1024 UTF-8 bytes, got 1536"):
        vllm_block_keys([1], 1, "0", mm_items=[("中" * 512, 0, 1)])
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].identifier: is not valid Unicode"):
        vllm_block_keys([1], 1, "0", mm_items=[("a\ud800", 0, 1)])
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].offset \+ length overflows"):
        vllm_block_keys([1], 1, "0", mm_items=[("x", (1 << 63) - 1, 1)])
    with pytest.raises(InvalidArgument, match=r"mm_items\[0\].offset: expected an integer"):
        vllm_block_keys([1], 1, "0", mm_items=[("x", 1.5, 1)])
    with pytest.raises(InvalidArgument, match="mm_items: at most 4096 items, got 4097"):
        vllm_block_keys([1], 1, "0", mm_items=[("x", 0, 1)] * 4097)
    assert len(vllm_block_keys([1], 1, "0", mm_items=[("x", 0, 1)] * 4096)) == 1
