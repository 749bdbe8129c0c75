"""How the client takes a misbehaving or failing agent: broken streams, out-of-protocol lines, a layer-wise load
that failed midway, stale kept-alive connections, error bodies that are not JSON.

The real agent does none of these on purpose, so a small scripted HTTP server stands in for it here; everything
the real agent does is tested against the real agent in the other files.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest

from kvpool_client import (AgentClient, KvpoolError, LayerwiseLoadFailed, ProtocolError, ServerError,
                           TransportError)

SHM_BYTES = 64 * 1024
BLOCK = 8192


class Fake(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script: Dict[str, Callable[["Fake", dict], None]] = {}
    requests: List[str] = []
    shm = ""

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        Fake.requests.append(self.path)
        if self.path == "/v1/status" and "status" not in Fake.script:
            self.json(200, {"agent": "fake", "block_bytes": BLOCK, "layers": 2, "layer_bytes": BLOCK // 2,
                            "layout": "contiguous",
                            "shm": {"path": Fake.shm, "bytes": SHM_BYTES, "engine_area": [0, SHM_BYTES // 2]}})
        else:
            Fake.script[self.path.strip("/").split("/")[-1]](self, {})

    def do_POST(self) -> None:
        Fake.requests.append(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Fake.script[self.path.strip("/").split("/")[-1]](self, body)

    def json(self, status: int, doc, close: bool = False) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if close:  # closes without saying so: the client's kept-alive connection goes stale
            self.close_connection = True

    def ndjson(self, lines: List[object], end: bool = True, pause: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, line in enumerate(lines):
            if pause and i:
                time.sleep(pause)
            data = (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if end:
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.close_connection = True


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a client that hung up on purpose (the timeout test) is not news


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[str]:
    shm = tmp_path / "shm"
    shm.write_bytes(b"\0" * SHM_BYTES)
    Fake.shm, Fake.script, Fake.requests = str(shm), {}, []
    server = QuietServer(("127.0.0.1", 0), Fake)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def final(n: int, found: List[bool], error: str = "") -> dict:
    d = {"done": True, "found": found, "offsets": [i * BLOCK for i in range(n)],
         "tiers": ["host" if f else None for f in found], "hits": sum(found)}
    if error:
        d["error"] = error
    return d


def test_layers_in_order_then_the_result(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.ndjson([{"layer": 0, "missing": [2]}, {"layer": 1, "missing": [2]},
                                                 final(3, [True, True, False])])
    with AgentClient(fake, timeout=5) as c:
        assert c.layers == 2 and c.layer_bytes == BLOCK // 2
        lw = c.load_layerwise([1, 2, 3], [0, BLOCK, 2 * BLOCK])
        assert list(lw) == [(0, [2]), (1, [2])]
        r = lw.result()
        assert r.found == [True, True, False] and r.hits == 2 and r.error is None and lw.done
        assert c.status()["agent"] == "fake"  # the stream's connection was read to its end and serves again


def test_missing_only_grows(fake: str) -> None:
    # an agent that "forgets" a block it called invalid: the block stays missing, also in the result
    Fake.script["load"] = lambda h, b: h.ndjson([{"layer": 0, "missing": [0]}, {"layer": 1, "missing": [1]},
                                                 final(2, [True, True])])
    with AgentClient(fake, timeout=5) as c:
        lw = c.load_layerwise([1, 2], [0, BLOCK])
        assert lw.wait_layer(1) == [0, 1]
        assert lw.wait_layer(0) == [0]
        r = lw.result()
        assert r.found == [False, False] and r.tiers == [None, None] and r.hits == 0


def test_a_load_that_failed_midway_is_all_misses(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.ndjson([{"layer": 0, "missing": []},
                                                 final(2, [False, False], "nvme0: read failed")])
    with AgentClient(fake, timeout=5) as c:
        lw = c.load_layerwise([1, 2], [0, BLOCK])
        assert lw.wait_layer(0) == []
        assert lw.wait_layer(1) == [0, 1]  # never delivered
        r = lw.result()
        assert r.found == [False, False] and r.error == "nvme0: read failed"
        with pytest.raises(LayerwiseLoadFailed, match="nvme0: read failed"):
            lw.result(raise_on_error=True)


@pytest.mark.parametrize("lines, error, match", [
    ([{"layer": 1, "missing": []}], ProtocolError, "expected the line of layer 0"),
    ([{"layer": 0, "missing": [5]}], ProtocolError, "'missing' must list indexes 0 to 1"),
    ([b"not json"], ProtocolError, "not JSON"),
    ([{"layer": 0, "missing": []}, final(2, [True, True])], ProtocolError, "ended after 1 of 2 layers"),
    ([{"layer": 0, "missing": []}, {"done": True, "found": [True]}], ProtocolError, "expected 'found': 2 booleans"),
])
def test_out_of_protocol_streams(fake: str, lines, error, match) -> None:
    Fake.script["load"] = lambda h, b: h.ndjson(lines)
    with AgentClient(fake, timeout=5) as c:
        lw = c.load_layerwise([1, 2], [0, BLOCK])
        with pytest.raises(error, match=match):
            lw.result()
        with pytest.raises(error):  # and again: the load stays failed
            lw.wait_layer(1)


def test_offsets_the_agent_did_not_ask_for(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.json(200, final(2, [True, True]) | {"offsets": [0, SHM_BYTES]})
    with AgentClient(fake, timeout=5) as c:
        with pytest.raises(ProtocolError, match="other offsets than the ones asked for"):
            c.load([1, 2], [0, BLOCK])
        with pytest.raises(ProtocolError, match=r"offsets\[1\]: 65536 from the agent is not a block range"):
            c.load([1, 2])


def test_a_stream_cut_short(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.ndjson([{"layer": 0, "missing": []}], end=False)
    with AgentClient(fake, timeout=5) as c:
        lw = c.load_layerwise([1, 2], [0, BLOCK])
        assert lw.wait_layer(0) == []
        with pytest.raises(TransportError, match="after 1 of 2 layers"):
            lw.wait_layer(1)


def test_a_layer_that_does_not_come_in_time(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.ndjson([{"layer": 0, "missing": []}, {"layer": 1, "missing": []},
                                                 final(1, [True])], pause=3)
    with AgentClient(fake, timeout=0.5) as c:
        lw = c.load_layerwise([1], [0])
        assert lw.wait_layer(0) == []
        t0 = time.monotonic()
        with pytest.raises(TransportError, match="timeout"):
            lw.wait_layer(1)
        assert time.monotonic() - t0 < 2.5


def test_a_plain_load_answered_with_a_stream_is_refused_and_vice_versa(fake: str) -> None:
    Fake.script["load"] = lambda h, b: h.json(200, final(1, [True]))
    with AgentClient(fake, timeout=5) as c:
        with pytest.raises(ProtocolError, match="expected a layer-wise stream"):
            c.load_layerwise([1], [0])
        assert c.load([1], [0]).found == [True]


def test_a_stale_kept_alive_connection_is_retried_once(fake: str) -> None:
    Fake.script["query"] = lambda h, b: h.json(200, {"blocks": [{"key": k, "tiers": []} for k in b["keys"]]},
                                               close=True)
    with AgentClient(fake, timeout=5) as c:
        for _ in range(3):  # each answer's connection is closed by the server after it answered
            assert c.query([1]) == [[]]
    assert Fake.requests.count("/v1/query") == 3


def test_error_bodies_that_are_not_the_agents(fake: str) -> None:
    def text500(h, b):
        data = b"boom\x1b[31m"
        h.send_response(500)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def header400(h, b):
        h.send_response(400)
        h.send_header("X-KVPool-Error", "block_keys: expected an array")
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"{}")

    Fake.script["save"] = text500
    Fake.script["remove"] = header400
    Fake.script["load"] = lambda h, b: h.json(200, {"found": "yes"})
    with AgentClient(fake, timeout=5) as c:
        with pytest.raises(ServerError) as e:
            c.save([1], [0])
        assert e.value.status == 500 and e.value.message == "boom\\x1b[31m"  # control characters escaped
        with pytest.raises(ValueError, match="block_keys: expected an array"):
            c.remove([1])
        with pytest.raises(ProtocolError, match="expected 'found': 1 booleans"):
            c.load([1], [0])


def test_a_status_that_is_not_an_agents(fake: str, tmp_path: Path) -> None:
    Fake.script["status"] = lambda h, b: h.json(200, {"block_bytes": BLOCK, "shm": {"path": str(tmp_path / "no"),
                                                                                    "bytes": SHM_BYTES}})
    with pytest.raises(Exception, match="cannot open the agent's shared segment"):
        AgentClient(fake, timeout=5)
    Fake.script["status"] = lambda h, b: h.json(200, {"block_bytes": BLOCK, "shm": {"path": Fake.shm,
                                                                                    "bytes": SHM_BYTES * 2}})
    with pytest.raises(Exception, match="has 65536 bytes, the agent reports 131072"):
        AgentClient(fake, timeout=5)
    Fake.script["status"] = lambda h, b: h.json(200, {"block_bytes": BLOCK, "layers": 3,
                                                      "shm": {"path": Fake.shm, "bytes": SHM_BYTES}})
    with pytest.raises(ProtocolError, match="does not divide"):
        AgentClient(fake, timeout=5)


def test_a_segment_removed_or_replaced_under_the_client_is_refused_before_any_call(fake: str) -> None:
    # a clean stop removes the segment; the next agent creates another file at the same path: bytes moved through
    # the old mapping would not be the agent's, so save and load refuse (the agent is never asked)
    Fake.script["save"] = lambda h, b: h.json(200, {"stored": [True], "count": 1, "tier": "host"})
    Fake.script["load"] = lambda h, b: h.json(200, final(1, [True]))
    with AgentClient(fake, timeout=5) as c:
        assert c.save([1], [0]) == [True]
        shm = Path(Fake.shm)
        shm.unlink()
        asked = len(Fake.requests)
        with pytest.raises(KvpoolError, match="was removed since this client mapped it"):
            c.save([1], [0])
        shm.write_bytes(b"\0" * SHM_BYTES)  # a new agent's file at the same path
        with pytest.raises(KvpoolError, match="was replaced since this client mapped it"):
            c.load([1], [0])
        with pytest.raises(KvpoolError, match="was replaced"):
            c.load_layerwise([1], [0])
        assert len(Fake.requests) == asked
    with AgentClient(fake, timeout=5) as c2:  # a new client maps the new file
        assert c2.load([1], [0]).found == [True]
