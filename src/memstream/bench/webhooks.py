"""Webhook delivery under an outage: a real HTTP receiver on loopback is down while records are
added, comes back, and must then get every event (at least once, none missing, the events of
each record in order). ``Receiver`` is also what the tests use.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..config import Config
from ..engine.delivery import Deliverer
from ..engine.memory import Memory
from ..events import SIGNATURE_HEADER, verify_signature
from .metrics import percentile


class Receiver:
    """A webhook receiver on 127.0.0.1:``port`` that checks each body's signature with
    ``secret`` and keeps the events it accepted (``events``, in arrival order), the deliveries
    it refused for a bad signature (``refused``), and can be stopped and started again on the
    same port (a receiver that is down refuses connections). ``delay`` slows every answer."""

    def __init__(self, secret: str = "", port: int = 0, *, delay: float = 0.0) -> None:
        self.secret, self.port, self.delay = secret, port, delay
        self.events: list[dict[str, Any]] = []
        self.deliveries: list[str] = []
        self.refused = 0
        self.arrivals = 0  # requests begun (before the delay)
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.arrivals += 1
                if receiver.delay:
                    time.sleep(receiver.delay)
                if not verify_signature(receiver.secret, body,
                                        self.headers.get(SIGNATURE_HEADER, "")):
                    with receiver.lock:
                        receiver.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.events.extend(json.loads(body)["events"])
                    receiver.deliveries.append(self.headers.get("X-Memstream-Delivery", ""))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def check(self, expected: dict[int, str]) -> dict[str, int]:
        """Compare what arrived with ``expected`` ({event number: record id}): missing,
        duplicates, unexpected, and events of one record that arrived out of order."""
        with self.lock:
            arrived = [(e["seq"], e["record_ids"][0]) for e in self.events]
        seqs = [s for s, _ in arrived]
        last: dict[str, int] = {}
        seen: set[int] = set()
        disorder = 0
        for seq, rid in arrived:  # a repeat (at least once) is not a disorder
            if seq in seen:
                continue
            seen.add(seq)
            if seq < last.get(rid, 0):
                disorder += 1
            last[rid] = max(seq, last.get(rid, 0))
        return {"expected": len(expected), "arrived": len(arrived),
                "missing": len(set(expected) - set(seqs)),
                "duplicates": len(seqs) - len(set(seqs)),
                "unexpected": len(set(seqs) - set(expected)), "out_of_order": disorder}


def run(*, n: int = 1000, down: float = 30.0, timeout: float = 180.0, max_delay: float = 60.0,
        echo: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Add ``n`` records (each then updated once, so order per record is tested) while the
    receiver is down for ``down`` seconds; then bring it back and wait for every event."""
    with tempfile.TemporaryDirectory() as tmp:
        # the receiver is on loopback: allowed here as an operator would allow it
        mem = Memory(Path(tmp) / "webhooks.db", embedder="none",
                     config=Config(webhooks_private=True))
        receiver = Receiver().start()  # take a free port, then go down on it
        receiver.stop()
        hook = mem.webhooks.add(receiver.url)
        receiver.secret = hook.secret
        deliverer = Deliverer(mem.store.events, max_delay=max_delay, allow_private=True).start()
        started = time.monotonic()
        add_ms = []
        for i in range(n):
            t = time.perf_counter()
            rec = mem.add(f"memory {i} written while the receiver is down")
            add_ms.append((time.perf_counter() - t) * 1000)
            if i % 2 == 0:
                mem.update(rec.id, importance=0.9)
        echo(f"{n} records added in {time.monotonic() - started:.1f} s; receiver down")
        time.sleep(max(0.0, down - (time.monotonic() - started)))
        failed = mem.webhooks.get(hook.id)
        receiver.start()
        back = time.monotonic()
        echo(f"receiver back after {back - started:.1f} s ({failed.attempts} failed tries)")
        expected = {e.seq: e.record_ids[0] for e in mem.events(limit=10 * n + 10)}
        while time.monotonic() - back < timeout:
            if receiver.check(expected)["missing"] == 0:
                break
            time.sleep(0.1)
        caught_up = time.monotonic() - back
        deliverer.stop()
        receiver.stop()
        result = receiver.check(expected)
        mem.close()
    return {"records": n, "down_s": down, "failed_tries_while_down": failed.attempts,
            "catch_up_s": round(caught_up, 2), "add_p50_ms": round(percentile(add_ms, 50), 3),
            **result}


def render(report: dict[str, Any]) -> str:
    lines = [f"webhook outage: {report['records']} records, receiver down "
             f"{report['down_s']:.0f} s ({report['failed_tries_while_down']} failed tries)"]
    for key in ("expected", "arrived", "missing", "duplicates", "unexpected", "out_of_order",
                "catch_up_s", "add_p50_ms"):
        lines.append(f"  {key:<14} {report[key]}")
    return "\n".join(lines)
