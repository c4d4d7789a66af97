"""EpisodeMemory: the same state as the dict API, stored as records in the engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstream import InvalidInput, Memory
from memstream.cli import cli
from memstream.episodes import EpisodeMemory, new_memory, record_episode

EPISODES = [
    {"task_id": "a", "score": 0.9, "steps": 3, "trajectory_summary": "fast and right",
     "successes": ["checked the cache first"]},
    {"task_id": "a", "score": 0.2, "steps": 9, "trajectory_summary": "slow and wrong",
     "mistakes": ["ignored the error log"],
     "mistake_cards": [{"mistake_type": "skip_logs", "correct_decision": "read logs",
                        "evidence": "step 2"}]},
    {"task_id": "b", "score": 0.6, "steps": 5, "trajectory_summary": "ok"},
    {"task_id": "a", "score": 0.1, "steps": 12, "trajectory_summary": "worse",
     "mistake_cards": [{"mistake_type": "skip_logs", "correct_decision": "read logs"}]},
]


def _strip_times(state):
    for entry in state["episode_log"]:
        entry.pop("timestamp")
    return state


def test_fold_equals_the_dict_api(kw_memory: Memory):
    em = EpisodeMemory(kw_memory, agent_id="solver", llm=None)
    expected = new_memory()
    for e in EPISODES:
        em.record(e)
        record_episode(expected, e)
    assert _strip_times(em.state()) == _strip_times(expected)
    assert em.summary()["mistake_cards"] == 1
    assert em.context("a") == em.context("a")  # cached state, same answer
    assert "[skip_logs, seen 2x]" in em.context("a")
    other = EpisodeMemory(kw_memory, agent_id="someone-else", llm=None)
    assert other.state()["total_episodes"] == 0


def test_bad_report_is_refused_before_storing(kw_memory: Memory):
    em = EpisodeMemory(kw_memory, llm=None)
    with pytest.raises(InvalidInput):
        em.record({"task_id": "a", "score": 7})
    assert kw_memory.count() == 0


def test_import_export_and_consolidate(kw_memory: Memory, tmp_path: Path):
    em = EpisodeMemory(kw_memory, agent_id="x", llm=None, consolidate_every=3)
    base = new_memory()
    record_episode(base, EPISODES[0])
    base["global_rules"] = ["imported rule"]
    em.import_dict(base)
    assert _strip_times(em.export_dict()) == _strip_times(json.loads(json.dumps(base)))
    em.record(EPISODES[1])
    assert em.consolidate() is None  # 2 episodes since the start: not due yet
    em.record(EPISODES[0])
    assert em.consolidate() == "heuristic"
    state = em.state()
    assert state["last_consolidated_at"] == 3
    assert state["global_rules"] == ["imported rule", "[HIGH SCORE 0.90] fast and right"]
    assert em.consolidate() is None


def test_consolidate_with_llm(kw_memory: Memory, chat):
    from memstream.llm import ChatClient

    em = EpisodeMemory(kw_memory, llm=ChatClient(base_url=chat.url, model="m", timeout=5))
    for e in EPISODES:
        em.record(e)
    chat.answers = ['["Read the logs before acting."]']
    assert em.consolidate(force=True) == "llm"
    assert em.state()["global_rules"] == ["[CONSOLIDATED] Read the logs before acting."]


def test_search_past_episodes(kw_memory: Memory):
    em = EpisodeMemory(kw_memory, llm=None)
    for e in EPISODES:
        em.record(e)
    hits = em.search("wrong", task_id="a")
    assert [h.record.data["episode"]["trajectory_summary"] for h in hits] == ["slow and wrong"]


WORKER = r"""
import sys
from memstream import Memory
from memstream.episodes import EpisodeMemory
with Memory(sys.argv[1], embedder="none") as mem:
    em = EpisodeMemory(mem, agent_id="shared", llm=None)
    for i in range(40):
        task = sys.argv[2]
        em.record({"task_id": task, "score": (i % 10) / 10,
                   "trajectory_summary": f"{task} {i}", "mistakes": [f"m {task} {i}"]})
"""


def test_two_processes_lose_no_episode(tmp_path: Path):
    db = tmp_path / "episodes.db"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(db), task])
             for task in ("left", "right")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with Memory(db, embedder="none") as mem:
        state = EpisodeMemory(mem, agent_id="shared", llm=None).state()
    assert state["total_episodes"] == 80
    assert len(state["score_history"]["left"]) == len(state["score_history"]["right"]) == 40
    assert len(state["mistakes"]) == 80


def test_cli_episodes(db_path: Path, tmp_path: Path):
    runner = CliRunner()

    def run(*args):
        res = runner.invoke(cli, ["--db", str(db_path), "--embedder", "none", "episodes",
                                  "--agent", "bot", *args])
        assert res.exit_code == 0, res.output
        return res.output

    run("record", "--task", "t", "--score", "0.9", "--steps", "4", "--summary", "went well",
        "--success", "planned first")
    run("record", "--task", "t", "--score", "0.2", "--mistake", "rushed",
        "--card", '{"mistake_type": "haste", "correct_decision": "plan"}')
    out = run("context", "--task", "t")
    assert "[WORKS] planned first" in out and "[AVOID] rushed" in out and "[haste, seen 1x]" in out
    assert json.loads(run("summary"))["total_episodes"] == 2
    assert "not due yet" in run("consolidate")
    assert "consolidated (heuristic)" in run("consolidate", "--force")
    export = tmp_path / "export.json"
    run("export", str(export))
    assert json.loads(export.read_text())["global_rules"] == ["[HIGH SCORE 0.90] went well"]
    runner.invoke(cli, ["--db", str(tmp_path / "other.db"), "--embedder", "none", "episodes",
                        "import", str(export)])
    with Memory(tmp_path / "other.db", embedder="none") as mem:
        assert EpisodeMemory(mem, llm=None).state()["total_episodes"] == 2
    bad = runner.invoke(cli, ["--db", str(db_path), "--embedder", "none", "episodes", "record",
                              "--score", "3"])
    assert bad.exit_code == 2
