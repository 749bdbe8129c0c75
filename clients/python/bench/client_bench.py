"""What the Python client costs per call, against the least a Python caller can do over the same HTTP API.

A = ``AgentClient.save`` / ``AgentClient.load`` (input checks, JSON encoding, answer checks, connection pool);
B = the same request, encoded with ``json.dumps``, sent over one kept-alive ``http.client`` connection and its
answer parsed with ``json.loads``: nothing checked, no pool, no error mapping. Both move the same blocks through the same agent; alternated
A B, B A, ... in timed rounds; reported: calls/s and GB/s of each, and the median of the per-pair ratios A/B.

With ``--layers N`` (an agent with layer-wise loads) it also times a layer-wise load: time to the first layer's
line and to the end, against a plain load of the same blocks.

    python3 clients/python/bench/client_bench.py [--agent-url http://127.0.0.1:6390] [--blocks 256] [--pairs 6]

Without ``--agent-url`` it starts an agent from ``data-agent/target/quarkus-app/quarkus-run.jar`` (as the tests do:
64 KiB blocks, host tier 128 MiB, shared segment 256 MiB) and stops it afterwards.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple
from urllib.parse import urlsplit

from kvpool_client import AgentClient


def timed(fn: Callable[[], object], seconds: float) -> Tuple[int, float]:
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n, dt


def raw_caller(url: str, route: str, body: dict) -> Callable[[], None]:
    p = urlsplit(url)
    conn = http.client.HTTPConnection(p.hostname or "127.0.0.1", p.port, timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}

    def call() -> None:
        conn.request("POST", route, json.dumps(body, separators=(",", ":")).encode(), headers)
        r = conn.getresponse()
        doc = json.loads(r.read())
        if r.status != 200:
            raise RuntimeError(doc)
    return call


def compare(name: str, a: Callable[[], object], b: Callable[[], object], pairs: int, seconds: float,
            bytes_per_call: int) -> None:
    a()  # warm both
    b()
    ratios: List[float] = []
    ra: List[float] = []
    rb: List[float] = []
    for i in range(pairs):
        order = [("a", a), ("b", b)] if i % 2 == 0 else [("b", b), ("a", a)]
        rates = {}
        for tag, fn in order:
            n, dt = timed(fn, seconds)
            rates[tag] = n / dt
        ra.append(rates["a"])
        rb.append(rates["b"])
        ratios.append(rates["a"] / rates["b"])
    ma, mb = statistics.median(ra), statistics.median(rb)
    def rate(r: float) -> str:
        return f"{r:,.0f} calls/s" + (f", {r * bytes_per_call / 1e9:.2f} GB/s" if bytes_per_call else "")
    print(f"| {name} | {rate(ma)} | {rate(mb)} | **{statistics.median(ratios):.2f}** "
          f"({min(ratios):.2f}-{max(ratios):.2f}) |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent-url")
    ap.add_argument("--blocks", type=int, default=256)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--layers", type=int, default=0, help="start the agent with this many layers per block "
                    "(and time layer-wise loads)")
    args = ap.parse_args()

    agent = None
    url = args.agent_url
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import conftest  # the tests' process helpers: free ports, a temp data dir, clean-up

        extra = {"kvpool.agent.layers": args.layers, "kvpool.agent.layout": "layered"} if args.layers else None
        agent = conftest.Agent("bench", Path(tempfile.mkdtemp(prefix="kvpool-py-bench-")), host_mib=128,
                               shm_mib=256, extra=extra)
        url = agent.url
    try:
        with AgentClient(url, timeout=30) as c:
            n = args.blocks
            bb = c.block_bytes
            if 2 * n > c.engine_blocks:
                raise SystemExit(f"--blocks {n}: the engine half holds {c.engine_blocks} blocks; at most half")
            keys = list(range(7_000_000, 7_000_000 + n))
            src = [c.block_offset(i) for i in range(n)]
            dst = [c.block_offset(n + i) for i in range(n)]
            c.engine_buffer[:n * bb] = os.urandom(n * bb)
            assert all(c.save(keys, src))
            print(f"agent {url}: {bb // 1024} KiB blocks, {n} blocks per call, {args.pairs} pairs of "
                  f"{args.seconds:.0f}-s rounds; python {sys.version.split()[0]}")
            print("| call | AgentClient (A) | raw http.client + json (B) | A/B, median of pairs (min-max) |")
            print("|---|---|---|---|")
            compare(f"load {n} x {bb // 1024} KiB (host hits)", lambda: c.load(keys, dst),
                    raw_caller(url, "/v1/load", {"keys": keys, "offsets": dst}), args.pairs, args.seconds, n * bb)
            # a save of keys the agent holds already only touches them (no copy): the cheapest call per key the
            # agent has, so the client's own cost shows most there
            compare(f"save {n} keys held already (no copy)", lambda: c.save(keys, src),
                    raw_caller(url, "/v1/save", {"keys": keys, "offsets": src}), args.pairs, args.seconds, 0)
            one = keys[:1]
            compare("query 1 key (round trip)", lambda: c.query(one),
                    raw_caller(url, "/v1/query", {"keys": one}), args.pairs, args.seconds, 0)
            if c.layers > 1:
                first: List[float] = []
                whole: List[float] = []
                plain: List[float] = []
                for _ in range(args.pairs * 5):
                    t0 = time.perf_counter()
                    lw = c.load_layerwise(keys, dst)
                    lw.wait_layer(0)
                    first.append(time.perf_counter() - t0)
                    lw.result()
                    whole.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    c.load(keys, dst)
                    plain.append(time.perf_counter() - t0)
                print(f"layer-wise load of {n} blocks x {c.layers} layers (host): first layer "
                      f"{statistics.median(first) * 1e3:.2f} ms, whole {statistics.median(whole) * 1e3:.2f} ms, "
                      f"plain load {statistics.median(plain) * 1e3:.2f} ms (medians of {len(first)})")
    finally:
        if agent is not None:
            agent.stop()


if __name__ == "__main__":
    main()
