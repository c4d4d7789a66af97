"""``memstream bench beam`` on a two-chat folder and its .tar.xz written here in BEAM's format:
evidence ids map to exchanges (a list or a dict of lists, as text), abstention is skipped,
baselines are scored beside the profiles, and a tarball reads like its folder."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from click.testing import CliRunner

from memstream.bench import beam
from memstream.cli import cli


def _chat(folder: Path, topic: str) -> None:
    folder.mkdir(parents=True)
    turns = [[{"role": "user", "id": str(2 * i), "time_anchor": "March-01-2024",
               "content": f"Note {i} about {topic}: the {w} is ready."},
              {"role": "assistant", "id": str(2 * i + 1), "content": "Noted, thank you."}]
             for i, w in enumerate(["invoice", "kayak", "piano", "harbour"])]
    (folder / "chat.json").write_text(json.dumps([
        {"batch_number": 1, "time_anchor": None, "turns": turns[:2]},
        {"batch_number": 2, "time_anchor": "April-02-2024", "turns": turns[2:]}]))
    (folder / "probing_questions.json").write_text(json.dumps({
        "information_extraction": [{"question": f"Is the piano for {topic} ready?",
                                    "source_chat_ids": "[4]"}],
        "knowledge_update": [{"question": "Which harbour note did I write?",
                              "source_chat_ids": "{'first': [6], 'second': [7]}"}],
        "abstention": [{"question": "What did I say about the moon?"}]}))


def test_bench_beam_end_to_end(tmp_path: Path):
    data = tmp_path / "beam_dev"
    _chat(data / "1", "the shop")
    _chat(data / "2", "the school")
    chats = beam.load(data)
    assert [c.name for c in chats] == ["1", "2"]
    assert [q.evidence for q in chats[0].questions] == [{"1:0"}, {"1:1"}] and chats[0].skipped == 1
    assert chats[0].exchanges[2].at > chats[0].exchanges[0].at  # the second batch's anchor
    report = beam.run(data, profiles=["default"], embedder="none")
    assert report["exchanges"] == 8 and report["questions"] == 4
    assert set(report["profiles"]) == {"default", "keyword only"}  # no vectors: no vector baseline
    assert report["profiles"]["default"]["metrics"]["overall"]["recall_any@10"] == 1.0
    # the baselines' searches are timed too (their p50 was printed as 0.0)
    assert report["profiles"]["keyword only"]["latency_ms"]["p50"] > 0
    archive = tmp_path / "beam.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(data, arcname="beam_dev")
    out = CliRunner().invoke(cli, ["--embedder", "none", "bench", "beam", "--data", str(archive),
                                   "--profiles", "default,paper"])
    assert out.exit_code == 0, out.output
    assert "BEAM" in out.output and "keyword only" in out.output and "paper" in out.output


def test_the_upstream_layout_reads_as_is_and_progress_is_shown(tmp_path: Path):
    """The BEAM repository keeps the questions in ``<N>/probing_questions/``; a missing path
    says where the data comes from."""
    data = tmp_path / "chats" / "500K"
    for n, topic in ((5, "the shop"), (6, "the school")):
        _chat(data / str(n), topic)
        (data / str(n) / "probing_questions").mkdir()
        (data / str(n) / "probing_questions.json").rename(
            data / str(n) / "probing_questions" / "probing_questions.json")
    out = CliRunner().invoke(cli, ["--embedder", "none", "bench", "beam", "--data", str(data),
                                   "--profiles", "default"])
    assert out.exit_code == 0, out.output
    assert "bench beam: chats 2/2 (100%)" in out.stderr
    assert "scored the chats in" in out.stderr
    assert "BEAM" in out.stdout
    missing = CliRunner().invoke(cli, ["bench", "beam", "--data", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "github.com/mohammadtavakoli78/BEAM" in missing.output
