"""A real memstream server in a subprocess on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from memstream import Memory
from memstream.server.auth import create_key

EXE = str(Path(sys.executable).parent / "memstream")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    db: Path
    keys: dict[str, str]
    proc: subprocess.Popen[bytes]

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


#: the operator's /metrics token of the servers the tests start
SCRAPE = "test-scrape-token"


def start(db: Path, *args: str, keys: dict[str, tuple[list[str], str]] | None = None,
          env: dict[str, str] | None = None, embedder: str = "none") -> Server:
    """A ``memstream serve`` on a free port (keyword search only, unless ``embedder`` names
    one); its webhooks may post to loopback (the tests' receivers), unless ``env`` says
    otherwise."""
    made = {}
    if keys:
        with Memory(db, embedder="none") as mem:
            for name, (spaces, role) in keys.items():
                made[name] = create_key(mem.store, name=name, namespaces=spaces, role=role,
                                        now=time.time())[0]
    port = free_port()
    with open(db.with_suffix(".log"), "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen([EXE, "--db", str(db), "--embedder", embedder, "serve", "--port",
                                 str(port), *args], stdout=log, stderr=log,
                                env={**os.environ, "MEMSTREAM_REFLECTION_THRESHOLD": "0",
                                     "MEMSTREAM_WEBHOOKS_PRIVATE": "1",
                                     "MEMSTREAM_METRICS_TOKEN": SCRAPE, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return Server(url, db, made, proc)
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start: " + db.with_suffix(".log").read_text())


def stop(server: Server) -> int:
    server.proc.send_signal(signal.SIGTERM)
    return server.proc.wait(timeout=60)


KEYS = {"admin": (["team-a"], "admin"), "writer": (["team-a"], "write"),
        "reader": (["team-a"], "read"), "other": (["team-b"], "admin"),
        "both": (["team-a", "team-b"], "admin")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(tmp_path_factory.mktemp("srv") / "server.db", keys=KEYS)
    yield srv
    stop(srv)
