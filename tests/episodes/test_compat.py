"""The drop-in function API on the JSON layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstream.compat import episodes as ce

ORIGINAL_FILE = {  # as the original module wrote it: no mistake_cards key
    "version": 1,
    "total_episodes": 3,
    "last_consolidated_at": None,
    "global_rules": ["[HIGH SCORE 0.90] Investigated auth-service first"],
    "task_rules": {"root_cause_analysis": ["[WORKS] Correctly identified root cause on step 3"]},
    "episode_log": [
        {"timestamp": "2025-01-01T00:00:00+00:00", "task_id": "root_cause_analysis",
         "score": 0.82, "steps": 7, "summary": "Investigated auth-service first"},
    ],
    "score_history": {"root_cause_analysis": [0.82, 0.9, 0.4]},
    "mistakes": ["Escalated too early before diagnosing"],
    "successes": ["Correctly identified root cause on step 3"],
}


def test_original_file_loads_gains_saves_and_reloads(tmp_path: Path):
    path = tmp_path / "outputs" / "agent_memory.json"
    path.parent.mkdir()
    path.write_text(json.dumps(ORIGINAL_FILE, indent=2))
    mem = ce.load_agent_memory(str(path))
    assert mem["mistake_cards"] == [] and mem["total_episodes"] == 3
    mem = ce.record_episode(mem, {
        "task_id": "root_cause_analysis", "score": 0.3, "steps": 9,
        "trajectory_summary": "Restarted everything", "mistakes": ["Restarted all pods"],
        "mistake_cards": [{"mistake_type": "blast_radius", "correct_decision": "restart one"}]})
    ce.save_agent_memory(mem, str(path))
    again = ce.load_agent_memory(str(path))
    assert again == mem
    for key, value in ORIGINAL_FILE.items():
        if key == "total_episodes":
            assert again[key] == 4
        elif isinstance(value, list):
            assert again[key][: len(value)] == value
        elif isinstance(value, dict):
            for k, v in value.items():
                assert again[key][k][: len(v)] == v
    assert again["task_rules"]["root_cause_analysis"][-1] == "[AVOID] Restarted all pods"
    assert again["mistake_cards"][0]["mistake_type"] == "blast_radius"
    assert "MEMORY FROM PAST EPISODES" in ce.build_memory_context(again, "root_cause_analysis")


def test_crash_during_save_leaves_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "mem.json"
    mem = ce.new_agent_memory()
    ce.record_episode(mem, {"task_id": "t", "score": 0.9})
    ce.save_agent_memory(mem, str(path))
    before = path.read_bytes()

    def exploding_dump(obj, fh, **kw):
        fh.write('{"version": 1, "total_episo')  # half a file, then the process "dies"
        raise KeyboardInterrupt

    monkeypatch.setattr(ce.json, "dump", exploding_dump)
    ce.record_episode(mem, {"task_id": "t", "score": 0.1})
    with pytest.raises(KeyboardInterrupt):
        ce.save_agent_memory(mem, str(path))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["mem.json"]  # no temporary file left


def test_missing_file_is_fresh_and_corrupt_file_is_kept_aside(tmp_path: Path):
    assert ce.load_agent_memory(str(tmp_path / "none.json")) == ce.new_agent_memory()
    path = tmp_path / "mem.json"
    path.write_text('{"total_episodes": 5, "episode_log": [')
    with pytest.warns(ce.CorruptMemoryFileWarning, match="moved it to"):
        mem = ce.load_agent_memory(str(path))
    assert mem == ce.new_agent_memory()
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_text() == '{"total_episodes": 5, "episode_log": ['
    assert not path.exists()
    path.write_text('{"task_rules": ["not", "a", "dict"]}')
    with pytest.warns(ce.CorruptMemoryFileWarning):
        ce.load_agent_memory(str(path))


def test_maybe_consolidate_every_20_with_llm(tmp_path: Path, chat, monkeypatch):
    monkeypatch.setenv("MEMSTREAM_LLM_BASE_URL", chat.url)
    monkeypatch.setenv("MEMSTREAM_LLM_MODEL", "local-model")
    path = tmp_path / "m.json"
    mem = ce.new_agent_memory()
    for i in range(19):
        ce.record_episode(mem, {"task_id": "t", "score": 0.9, "trajectory_summary": f"s{i}"})
    assert ce.maybe_consolidate_memory(mem, api_key="k", path=str(path)) is mem
    assert not path.exists() and chat.requests == []
    ce.record_episode(mem, {"task_id": "t", "score": 0.9, "trajectory_summary": "s19"})
    chat.answers = ['["Do the thing."]']
    ce.maybe_consolidate_memory(mem, api_key="k", path=str(path))
    assert mem["global_rules"] == ["[CONSOLIDATED] Do the thing."]
    assert mem["last_consolidated_at"] == 20
    assert json.loads(path.read_text())["global_rules"] == mem["global_rules"]
    assert chat.requests[0]["body"]["model"] == "local-model"


def test_maybe_consolidate_heuristic_without_llm(tmp_path: Path, monkeypatch):
    for var in ("MEMSTREAM_LLM_BASE_URL", "MEMSTREAM_LLM_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    mem = ce.new_agent_memory()
    for i in range(25):
        ce.record_episode(mem, {"task_id": "t", "score": 0.95, "trajectory_summary": f"s{i}"})
    ce.maybe_consolidate_memory(mem, path=str(tmp_path / "m.json"))
    assert len(mem["global_rules"]) == 20  # the newest 20 of 25 heuristic rules
    assert mem["global_rules"][-1] == "[HIGH SCORE 0.95] s24"
    assert mem["last_consolidated_at"] == 25


def test_constants_match_the_original():
    assert (ce.MAX_EPISODES_STORED, ce.MAX_RULES_PER_TASK, ce.CONSOLIDATION_EVERY) == (100, 10, 20)
    assert ce.DEFAULT_PATH.endswith("agent_memory.json")
