"""Load on the server over loopback: N concurrent clients mixing adds and searches.

The benchmark starts its own ``memstream serve`` processes (``servers`` of them, on free
127.0.0.1 ports, over one database: a fresh SQLite file, or the PostgreSQL URL given), runs
``clients`` workers for ``seconds`` (and at most ``max_requests`` requests in all), spreading
them over the servers, then checks that every add any server acknowledged can be read back
through another server. With ``kill_after`` it kills one server with SIGKILL that many seconds
in: its clients move to the others, and its acknowledged writes must still be there. Traffic
never leaves the machine.

The clients are ``TENANTS`` tenants (a namespace each, clients spread over them). With
``noisy`` one more tenant does something heavy all along: "import" (a 2 MB import after
another), "erase" (a user of 2,000 memories written, then erased, again and again) or "wal"
(another process holds a read transaction on the SQLite file while the noisy tenant writes
large batches, so the write-ahead log grows past its restarting size); the report gives each
tenant's p95 and the largest over the smallest, which should stay under 2.
"""

from __future__ import annotations

import asyncio
import json
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

from ..core.routes import ROUTES, request
from .metrics import percentile

#: namespaces the clients are spread over
TENANTS = 5
#: what the noisy tenant can do all along
NOISES = ("import", "erase", "wal")

