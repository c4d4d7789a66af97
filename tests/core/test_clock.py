from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memstream import FixedClock, InvalidInput, Memory, SimulationClock, WallClock
from memstream.core.clock import to_timestamp


def test_to_timestamp_forms():
    assert to_timestamp(10) == 10.0
    assert to_timestamp("1970-01-01T00:01:00Z") == 60.0
    assert to_timestamp(datetime(1970, 1, 1, 1, tzinfo=UTC)) == 3600.0
    assert to_timestamp(datetime(1970, 1, 1, 1)) == 3600.0  # naive = UTC
    tz = timezone(timedelta(hours=2))
    assert to_timestamp(datetime(1970, 1, 1, 2, tzinfo=tz)) == 0.0
    for bad in ("yesterday", float("inf"), True, [1]):
        with pytest.raises(InvalidInput):
            to_timestamp(bad)  # type: ignore[arg-type]


def test_fixed_and_wall_clock():
    c = FixedClock(100)
    c.advance(hours=1, seconds=5)
    assert c.now() == 3705
    assert abs(WallClock().now() - datetime.now(UTC).timestamp()) < 5


def test_simulation_clock_maps_steps_to_hours():
    c = SimulationClock(hours_per_step=0.5, start=1000)
    assert c.time_of(4) == 1000 + 2 * 3600
    c.advance(3)
    assert c.now() == 1000 + 1.5 * 3600
    with pytest.raises(InvalidInput):
        SimulationClock(hours_per_step=0)


def test_memory_uses_step_times_and_decays_per_step(tmp_path):
    clock = SimulationClock(hours_per_step=1.0, start=0)
    with Memory(tmp_path / "sim.db", embedder="none", clock=clock) as mem:
        old = mem.add("saw a red apple", step=0, agent_id="a")
        new = mem.add("saw a red apple again", step=10, agent_id="a")
        assert (old.created_at, new.created_at) == (0.0, 36000.0)
        clock.step = 20
        hits = mem.search("red apple", agent_id="a", touch=False)
        by_id = {h.record.id: h.explain for h in hits}
        assert by_id[old.id].raw_recency == pytest.approx(0.99**20)
        assert by_id[new.id].raw_recency == pytest.approx(0.99**10)
        # explicit times override the clock
        at = mem.add("explicit", step=3, at=500)
        assert at.created_at == 500
