"""Load on the server over loopback: N concurrent clients mixing adds and searches.

The benchmark starts its own ``memstream serve`` on a free 127.0.0.1 port with a fresh
database, runs ``clients`` workers for ``seconds`` (and at most ``max_requests`` requests in
all), then checks that every add the server acknowledged can be read back. Traffic never
leaves the machine.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .metrics import percentile

WORDS = ("river garden invoice meeting tea server deploy budget coffee train kayak piano "
         "report bug launch doctor sister harbour recipe ticket").split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def _start(db: Path, embedder: str | None, port: int) -> subprocess.Popen[bytes]:
    exe = str(Path(sys.executable).parent / "memstream")
    args = [exe, "--db", str(db)]
    if embedder:
        args += ["--embedder", embedder]
    args += ["serve", "--port", str(port), "--rate", "0", "--log-level", "warning"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MEMSTREAM_REFLECTION_THRESHOLD": "0"})


async def _run(url: str, clients: int, seconds: float, max_requests: int,
               add_share: float) -> dict[str, Any]:
    import httpx

    lat: dict[str, list[float]] = {"add": [], "search": []}
    errors: list[str] = []
    acked: list[str] = []
    sent = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as http:
        async def worker(n: int) -> None:
            nonlocal sent
            rng = random.Random(n)
            while time.monotonic() < deadline and sent < max_requests:
                sent += 1
                op = "add" if rng.random() < add_share else "search"
                started = time.perf_counter()
                try:
                    if op == "add":
                        resp = await http.post("/v1/memories", json={
                            "content": _sentence(rng), "user_id": f"u{n % 10}"})
                    else:
                        resp = await http.post("/v1/search", json={
                            "query": " ".join(rng.sample(WORDS, 3)), "k": 10,
                            "user_id": f"u{n % 10}", "touch": False})
                except httpx.HTTPError as exc:
                    errors.append(f"{op}: {type(exc).__name__}")
                    continue
                lat[op].append((time.perf_counter() - started) * 1000)
                if resp.status_code >= 400:
                    errors.append(f"{op}: HTTP {resp.status_code}")
                elif op == "add":
                    acked.append(resp.json()["id"])

        began = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(clients)))
        elapsed = time.perf_counter() - began
        missing = 0
        for start in range(0, len(acked), clients):  # read every acknowledged add back
            answers = await asyncio.gather(*(http.get(f"/v1/memories/{rid}")
                                             for rid in acked[start : start + clients]))
            missing += sum(1 for a in answers if a.status_code != 200)
    every = lat["add"] + lat["search"]
    report: dict[str, Any] = {
        "clients": clients, "seconds": round(elapsed, 1), "requests": len(every),
        "throughput_per_s": round(len(every) / elapsed, 1), "errors": len(errors),
        "error_kinds": sorted(set(errors))[:5], "acknowledged_adds": len(acked),
        "lost_writes": missing,
    }
    for name, values in (("all", every), ("add", lat["add"]), ("search", lat["search"])):
        report[f"{name}_ms"] = {f"p{q}": round(percentile(values, q), 1) for q in (50, 95, 99)}
    return report


def run(*, clients: int = 50, seconds: float = 60.0, max_requests: int = 200_000,
        add_share: float = 0.5, embedder: str | None = None,
        echo: Callable[[str], Any] = print) -> dict[str, Any]:
    """Start a server, load it, verify every acknowledged add, stop it."""
    import httpx

    folder = tempfile.mkdtemp(prefix="memstream-load-")
    port = _free_port()
    proc = _start(Path(folder) / "load.db", embedder, port)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        echo(f"  loading {url} with {clients} clients for {seconds:g} s")
        report = asyncio.run(_run(url, clients, seconds, max_requests, add_share))
        report["embedder"] = embedder or "default"
        return report
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def render(r: dict[str, Any]) -> str:
    def ms(d: dict[str, float]) -> str:
        return f"p50 {d['p50']} / p95 {d['p95']} / p99 {d['p99']} ms"

    return "\n".join([
        f"load: {r['clients']} clients, {r['seconds']} s, embedder {r['embedder']}",
        f"requests:        {r['requests']:,} ({r['throughput_per_s']:,} /s)",
        f"all:             {ms(r['all_ms'])}",
        f"add:             {ms(r['add_ms'])}",
        f"search:          {ms(r['search_ms'])}",
        f"errors:          {r['errors']} {r['error_kinds'] or ''}",
        f"lost writes:     {r['lost_writes']} of {r['acknowledged_adds']:,} acknowledged adds",
    ])