WORDS = ("river garden invoice meeting tea server deploy budget coffee train kayak piano "
         "report bug launch doctor sister harbour recipe ticket").split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def _start(db: str, embedder: str | None, port: int) -> subprocess.Popen[bytes]:
    exe = str(Path(sys.executable).parent / "memstream")
    args = [exe, "--db", db]
    if embedder:
        args += ["--embedder", embedder]
    args += ["serve", "--port", str(port), "--rate", "0", "--log-level", "warning"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MEMSTREAM_REFLECTION_THRESHOLD": "0"})


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server for {url} did not start") from None
            time.sleep(0.2)


async def _noise(http: Any, url: str, kind: str, deadline: float, done: list[int]) -> None:
    """The noisy tenant's heavy work, over and over until ``deadline``."""
    rng = random.Random(99)
    lines = "".join(json.dumps({"text": _sentence(rng)}) + "\n"
                    for _ in range(20_000)).encode()
    while time.monotonic() < deadline:
        if kind == "import":
            await http.post(url + ROUTES["import"].url, params={"namespace": "noisy"},
                            content=lines, headers={"Content-Type": "application/x-ndjson"},
                            timeout=300)
        elif kind == "erase":
            await http.post(url + ROUTES["add_memories"].url, json={
                "namespace": "noisy", "items": [{"text": _sentence(rng), "user_id": "gone"}
                                                for _ in range(2000)]}, timeout=300)
            await http.post(url + ROUTES["delete_memories"].url, json={
                "namespace": "noisy", "user_id": "gone", "erase": True}, timeout=300)
        else:  # wal: large batches while a reader holds the log
            await http.post(url + ROUTES["add_memories"].url, json={
                "namespace": "noisy", "items": [{"text": _sentence(rng) * 8}
                                                for _ in range(2000)]}, timeout=300)
        done.append(1)


def _reader(db: str) -> subprocess.Popen[str]:
    """Another process holding a read transaction on the SQLite file (a dashboard)."""
    code = ("import sqlite3, sys\n"
            f"db = sqlite3.connect({db!r}, isolation_level=None)\n"
            "db.execute('BEGIN'); db.execute('SELECT count(*) FROM records').fetchone()\n"
            "print('reading', flush=True); sys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    return proc


async def _run(urls: list[str], procs: list[subprocess.Popen[bytes]], clients: int,
               seconds: float, max_requests: int, add_share: float,
               kill_after: float | None, noisy: str | None = None) -> dict[str, Any]:
    import httpx

    lat: dict[str, list[float]] = {"add": [], "search": []}
    by_tenant: dict[str, list[float]] = {f"t{n}": [] for n in range(min(TENANTS, clients))}
    noise_rounds: list[int] = []
    errors: list[str] = []
    acked: list[tuple[str, int, str]] = []  # (id, server that acknowledged it, tenant)
    dead: set[int] = set()
    sent = 0
    began = time.monotonic()
    deadline = began + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def killer() -> None:
        if kill_after is None or len(procs) < 2:
            return
        await asyncio.sleep(kill_after)
        dead.add(0)
        procs[0].kill()  # SIGKILL: no graceful shutdown, no flush

    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        async def worker(n: int) -> None:
            nonlocal sent
            rng = random.Random(n)
            home = n % len(urls)
            tenant = f"t{n % TENANTS}"
            while time.monotonic() < deadline and sent < max_requests:
                sent += 1
                while home in dead:  # fail over to the next server
                    home = (home + 1) % len(urls)
                op = "add" if rng.random() < add_share else "search"
                started = time.perf_counter()
                try:
                    if op == "add":
                        resp = await http.post(urls[home] + ROUTES["add_memory"].url, json={
                            "text": _sentence(rng), "user_id": f"u{n % 10}",
                            "namespace": tenant})
                    else:
                        resp = await http.post(urls[home] + ROUTES["search_memories"].url, json={
                            "query": " ".join(rng.sample(WORDS, 3)), "k": 10,
                            "user_id": f"u{n % 10}", "touch": False, "namespace": tenant})
                except httpx.HTTPError as exc:
                    errors.append(f"{op} on server {home}: {type(exc).__name__}")
                    continue
                lat[op].append((time.perf_counter() - started) * 1000)
                by_tenant[tenant].append(lat[op][-1])
                if resp.status_code >= 400:
                    errors.append(f"{op}: HTTP {resp.status_code}")
                elif op == "add":
                    acked.append((resp.json()["id"], home, tenant))

        started = time.perf_counter()
        noise = [_noise(http, urls[-1], noisy, deadline, noise_rounds)] if noisy else []
        await asyncio.gather(killer(), *noise, *(worker(n) for n in range(clients)))
        elapsed = time.perf_counter() - started
        live = [i for i in range(len(urls)) if i not in dead]
        missing = 0
        for start in range(0, len(acked), clients):  # read every acknowledged add back,
            batch = acked[start : start + clients]  # through another server when there is one
            readers = [next((i for i in live if i != home), live[0]) for _, home, _ in batch]
            answers = await asyncio.gather(*(
                http.get(urls[r] + request("get_memory", {"memory_id": rid})[1],
                         params={"namespace": ns})
                for (rid, _, ns), r in zip(batch, readers, strict=True)))
            missing += sum(1 for a in answers if a.status_code != 200)
    every = lat["add"] + lat["search"]
    report: dict[str, Any] = {
        "clients": clients, "servers": len(urls), "seconds": round(elapsed, 1),
        "requests": len(every), "throughput_per_s": round(len(every) / elapsed, 1),
        "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
        "acknowledged_adds": len(acked), "lost_writes": missing,
        "killed": sorted(dead),
        "acknowledged_by_killed": sum(1 for _, home, _ in acked if home in dead),
    }
    for name, values in (("all", every), ("add", lat["add"]), ("search", lat["search"])):
        report[f"{name}_ms"] = {f"p{q}": round(percentile(values, q), 1) for q in (50, 95, 99)}
    p95 = {t: round(percentile(v, 95), 1) for t, v in by_tenant.items() if v}
    report["tenant_p95_ms"] = p95
    report["tenant_p95_spread"] = round(max(p95.values()) / max(min(p95.values()), 1e-9), 2) \
        if p95 else None
    report["noisy"] = noisy
    report["noisy_rounds"] = len(noise_rounds)
    return report


def run(*, clients: int = 50, seconds: float = 60.0, max_requests: int = 200_000,
        add_share: float = 0.5, embedder: str | None = None, db: str | None = None,
        servers: int = 1, kill_after: float | None = None, noisy: str | None = None,
        echo: Callable[[str], Any] = print) -> dict[str, Any]:
    """Start the servers, load them (``noisy``: one of ``NOISES`` beside), verify every
    acknowledged add, stop them."""
    if servers < 1:
        raise ValueError("servers must be at least 1")
    if noisy is not None and noisy not in NOISES:
        raise ValueError(f"noisy must be one of {', '.join(NOISES)}")
    if db is None:
        db = str(Path(tempfile.mkdtemp(prefix="memstream-load-")) / "load.db")
    ports = [_free_port() for _ in range(servers)]
    procs: list[subprocess.Popen[bytes]] = []
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    reader: subprocess.Popen[str] | None = None
    try:
        for port, url in zip(ports, urls, strict=True):
            procs.append(_start(db, embedder, port))
            _wait_healthy(url, procs[-1])
        if noisy == "wal" and not db.startswith(("postgresql://", "postgres://")):
            reader = _reader(db)
        echo(f"  loading {servers} server(s) with {clients} clients for {seconds:g} s"
             + (f", one tenant doing {noisy} all along" if noisy else ""))
        report = asyncio.run(_run(urls, procs, clients, seconds, max_requests, add_share,
                                  kill_after, noisy))
        report["embedder"] = embedder or "default"
        report["db"] = db.split("@")[-1].split("?")[0]
        return report
    finally:
        if reader is not None:
            reader.communicate("done\n", timeout=60)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def render(r: dict[str, Any]) -> str:
    def ms(d: dict[str, float]) -> str:
        return f"p50 {d['p50']} / p95 {d['p95']} / p99 {d['p99']} ms"

    return "\n".join([
        f"load: {r['clients']} clients, {r['servers']} server(s), {r['seconds']} s, "
        f"embedder {r['embedder']}, db {r['db']}",
        f"requests:        {r['requests']:,} ({r['throughput_per_s']:,} /s)",
        f"all:             {ms(r['all_ms'])}",
        f"add:             {ms(r['add_ms'])}",
        f"search:          {ms(r['search_ms'])}",
        f"errors:          {r['errors']} {r['error_kinds'] or ''}",
        f"lost writes:     {r['lost_writes']} of {r['acknowledged_adds']:,} acknowledged adds",
        *([f"killed:          server {r['killed']} (SIGKILL); it had acknowledged "
           f"{r['acknowledged_by_killed']:,} adds, all read back through the others"]
          if r["killed"] else []),
        f"tenants' p95:    {r['tenant_p95_ms']} ms; largest / smallest "
        f"{r['tenant_p95_spread']}"
        + (f" (beside a tenant doing {r['noisy']}: {r['noisy_rounds']} rounds)"
           if r["noisy"] else ""),
    ])
