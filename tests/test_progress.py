"""The progress callback of long operations, as Python callers get it."""

from __future__ import annotations

import io
from pathlib import Path

from memstream import Memory
from memstream.engine import transfer
from memstream.engine.progress import wait_embedded


def test_export_and_import_report_progress(tmp_path: Path):
    with Memory(tmp_path / "a.db", embedder="none") as mem:
        mem.add_many([f"note {i}" for i in range(2500)])
        seen: list[tuple[str, int, int | None]] = []
        buf = io.StringIO()
        assert transfer.export_jsonl(mem, buf, progress=lambda *a: seen.append(a)) == 2500
        assert seen == [("export", 1000, 2500), ("export", 2000, 2500), ("export", 2500, 2500)]
    with Memory(tmp_path / "b.db", embedder="none") as mem:
        seen.clear()
        lines = buf.getvalue().splitlines()
        n = transfer.import_jsonl(mem, lines, progress=lambda *a: seen.append(a))
        assert n == 2500
        reads = [d for stage, d, _ in seen if stage == "read"]
        assert reads == sorted(reads) and reads[-1] == 2500 and len(reads) > 5
        assert seen[-1] == ("store", 2500, 2500)


def test_wait_embedded_reports_until_done(tmp_path: Path, e5):
    with Memory(tmp_path / "e.db", embedder=e5) as mem:
        mem.add_many([f"the garden note number {i}" for i in range(60)])
        seen: list[tuple[str, int, int | None]] = []
        wait_embedded(mem, lambda *a: seen.append(a), poll=0.05)
        assert mem.stats()["embedded"] == 60
        if seen:  # the worker may have finished before the first look
            assert seen[-1] == ("embedding", seen[-1][2], seen[-1][2])
            assert [d for _, d, _ in seen] == sorted(d for _, d, _ in seen)


def test_consolidate_reports_each_group(tmp_path: Path, e5):
    with Memory(tmp_path / "c.db", embedder=e5) as mem:
        for _ in range(2):
            mem.add_many(["The user likes green tea", "The user lives in Lisbon"],
                         duplicates="keep")
        mem.flush()
        seen: list[tuple[str, int, int | None]] = []
        changes = mem.consolidate(progress=lambda *a: seen.append(a))
        assert len(changes) == 2
        assert seen == [("merge", 1, 2), ("merge", 2, 2)]
