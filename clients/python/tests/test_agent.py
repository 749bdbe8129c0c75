"""AgentClient against a real data agent: bytes through the shared segment, byte for byte."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from conftest import BLOCK, POOL_INSTANCE, wait_until
from kvpool_client import AgentClient, MetaClient, QueryType


def test_status_and_the_mapped_segment(client: AgentClient, agent) -> None:
    assert client.block_bytes == BLOCK
    assert client.shm_path == str(agent.shm)
    assert client.shm_size == 64 << 20 == os.path.getsize(agent.shm)
    assert client.engine_area == (0, 32 << 20)
    assert client.engine_blocks == 512
    assert client.agent_id == "pytest-a"
    assert client.layers >= 1 and client.layer_bytes * client.layers == BLOCK
    assert len(client.engine_buffer) == 32 << 20 and len(client.shared_memory) == 64 << 20
    assert client.block_offset(3) == 3 * BLOCK
    with pytest.raises(IndexError):
        client.block(512)
    st = client.status()
    assert st["block_bytes"] == BLOCK and {t["name"] for t in st["tiers"]} >= {"host", "nvme", "pool"}


def test_the_mapping_is_the_agents_file(client: AgentClient, agent) -> None:
    # bytes written through the client's view are in the agent's /dev/shm file, and the reverse: no copy between
    client.block(7)[:16] = b"kvpool-py-client"
    with open(agent.shm, "r+b") as f:
        f.seek(7 * BLOCK)
        assert f.read(16) == b"kvpool-py-client"
        f.seek(7 * BLOCK + 100)
        f.write(b"written-by-file")
    assert bytes(client.block(7)[100:115]) == b"written-by-file"


def test_save_then_load_byte_for_byte_through_memoryviews(client: AgentClient, fresh_keys) -> None:
    keys = fresh_keys(4)
    src = [os.urandom(BLOCK) for _ in keys]
    for i, b in enumerate(src):
        client.block(10 + i)[:] = b
    assert client.save(keys, [client.block_offset(10 + i) for i in range(4)]) == [True] * 4
    dst = [client.block_offset(100 + i) for i in range(4)]
    for o in dst:
        client.block_at(o)[:] = b"\0" * BLOCK
    r = client.load(keys, dst)
    assert r.found == [True] * 4 and r.hits == 4 and r.offsets == dst
    assert r.tiers == ["host"] * 4
    for o, b in zip(dst, src):
        assert bytes(client.block_at(o)) == b


def test_save_then_load_byte_for_byte_through_numpy(client: AgentClient, fresh_keys) -> None:
    keys = np.array(fresh_keys(8), dtype=np.int64)  # numpy keys and offsets are taken as they are
    src = client.array(client.block_offset(20), 8)
    assert src.shape == (8, BLOCK) and src.dtype == np.uint8
    src[:] = np.random.default_rng(7).integers(0, 256, size=src.shape, dtype=np.uint8)
    expected = src.copy()
    # the array is the segment itself: a write through it is seen through the memoryview
    assert bytes(client.block(20)[:64]) == expected[0, :64].tobytes()
    offs = np.arange(20, 28, dtype=np.int64) * BLOCK
    assert client.save(keys, offs, parent=int(keys[0]) - 1) == [True] * 8

    words = client.array(client.block_offset(200), 8, dtype=np.uint32)
    assert words.shape == (8, BLOCK // 4)
    words[:] = 0xDEADBEEF
    r = client.load(keys, np.arange(200, 208) * BLOCK)
    assert r.found == [True] * 8
    assert np.array_equal(words.view(np.uint8).reshape(8, BLOCK), expected)
    assert np.array_equal(client.engine_array()[200:208], expected)


def test_load_into_the_agents_half(client: AgentClient, fresh_keys) -> None:
    keys = fresh_keys(3)
    src = [os.urandom(BLOCK) for _ in keys]
    for i, b in enumerate(src):
        client.block(30 + i)[:] = b
    assert all(client.save(keys, [client.block_offset(30 + i) for i in range(3)]))
    r = client.load(keys)  # no offsets: the agent picks them in its half (its load ring)
    assert r.found == [True] * 3
    lo, hi = client.engine_area[1], client.shm_size
    assert all(lo <= o <= hi - BLOCK for o in r.offsets) and len(set(r.offsets)) == 3
    for o, b in zip(r.offsets, src):
        assert bytes(client.block_at(o)) == b


def test_unknown_keys_are_misses(client: AgentClient, fresh_keys) -> None:
    keys = fresh_keys(2)
    r = client.load(keys, [client.block_offset(40), client.block_offset(41)])
    assert r.found == [False, False] and r.hits == 0 and r.tiers == [None, None]
    assert r.missing == [0, 1] and r.prefix_hits() == 0


def test_a_partial_hit_reports_each_block(client: AgentClient, fresh_keys) -> None:
    keys = fresh_keys(3)
    client.block(50)[:] = os.urandom(BLOCK)
    assert client.save(keys[:1], [client.block_offset(50)]) == [True]
    r = client.load(keys, [client.block_offset(60 + i) for i in range(3)])
    assert r.found == [True, False, False] and r.prefix_hits() == 1 and r.missing == [1, 2]
    assert bytes(client.block(60)) == bytes(client.block(50))


def test_query_and_remove(client: AgentClient, fresh_keys, meta) -> None:
    keys = fresh_keys(2)
    for i in range(2):
        client.block(70 + i)[:] = os.urandom(BLOCK)
    assert client.save(keys, [client.block_offset(70), client.block_offset(71)]) == [True, True]
    assert all("host" in t for t in client.query(keys))
    assert client.query([keys[0] + 50_000]) == [[]]
    # the NVMe and pool copies are written behind the save
    wait_until(lambda: all({"nvme", "pool"} <= set(t) for t in client.query(keys)), what="nvme and pool copies")
    with MetaClient(meta.url) as m:
        assert m.get_cache_location(POOL_INSTANCE, block_keys=keys, query_type=QueryType.BATCH_GET).hits == 2
        assert client.remove(keys, global_=True) == [True, True]
        assert client.query(keys) == [[], []]
        assert client.load(keys, [client.block_offset(72), client.block_offset(73)]).found == [False, False]
        assert m.get_cache_location(POOL_INSTANCE, block_keys=keys, query_type=QueryType.BATCH_GET).hits == 0
    assert client.remove(keys) == [False, False]  # nothing left to remove


def test_a_local_remove_leaves_the_pool_copy(client: AgentClient, fresh_keys) -> None:
    keys = fresh_keys(1)
    client.block(80)[:] = os.urandom(BLOCK)
    client.save(keys, [client.block_offset(80)])
    wait_until(lambda: "pool" in client.query(keys)[0], what="the pool copy")
    assert client.remove(keys) == [True]
    assert client.query(keys) == [["pool"]]
    r = client.load(keys, [client.block_offset(81)])
    assert r.found == [True] and r.tiers == ["pool"]
    assert bytes(client.block(81)) == bytes(client.block(80))


def test_extreme_keys_round_trip(client: AgentClient) -> None:
    keys = [-(1 << 63), (1 << 63) - 1, -1]  # the whole signed 64-bit range is a key
    for i in range(3):
        client.block(90 + i)[:] = os.urandom(BLOCK)
    assert client.save(keys, [client.block_offset(90 + i) for i in range(3)]) == [True] * 3
    r = client.load(keys, [client.block_offset(93 + i) for i in range(3)])
    assert r.found == [True] * 3
    for i in range(3):
        assert bytes(client.block(93 + i)) == bytes(client.block(90 + i))
    client.remove(keys, global_=True)


def test_one_client_from_several_threads(client: AgentClient, fresh_keys) -> None:
    errors: list = []

    def work(t: int) -> None:
        try:
            for round_ in range(5):
                keys = fresh_keys(2)
                src, dst = 300 + t * 8 + round_ % 2 * 2, 400 + t * 8 + round_ % 2 * 2
                data = [os.urandom(BLOCK) for _ in keys]
                for j in range(2):
                    client.block(src + j)[:] = data[j]
                assert client.save(keys, [client.block_offset(src + j) for j in range(2)]) == [True, True]
                r = client.load(keys, [client.block_offset(dst + j) for j in range(2)])
                assert r.found == [True, True]
                for j in range(2):
                    assert bytes(client.block(dst + j)) == data[j]
        except BaseException as e:  # reported below, with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert len(client._http._idle) <= 4  # kept-alive connections are bounded


def test_close_keeps_views_valid_and_refuses_calls(agent) -> None:
    c = AgentClient(agent.url)
    view = c.block(5)
    view[:4] = b"abcd"
    c.close()
    assert bytes(view[:4]) == b"abcd"  # the mapping stays while a view of it exists
    with pytest.raises(Exception, match="closed"):
        c.status()
    with pytest.raises(Exception, match="closed"):
        c.block(0)
    c.close()  # twice is fine
