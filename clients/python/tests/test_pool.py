"""A block saved through one agent is loaded through another (another node of the same instance) from the pool."""

from __future__ import annotations

import os

from conftest import BLOCK, wait_until
from kvpool_client import AgentClient


def test_saved_on_one_agent_loaded_on_another(client: AgentClient, agent_b, fresh_keys) -> None:
    keys = fresh_keys(5)
    src = [os.urandom(BLOCK) for _ in keys]
    for i, b in enumerate(src):
        client.block(140 + i)[:] = b
    assert client.save(keys, [client.block_offset(140 + i) for i in range(5)], parent=keys[0] - 1) == [True] * 5
    wait_until(lambda: all("pool" in t for t in client.query(keys)), what="the pool copies")

    with AgentClient(agent_b.url, timeout=30) as b:
        assert b.shm_path != client.shm_path  # its own segment: the bytes can only come through the pool
        assert b.query(keys) == [["pool"]] * 5
        dst = [b.block_offset(10 + i) for i in range(5)]
        for o in dst:
            b.block_at(o)[:] = b"\xee" * BLOCK
        r = b.load(keys, dst)
        assert r.found == [True] * 5 and r.tiers == ["pool"] * 5
        for o, want in zip(dst, src):
            assert bytes(b.block_at(o)) == want
        assert all("host" in t for t in b.query(keys))  # promoted into that agent's host tier
