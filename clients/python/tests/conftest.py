"""Fixtures: the REAL metadata plane and data agents, started as child processes from their packaged jars.

The jars are the reactor's build outputs (``data-agent/target/quarkus-app/quarkus-run.jar``,
``metadata-plane/target/quarkus-app/quarkus-run.jar``; override with KVPOOL_AGENT_JAR / KVPOOL_META_JAR), run with
the JDK of JAVA_HOME (25; else ``java`` on the PATH). Each process gets free ports, a data directory under pytest's
temporary directory, and (agents) a shared segment in /dev/shm named for this run; all are stopped and removed
afterwards (their logs stay beside the data, under ``--basetemp``).
"""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]
AGENT_JAR = Path(os.environ.get("KVPOOL_AGENT_JAR", REPO / "data-agent/target/quarkus-app/quarkus-run.jar"))
META_JAR = Path(os.environ.get("KVPOOL_META_JAR", REPO / "metadata-plane/target/quarkus-app/quarkus-run.jar"))
BLOCK = 64 * 1024
START_TIMEOUT = float(os.environ.get("KVPOOL_PY_START_TIMEOUT", "180"))  # 2-core CI machines under load


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if not found:
        pytest.fail("no JDK: set JAVA_HOME to a JDK 25 (or put java on the PATH)", pytrace=False)
    return found


def jar(path: Path, module: str) -> str:
    if not path.is_file():
        pytest.fail(f"{path} is missing: package the {module} first (./mvnw -B -pl {module} -am package "
                    "-DskipTests), or point KVPOOL_AGENT_JAR / KVPOOL_META_JAR at packaged jars", pytrace=False)
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: a child JVM must not outlive a killed pytest (CI timeouts, ^C)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def _child_env() -> Dict[str, str]:
    # KVPOOL_* of the calling shell (a control plane URL, a data dir, Kafka) must not leak into the children
    return {k: v for k, v in os.environ.items() if not k.startswith("KVPOOL_")}


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def http_post(port: int, path: str, body: dict, timeout: float = 2.0) -> tuple:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class Child:
    """A service JVM: started, waited for, stopped (SIGTERM, then SIGKILL), its log kept."""

    def __init__(self, name: str, cmd: List[str], home: Path) -> None:
        self.name = name
        self.home = home
        self.log = home / f"{name}.log"
        self.cmd = cmd
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.home, env=_child_env(), preexec_fn=_die_with_parent)

    def wait_ready(self, ready) -> None:
        end = time.monotonic() + START_TIMEOUT
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ChildFailed(self, f"{self.name} exited with {self.proc.returncode} while starting")
            try:
                if ready():
                    return
            except OSError:
                pass  # not listening yet
            if time.monotonic() > end:
                self.stop()
                raise ChildFailed(self, f"{self.name} not ready in {START_TIMEOUT:.0f} s")
            time.sleep(0.2)

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class ChildFailed(Exception):
    def __init__(self, child: Child, what: str) -> None:
        self.child = child
        super().__init__(f"{what}; log {child.log}:\n{child.tail()}")


class MetaPlane:
    """The packaged metadata plane with one file storage rooted in a temp directory (as data-agent's
    MetaPlaneProcess starts it for the Java tests)."""

    def __init__(self, home: Path, keys_per_file: int = 8) -> None:
        self.home = home
        self.storage_root = home / "storage"
        self.storage_root.mkdir(parents=True)
        config = home / "startup.json"
        config.write_text(json.dumps({
            "storages": [{"storage_config": {"type": "file", "global_unique_name": "nfs_py",
                                             "storage_spec": {"root_path": f"{self.storage_root}/",
                                                              "key_count_per_file": keys_per_file}}}],
            "instance_groups": [{"name": "default", "storage_candidates": ["nfs_py"],
                                 "global_quota_group_name": "q", "max_instance_count": 100,
                                 "quota": {"capacity": 100000000000,
                                           "quota_config": [{"storage_type": "file", "capacity": 100000000000}]},
                                 "cache_config": {"cache_prefer_strategy": 2,
                                                  "meta_indexer_config": {"max_key_count": 1000000,
                                                                          "mutex_shard_num": 16}}}]}))
        self.http_port = free_port()
        grpc_port = free_port()
        self.child = Child("meta", [java(), "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                    f"-Dkvpool.data-dir={home / 'data'}", f"-Dkvpool.meta.http-port={self.http_port}",
                                    f"-Dkvpool.meta.grpc-port={grpc_port}", "-Dquarkus.http.host=127.0.0.1",
                                    "-Dquarkus.grpc.server.host=127.0.0.1", f"-Dkvpool.meta.startup-config={config}",
                                    "-Dkvpool.meta.write.expiry-period=100ms", "-jar", jar(META_JAR, "metadata-plane")],
                           home)
        self.child.start()
        self.child.wait_ready(self._ready)

    def _ready(self) -> bool:
        status, body = http_post(self.http_port, "/api/getClusterInfo", {"trace_id": "ready"})
        return status == 200 and b'"OK"' in body

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def stop(self) -> None:
        self.child.stop()
        shutil.rmtree(self.home / "data", ignore_errors=True)
        shutil.rmtree(self.storage_root, ignore_errors=True)  # the pool's slab files; the log stays


