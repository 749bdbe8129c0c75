"""MetaClient against the real metadata plane: the calls an engine connector makes, round trip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import BLOCK, POOL_INSTANCE, wait_until
from kvpool_client import (AgentClient, BadRequest, BlockMask, FileUri, InvalidArgument, LocationSpecInfo, MetaClient,
                           MetaError, ModelDeployment, QueryType, RegisterInstanceRequest, token_block_keys)

SPEC = 4096


def register(m: MetaClient, instance: str, block_size: int = 16, model: str = "py-model"):
    return m.register_instance(RegisterInstanceRequest(
        instance_group="default", instance_id=instance, block_size=block_size,
        location_spec_infos=[LocationSpecInfo("tp0", SPEC)],
        model_deployment=ModelDeployment(model_name=model, dtype="bf16", tp_size=1)))


@pytest.fixture
def m(meta):
    with MetaClient(meta.url, trace_prefix="pytest") as c:
        yield c


def test_register_and_instance_info(m: MetaClient, meta) -> None:
    r = register(m, "py-meta-1")
    assert [s.type for s in r.storages] == ["file"]
    s = r.storages[0]
    assert s.global_unique_name == "nfs_py" and s.is_available
    assert s.storage_spec is not None and s.storage_spec["root_path"] == f"{meta.storage_root}/"
    assert r.request_id.startswith("pytest-")
    # the same identity again is OK; another one under the same id is a duplicate
    register(m, "py-meta-1")
    with pytest.raises(MetaError) as e:
        register(m, "py-meta-1", model="another-model")
    assert e.value.code == "DUPLICATE_ENTITY" and e.value.status == 200 and e.value.message
    info = m.get_instance_info("py-meta-1")
    assert info.instance_id == "py-meta-1" and info.instance_group == "default" and info.block_size == 16
    assert info.location_spec_infos == [LocationSpecInfo("tp0", SPEC)]
    assert info.model_deployment is not None and info.model_deployment.model_name == "py-model"
    assert m.get_cluster_info().leader_node_id


def test_two_phase_write_then_match(m: MetaClient) -> None:
    inst = "py-meta-2"
    register(m, inst)
    keys = [11, 12, 13]
    w = m.start_write_cache(inst, block_keys=keys)
    assert w.block_mask == BlockMask(offset=0) and len(w.locations) == 3 and w.write_session_id
    assert w.new_key_indexes(3) == [0, 1, 2]
    # an engine writes each block where its location says (the file storage: blkid x size in a slab file)
    payload = {}
    for k, loc in zip(keys, w.locations):
        f = FileUri.parse(loc.uri("tp0") or "")
        assert f.size == SPEC and f.storage == "nfs_py"
        payload[k] = os.urandom(SPEC)
        Path(f.path).parent.mkdir(parents=True, exist_ok=True)
        with open(f.path, "r+b" if os.path.exists(f.path) else "w+b") as fh:
            fh.seek(f.offset)
            fh.write(payload[k])
    m.finish_write_cache(inst, w.write_session_id, [True, False, True])  # the middle write "failed"

    got = m.get_cache_location(inst, block_keys=keys, query_type=QueryType.BATCH_GET)
    assert [loc.found for loc in got.locations] == [True, False, True]  # a failed write is never served
    assert got.locations[0].uri("tp0") == w.locations[0].uri("tp0")
    f = FileUri.parse(got.locations[2].uri("tp0") or "")
    with open(f.path, "rb") as fh:
        fh.seek(f.offset)
        assert fh.read(SPEC) == payload[13]
    assert len(m.match_prefix(inst, block_keys=keys)) == 1  # the prefix stops at the miss
    assert len(m.match_prefix(inst, block_keys=[999] + keys, skip=1)) == 1
    assert m.get_cache_location_len(inst, block_keys=keys, query_type=QueryType.BATCH_GET) == 2
    assert m.get_cache_location_len(inst, block_keys=keys) == 1

    # existing keys get no location: a prefix of them is an offset mask
    w2 = m.start_write_cache(inst, block_keys=[11, 13, 14])
    assert w2.block_mask == BlockMask(offset=2) and len(w2.locations) == 1
    assert w2.new_key_indexes(3) == [2]
    m.finish_write_cache(inst, w2.write_session_id, BlockMask.of([False]))

    m.remove_cache(inst, block_keys=keys)
    assert m.get_cache_location(inst, block_keys=keys, query_type=QueryType.BATCH_GET).hits == 0


def test_token_keys_match_the_planes(m: MetaClient) -> None:
    inst = "py-meta-3"
    register(m, inst, block_size=16)
    tokens = list(range(1000, 1040))  # 2 whole blocks of 16 and 8 tokens that make no block
    w = m.start_write_cache(inst, token_ids=tokens)
    assert len(w.locations) == 2
    m.finish_write_cache(inst, w.write_session_id, [True, True])
    # the keys the plane derived from the tokens are the ones token_block_keys gives
    keys = token_block_keys(tokens, 16)
    assert len(keys) == 2
    assert m.get_cache_location(inst, block_keys=keys, query_type=QueryType.BATCH_GET).hits == 2
    assert len(m.match_prefix(inst, token_ids=tokens)) == 2
    assert len(m.match_prefix(inst, token_ids=tokens, skip=1)) == 1


def test_meta_errors(m: MetaClient, meta) -> None:
    with pytest.raises(MetaError) as e:
        m.get_cache_location("py-nobody", block_keys=[1])
    assert e.value.code == "INSTANCE_NOT_EXIST" and "INSTANCE_NOT_EXIST" in str(e.value)
    register(m, "py-meta-4")
    with pytest.raises(MetaError) as e:
        m.finish_write_cache("py-meta-4", "no-such-session", [True])
    assert e.value.code != "OK"
    with pytest.raises(InvalidArgument, match="exactly one of block_keys and token_ids"):
        m.get_cache_location("py-meta-4", block_keys=[1], token_ids=[1])
    with pytest.raises(InvalidArgument, match="instance_id: must not be empty"):
        m.remove_cache("", block_keys=[1])
    with pytest.raises(InvalidArgument, match=r"block_keys\[0\]: .* outside the signed 64-bit range"):
        m.remove_cache("py-meta-4", block_keys=[1 << 64])
    # a body the plane cannot read: 400, with its reason in X-KVPool-Error (KVCM's body is {})
    with pytest.raises(BadRequest) as e:
        m._http.post_json("/api/getCacheLocation", {"trace_id": "t", "instance_id": "py-meta-4", "block_keys": "x"})
    assert e.value.status == 400 and "block_keys" in e.value.message


def test_the_agents_pool_copies_are_in_the_plane(client: AgentClient, m: MetaClient, meta, fresh_keys) -> None:
    keys = fresh_keys(3)
    for i in range(3):
        client.block(120 + i)[:] = os.urandom(BLOCK)
    assert client.save(keys, [client.block_offset(120 + i) for i in range(3)]) == [True] * 3
    got = wait_until(lambda: (lambda r: r if r.hits == 3 else None)(
        m.get_cache_location(POOL_INSTANCE, block_keys=keys, query_type=QueryType.BATCH_GET)), what="pool copies")
    for i, loc in enumerate(got.locations):
        f = FileUri.parse(loc.location_specs[0].uri)
        assert f.size == BLOCK and Path(f.path).is_relative_to(meta.storage_root)
        with open(f.path, "rb") as fh:  # the slab file holds the block's bytes at blkid x size
            fh.seek(f.offset)
            assert fh.read(BLOCK) == bytes(client.block(120 + i))
