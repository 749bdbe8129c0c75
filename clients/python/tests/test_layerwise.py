"""Layer-wise loads against real agents (4 layers per block, both layouts): per-layer completions in layer order,
each layer's bytes complete and correct when its completion arrives, from host memory and from NVMe."""

from __future__ import annotations

import http.client
import json
import os
import threading

import pytest

from conftest import BLOCK, start_layered_agent, wait_until
from kvpool_client import AgentClient, BadRequest

LAYERS = 4
L = BLOCK // LAYERS


@pytest.fixture(scope="module", params=["contiguous", "layered"])
def layered(request, tmp_path_factory):
    a = start_layered_agent(tmp_path_factory, request.param, LAYERS)
    yield a, request.param
    a.stop()


@pytest.fixture
def lc(layered):
    with AgentClient(layered[0].url, timeout=30) as c:
        yield c


_next = iter(range(5_000_000, 1 << 60, 10_000))


def keys(n: int):
    base = next(_next)
    return list(range(base, base + n))


def fill(c: AgentClient, first_block: int, n: int):
    data = [os.urandom(BLOCK) for _ in range(n)]
    for i, d in enumerate(data):
        c.block(first_block + i)[:] = d
    return data


def check_each_layer_as_it_arrives(c: AgentClient, ks, src, dst_block: int, expect_missing):
    dst = [c.block_offset(dst_block + i) for i in range(len(ks))]
    for o in dst:
        c.block_at(o)[:] = b"\xee" * BLOCK  # not the bytes of any block: a layer not yet written shows
    seen = []
    with c.load_layerwise(ks, dst) as lw:
        for layer, missing in lw:
            seen.append(layer)
            assert missing == expect_missing, f"layer {layer}"
            # at this completion, layer `layer` of every block not missing is in place, byte for byte
            for j, o in enumerate(dst):
                if j not in missing:
                    assert bytes(c.layer_at(o, layer)) == src[j][layer * L:(layer + 1) * L], f"block {j} layer {layer}"
        r = lw.result()
    assert seen == list(range(LAYERS))
    return r, dst


def test_the_agent_reports_its_layers(lc: AgentClient, layered) -> None:
    assert (lc.layers, lc.layer_bytes, lc.layout) == (LAYERS, L, layered[1])


def test_layerwise_from_host_memory(lc: AgentClient) -> None:
    ks = keys(6)
    src = fill(lc, 0, 5)
    assert lc.save(ks[:5], [lc.block_offset(i) for i in range(5)]) == [True] * 5
    r, dst = check_each_layer_as_it_arrives(lc, ks, src + [b""], 100, expect_missing=[5])  # the last is unknown
    assert r.found == [True] * 5 + [False] and r.tiers[:5] == ["host"] * 5 and r.error is None
    for j in range(5):
        assert bytes(lc.block_at(dst[j])) == src[j]


def test_layerwise_from_nvme(lc: AgentClient) -> None:
    # the host tier holds 64 blocks of 64 KiB here: 160 saved push the first ones out to NVMe only
    # (in steps: a host block leaves only once its NVMe copy is written, and a save finds room only then)
    ks = keys(160)
    src = []
    for start in range(0, 160, 16):
        src += fill(lc, 0, 16)
        step = ks[start:start + 16]
        assert lc.save(step, [lc.block_offset(i) for i in range(16)]) == [True] * 16
        wait_until(lambda: all("nvme" in t for t in lc.query(step)), timeout=60, what="NVMe copies")
    first = ks[:32]
    wait_until(lambda: all(t == ["nvme"] for t in lc.query(first)), timeout=60, what="the first blocks on NVMe only")
    r, dst = check_each_layer_as_it_arrives(lc, first, src[:32], 200, expect_missing=[])
    assert r.found == [True] * 32 and set(r.tiers) == {"nvme"}