class Agent:
    """A packaged data agent: 64 KiB blocks, a small host pool and NVMe slot file, a 64 MiB shared segment."""

    def __init__(self, name: str, home: Path, *, meta: Optional[MetaPlane] = None, instance: str = "py",
                 host_mib: int = 8, shm_mib: int = 64, extra: Optional[Dict[str, object]] = None) -> None:
        self.name = name
        self.home = home
        self.port = free_port()
        self.shm = Path(f"/dev/shm/kvpool-pytest-{os.getpid()}-{name}-{uuid.uuid4().hex[:8]}")
        props: Dict[str, object] = {
            "kvpool.agent.http-port": self.port, "kvpool.agent.metrics-port": free_port(),
            "kvpool.agent.id": f"pytest-{name}", "kvpool.agent.data-dir": home / "data",
            "kvpool.agent.block-bytes": BLOCK, "kvpool.agent.host.regions": 1,
            "kvpool.agent.host.region-mib": host_mib, "kvpool.agent.nvme.device-mib": 32,
            "kvpool.agent.nvme.bandwidth-mbps": 1000,  # no start-up probe: faster, and nothing to measure here
            "kvpool.agent.shm.path": self.shm, "kvpool.agent.shm.mib": shm_mib,
            "kvpool.agent.pool.enabled": meta is not None,
        }
        if meta is not None:
            props.update({"kvpool.agent.pool.meta-uri": meta.url, "kvpool.agent.pool.instance-id": instance,
                          "kvpool.agent.pool.storage-roots": meta.storage_root})
        props.update(extra or {})
        cmd = [java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "--enable-native-access=ALL-UNNAMED"]
        cmd += [f"-D{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in props.items()]
        cmd += ["-jar", jar(AGENT_JAR, "data-agent")]
        self.child = Child(f"agent-{name}", cmd, home)
        self.child.start()
        try:
            self.child.wait_ready(self._ready)
        except BaseException:
            self._clean()
            raise

    def _ready(self) -> bool:
        status, _ = http_get(self.port, "/v1/status")
        return status == 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _clean(self) -> None:
        self.shm.unlink(missing_ok=True)
        shutil.rmtree(self.home / "data", ignore_errors=True)  # the preallocated NVMe slot file

    def stop(self) -> None:
        self.child.stop()
        self._clean()


def _meta_or_fail(tmp_path_factory) -> MetaPlane:
    try:
        return MetaPlane(tmp_path_factory.mktemp("meta"))
    except ChildFailed as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def meta(tmp_path_factory) -> Iterator[MetaPlane]:
    m = _meta_or_fail(tmp_path_factory)
    yield m
    m.stop()


POOL_INSTANCE = "py-pool"


@pytest.fixture(scope="session")
def agent(meta: MetaPlane, tmp_path_factory) -> Iterator[Agent]:
    """An agent with the global pool on (instance ``py-pool`` of the metadata plane)."""
    try:
        a = Agent("a", tmp_path_factory.mktemp("agent-a"), meta=meta, instance=POOL_INSTANCE)
    except ChildFailed as e:
        pytest.fail(str(e), pytrace=False)
    yield a
    a.stop()


@pytest.fixture(scope="session")
def agent_b(meta: MetaPlane, tmp_path_factory) -> Iterator[Agent]:
    """A second agent of the same pool instance (another node): it finds the first one's blocks in the pool."""
    try:
        a = Agent("b", tmp_path_factory.mktemp("agent-b"), meta=meta, instance=POOL_INSTANCE)
    except ChildFailed as e:
        pytest.fail(str(e), pytrace=False)
    yield a
    a.stop()


@pytest.fixture
def client(agent: Agent):
    from kvpool_client import AgentClient

    with AgentClient(agent.url, timeout=30) as c:
        yield c


_keys = iter(range(1_000_000, 1 << 62, 100_000))


@pytest.fixture
def fresh_keys():
    """A function giving n keys no other test used (the agents live for the whole session)."""
    def take(n: int) -> List[int]:
        base = next(_keys)
        assert n < 100_000
        return list(range(base, base + n))
    return take


def start_layered_agent(tmp_path_factory, layout: str, layers: int) -> Agent:
    """An agent with ``layers`` layers per block; skipped (with the reason) where the agent predates layer-wise
    loads (branch ``layers`` of issue 38 not merged: the agent refuses the unknown setting)."""
    home = tmp_path_factory.mktemp(f"agent-{layout}")
    try:
        return Agent(f"{layout}{layers}", home, host_mib=4,
                     extra={"kvpool.agent.layers": layers, "kvpool.agent.layout": layout})
    except ChildFailed as e:
        if "kvpool.agent.layers" in e.child.tail(200) and "does not map to any root" in e.child.tail(200):
            pytest.skip("this agent has no layer-wise loads (kvpool.agent.layers unknown: issue 38 part 2 "
                        "not merged into this build)")
        pytest.fail(str(e), pytrace=False)


def wait_until(predicate, timeout: float = 30.0, what: str = "condition"):
    """Polls a condition of the agent's background work (write-behind to NVMe and to the pool): those copies
    land asynchronously by design, and no API call waits for them."""
    end = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def pytest_report_header(config) -> List[str]:
    import kvpool_client

    return [f"kvpool_client from {Path(kvpool_client.__file__).parent}", f"agent jar {AGENT_JAR}",
            f"meta jar {META_JAR}", f"python {sys.version.split()[0]}"]
