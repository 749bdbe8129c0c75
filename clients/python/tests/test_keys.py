"""Pure functions: the token-to-key derivation (KVCM's test vectors), input checks, masks, file locations."""

from __future__ import annotations

import numpy as np
import pytest

from kvpool_client import BlockMask, FileUri, InvalidArgument, string_key, token_block_keys
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
