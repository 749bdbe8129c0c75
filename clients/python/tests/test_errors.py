"""Errors as exceptions: the client's own checks, and the agent's refusals carrying the agent's message."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import BLOCK, free_port
from kvpool_client import (AgentClient, BadRequest, InvalidArgument, KvpoolError, NotFound, PayloadTooLarge,
                           TransportError)


def saved(client: AgentClient) -> int:
    return client.status()["saved_blocks"]


@pytest.mark.parametrize("keys, offsets, message", [
    ([1], [123], r"offsets\[0\]: offset 123 \(\+65536 bytes\) is not a 4 KiB-aligned block range"),
    ([1], [64 << 20], r"offsets\[0\]: offset 67108864 .* is not a 4 KiB-aligned block range"),
    ([1], [(64 << 20) - 4096], r"offsets\[0\]: offset 67104768"),  # aligned, but the block passes the end
    ([1], [-4096], r"offsets\[0\]: offset -4096"),
    ([1], [1 << 63], r"offsets\[0\]: 9223372036854775808 is outside the signed 64-bit range"),
    ([1, 2], [0], r"offsets: save needs one shared-memory offset per key \(2 keys, 1 offsets\)"),
    ([], [], r"keys: expected at least one value"),
    ([1 << 63], [0], r"keys\[0\]: 9223372036854775808 is outside the signed 64-bit range"),
    ([-(1 << 63) - 1], [0], r"keys\[0\]: -9223372036854775809 is outside"),
    ([1.5], [0], r"keys\[0\]: expected an integer, got 1.5"),
    ([True], [0], r"keys\[0\]: expected an integer, got True"),
    (["7"], [0], r"keys\[0\]: expected an integer, got '7'"),
    ("17", [0], r"keys: expected a sequence of integers, got str"),
    (np.array([1.0]), [0], r"keys: expected an integer array, got dtype float64"),
    (np.array([1 << 63], dtype=np.uint64), [0], r"keys\[0\]: 9223372036854775808 is outside"),
    ([1], [0.0], r"offsets\[0\]: expected an integer, got 0.0"),
])
def test_the_client_refuses_bad_input_before_sending(client: AgentClient, keys, offsets, message) -> None:
    before = saved(client)
    with pytest.raises(InvalidArgument, match=message) as e:
        client.save(keys, offsets)
    assert e.value.status is None
    assert isinstance(e.value, ValueError)
    assert saved(client) == before


def test_too_many_keys_refused_by_the_client(client: AgentClient) -> None:
    with pytest.raises(InvalidArgument, match="keys: at most 65536 keys per call, got 65537"):
        client.query(range(65537))
    with pytest.raises(InvalidArgument, match="parent: 9223372036854775808 is outside"):
        client.save([1], [0], parent=1 << 63)
    with pytest.raises(InvalidArgument, match="global_: expected True or False"):
        client.remove([1], global_=1)  # type: ignore[arg-type]


def test_the_agents_refusals_carry_its_message(client: AgentClient) -> None:
    # what the client would refuse itself, sent as it is: the agent's own 400 and words come back
    h = client._http
    with pytest.raises(BadRequest) as e:
        h.post_json("/v1/save", {"keys": [1], "offsets": [123]})
    assert e.value.status == 400 and e.value.route == "/v1/save"
    assert e.value.message.startswith("offsets[0]: offset 123 (+65536 bytes) is not a 4 KiB-aligned range of the")
    assert "HTTP 400" in str(e.value) and "/v1/save" in str(e.value)

    with pytest.raises(BadRequest, match="keys: at most 65536 keys per call, got 65537") as e:
        h.post_json("/v1/query", {"keys": list(range(65537))})
    assert e.value.status == 400

    with pytest.raises(BadRequest, match="ofsets: unknown field"):
        h.post_json("/v1/load", {"keys": [1], "ofsets": [0]})
    with pytest.raises(BadRequest, match="global: not taken by save"):
        h.post_json("/v1/save", {"keys": [1], "offsets": [0], "global": True})
    with pytest.raises(BadRequest, match=r"keys\[0\]: expected an integer, got 1.5"):
        h.post_json("/v1/query", {"keys": [1.5]})


def test_a_refusal_through_the_public_api(client: AgentClient) -> None:
    # the agent's half holds 512 blocks: a load of more, with no offsets, is the agent's to refuse
    with pytest.raises(BadRequest) as e:
        client.load(range(600))
    assert e.value.status == 400
    assert "600 blocks do not fit the agent's half of the shared segment" in e.value.message
    assert isinstance(e.value, KvpoolError) and isinstance(e.value, ValueError)


def test_unknown_route_and_oversized_body(client: AgentClient) -> None:
    with pytest.raises(NotFound) as e:
        client._http.get_json("/v1/nothing-here")
    assert e.value.status == 404
    big = json.dumps({"keys": list(range(10**6, 10**6 + 700_000))}).encode()  # ~6 MB, past the 4 MiB bound
    with pytest.raises(PayloadTooLarge) as e:
        status, headers, data = client._http.request("POST", "/v1/query", big)
        client._http._json_or_raise(status, headers, data, "/v1/query")
    assert e.value.status == 413 and "exceeds the limit of 4194304 bytes" in e.value.message
    assert client.query([1]) == [[]]  # the client goes on after the agent closed that connection
    assert isinstance(client.status(), dict)


def test_no_agent_is_a_transport_error() -> None:
    port = free_port()
    with pytest.raises(TransportError, match="connection refused") as e:
        AgentClient(f"http://127.0.0.1:{port}", timeout=2)
    assert e.value.status is None and isinstance(e.value, ConnectionError)


@pytest.mark.parametrize("url", ["", "ftp://x", "127.0.0.1:6390", "http://h:99999", "http://h:1/?q=1"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        AgentClient(url)


def test_bad_timeout() -> None:
    with pytest.raises(ValueError, match="timeout"):
        AgentClient("http://127.0.0.1:1", timeout=0)
