"""``memstream bench agents`` at a small size: it runs end to end, reports every figure, and
leaves nothing behind but what it says it leaves (records in a given store)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from memstream import Memory
from memstream.bench import agents

from ..redis_server import REDIS_URL

FIGURES = {"step_range_ms", "attributes_ms", "similar_ms"}


def _small(**kw: object) -> dict[str, object]:
    return agents.run(agents=4, steps=120, queries=6, echo=lambda _: None, **kw)  # type: ignore[arg-type]


def test_temporary_sqlite_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    report = _small()
    assert report["states"] == 480 and report["store"] == "sqlite"
    assert report["tiers"] == "in-process" and "redis_mib" not in report
    assert all(report[f]["p50"] > 0 for f in FIGURES)  # type: ignore[index]
    assert isinstance(report["db_mib"], float)
    assert list(tmp_path.iterdir()) == []  # the temporary database is gone
    assert "store sqlite" in agents.render(report)
    # every state is in STM at full resolution: similar finds the exact nearest five
    assert report["similar_recall_at_5"] == 1.0


def test_small_tiers_compare_older_states_at_their_resolution(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    report = _small(stm_limit=20, im_limit=40)
    assert (report["stm_limit"], report["im_limit"]) == (20, 40)
    assert 0.0 < report["similar_recall_at_5"] < 1.0  # type: ignore[operator]
    assert "(STM 20, IM 40 per agent)" in agents.render(report)


@pytest.mark.usefixtures("redis_prefix")  # fails the test clearly when Redis is not running
def test_redis_tiers_leave_no_keys():
    import redis

    report = _small(redis_url=REDIS_URL)
    assert report["tiers"] == "redis" and isinstance(report["redis_mib"], float)
    assert not list(redis.Redis.from_url(REDIS_URL).scan_iter(f"bench-{os.getpid()}:*"))


def test_a_given_store_keeps_the_records(pg_url: str):
    report = _small(store=pg_url)
    assert report["store"] == "postgresql" and report["db_mib"] is None
    assert "database:" not in agents.render(report)
    with Memory(pg_url, embedder="none") as mem:
        assert mem.stats(namespace=f"bench-{os.getpid()}")["records"] == 480
