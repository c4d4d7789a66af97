"""A process killed with SIGKILL right after ``add`` returns loses no acknowledged record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memstream import Memory

CHILD = r"""
import sys
from memstream import Memory
mem = Memory(sys.argv[1], embedder="none")
i = 0
while True:
    rec = mem.add(f"durable record {i}", data={"i": i})
    print(rec.id, flush=True)   # acknowledged only after add returned
    i += 1
"""


def test_sigkill_after_add_loses_nothing(tmp_path: Path):
    db = tmp_path / "durable.db"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE,
                            text=True)
    acked = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(acked) < 200 and time.monotonic() < deadline:
        acked.append(proc.stdout.readline().strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert len(acked) == 200
    with Memory(db, embedder="none") as mem:
        stored = {r.id: r for r in mem.get_all(limit=None)}
        for n, rid in enumerate(acked):
            assert stored[rid].text == f"durable record {n}"
            assert stored[rid].data == {"i": n}
        assert mem.count() >= len(acked)


def test_two_processes_write_one_file(tmp_path: Path):
    db = tmp_path / "shared.db"
    code = (
        "import sys\nfrom memstream import Memory\n"
        "with Memory(sys.argv[1], embedder='none') as m:\n"
        "    for i in range(150):\n"
        "        m.add(f'{sys.argv[2]} {i}', agent_id=sys.argv[2])\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), name],
                              stderr=subprocess.PIPE, text=True) for name in ("alpha", "beta")]
    outcomes = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outcomes]
    with Memory(db, embedder="none") as mem:
        assert mem.count(agent_id="alpha") == 150
        assert mem.count(agent_id="beta") == 150
