"""A server's anonymous memory over rounds of large requests: four clients at once, each an
import of about 4 MB (20,000 memories), the export of what it imported and a search, ten
rounds. Prints the server's RssAnon (MB) at the start and after each round: a leak grows with
the rounds; a cache or the allocator's retention flattens.

    python benchmarks/server_memory.py [rounds] [clients]

Set MALLOC_ARENA_MAX beside it to compare with the server's own cap (server/heap.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

EXE = str(Path(sys.executable).parent / "memstream")


def rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon"):
            return int(line.split()[1]) // 1024
    return -1


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = tempfile.mkdtemp(prefix="memstream-memory-")
    server = subprocess.Popen([EXE, "--db", os.path.join(folder, "m.db"), "--embedder", "none",
                               "serve", "--port", str(port), "--max-body-mb", "64", "--rate",
                               "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)

        def client(r: int, c: int) -> None:
            ns = f"ns{r}-{c}"
            body = "".join(json.dumps({"text": f"round {r} client {c} note {n}: "
                                       + "lorem ipsum dolor " * 9, "namespace": ns}) + "\n"
                           for n in range(20_000)).encode()
            with httpx.Client(base_url=url, timeout=600) as http:
                http.post("/v1/import", content=body,
                          headers={"Content-Type": "application/x-ndjson"}).raise_for_status()
                http.get("/v1/export", params={"namespace": ns}).raise_for_status()
                http.post("/v1/search", json={"query": "lorem note", "namespace": ns,
                                              "k": 50}).raise_for_status()

        print(f"start: {rss_mb(server.pid)} MB")
        with ThreadPoolExecutor(clients) as pool:
            for r in range(rounds):
                list(pool.map(lambda c, r=r: client(r, c), range(clients)))
                print(f"round {r + 1}: {rss_mb(server.pid)} MB", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