def test_the_raw_stream_is_one_line_per_layer_in_order_then_done(lc: AgentClient, layered) -> None:
    ks = keys(2)
    fill(lc, 10, 2)
    lc.save(ks, [lc.block_offset(10), lc.block_offset(11)])
    conn = http.client.HTTPConnection("127.0.0.1", layered[0].port, timeout=30)
    body = json.dumps({"keys": ks + [ks[0] + 9_999], "offsets": [lc.block_offset(20 + i) for i in range(3)],
                       "layerwise": True})
    conn.request("POST", "/v1/load", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.headers["Content-Type"].startswith("application/x-ndjson")
    assert resp.headers["Transfer-Encoding"] == "chunked"
    lines = [json.loads(x) for x in resp.read().splitlines() if x.strip()]
    conn.close()
    assert [x.get("layer") for x in lines[:-1]] == list(range(LAYERS))
    assert all(x["missing"] == [2] for x in lines[:-1])
    assert lines[-1]["done"] is True and lines[-1]["found"] == [True, True, False] and lines[-1]["hits"] == 2


def test_bad_layerwise_requests_are_refused_before_streaming(lc: AgentClient, layered) -> None:
    with pytest.raises(BadRequest, match="do not fit the agent's half") as e:
        lc.load_layerwise(range(600))  # no offsets, more blocks than the agent's half holds
    assert e.value.status == 400
    conn = http.client.HTTPConnection("127.0.0.1", layered[0].port, timeout=30)
    conn.request("POST", "/v1/load", json.dumps({"keys": [1], "offsets": [123], "layerwise": True}),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 400 and "offsets[0]" in json.loads(resp.read())["error"]
    conn.close()


def test_other_calls_go_on_while_a_stream_is_open(lc: AgentClient) -> None:
    ks = keys(40)
    src = fill(lc, 0, 40)
    lc.save(ks, [lc.block_offset(i) for i in range(40)])
    lw = lc.load_layerwise(ks, [lc.block_offset(300 + i) for i in range(40)])
    assert lc.query(ks[:1])[0]  # on its own connection, not behind the stream
    errors = []

    def waiter():
        try:
            assert lw.wait_layer(LAYERS - 1) == []
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert lw.result().found == [True] * 40
    for j in range(40):
        assert bytes(lc.block(300 + j)) == src[j]


def test_an_abandoned_stream_is_closed(lc: AgentClient) -> None:
    ks = keys(2)
    fill(lc, 0, 2)
    lc.save(ks, [lc.block_offset(0), lc.block_offset(1)])
    lw = lc.load_layerwise(ks, [lc.block_offset(50), lc.block_offset(51)])
    lw.wait_layer(0)
    lw.close()
    with pytest.raises(Exception, match="closed"):
        lw.wait_layer(1)
    assert lc.load(ks, [lc.block_offset(52), lc.block_offset(53)]).found == [True, True]


def test_a_layer_that_fails_its_check_is_a_miss_from_that_layer_on(lc: AgentClient, layered) -> None:
    # (last of the module: it corrupts the agent's NVMe slot file)
    agent, layout = layered
    ks = keys(96)
    src = []
    for start in range(0, 96, 16):  # saved in steps: the first ones end up on NVMe only (the host tier holds 64)
        src += fill(lc, 0, 16)
        step = ks[start:start + 16]
        assert lc.save(step, [lc.block_offset(i) for i in range(16)]) == [True] * 16
        wait_until(lambda: all("nvme" in t for t in lc.query(step)), timeout=60, what="NVMe copies")
    first = ks[:8]
    wait_until(lambda: all(t == ["nvme"] for t in lc.query(first)), timeout=60, what="the first blocks on NVMe only")
    slot_file = agent.home / "data" / "nvme0" / "kvpool-slots.dat"
    slots = slot_file.stat().st_size // BLOCK
    # layered: layer i of slot s is at region i (slots x L bytes), place s; contiguous: a block is one piece
    bad_from = 2 if layout == "layered" else 0
    start, length = (bad_from * slots * L, slots * L) if layout == "layered" else (0, slots * BLOCK)
    with open(slot_file, "r+b") as f:
        f.seek(start)
        f.write(os.urandom(length))
        f.flush()
        os.fsync(f.fileno())
    dst = [lc.block_offset(400 + i) for i in range(8)]
    with lc.load_layerwise(first, dst) as lw:
        for layer, missing in lw:
            assert missing == ([] if layer < bad_from else list(range(8))), f"layer {layer}"
            for j in range(8):
                if j not in missing:  # the layers before the corrupted one are there, intact
                    assert bytes(lc.layer_at(dst[j], layer)) == src[j][layer * L:(layer + 1) * L]
        r = lw.result()
    assert r.found == [False] * 8 and r.hits == 0 and r.tiers == [None] * 8  # misses, never the corrupted bytes
    nvme = next(t for t in lc.status()["tiers"] if t["name"] == "nvme")
    assert nvme["checksum_failures"] >= 8


def test_layerwise_on_an_agent_with_one_layer(client: AgentClient, fresh_keys) -> None:
    ks = fresh_keys(2)
    src = [os.urandom(BLOCK) for _ in ks]
    for i, d in enumerate(src):
        client.block(160 + i)[:] = d
    client.save(ks, [client.block_offset(160), client.block_offset(161)])
    try:
        lw = client.load_layerwise(ks + [ks[0] + 50_000], [client.block_offset(170 + i) for i in range(3)])
    except BadRequest as e:
        if "layerwise" in e.message:
            pytest.skip(f"this agent has no layer-wise loads ({e.message})")
        raise
    assert client.layers == 1
    assert lw.wait_layer(0) == [2]
    r = lw.result()
    assert r.found == [True, True, False]
    assert [bytes(client.block(170 + i)) for i in range(2)] == src
