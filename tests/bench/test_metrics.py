from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memstream.bench import locomo
from memstream.bench.metrics import ndcg_at, percentile, recall_any_at, recall_frac_at


def test_metrics_hand_computed():
    ranked = ["a", "x", "b", "y"]
    rel = {"a", "b", "c"}
    assert recall_any_at(ranked, rel, 1) == 1.0
    assert recall_any_at(["x"], rel, 1) == 0.0
    assert recall_frac_at(ranked, rel, 3) == pytest.approx(2 / 3)
    dcg = 1 + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, rel, 3) == pytest.approx(dcg / ideal)
    assert ndcg_at(["b"], {"b"}, 10) == 1.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([], 95) == 0.0


def test_locomo_loader_and_run_on_a_handmade_file(tmp_path: Path):
    data = [{
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I bought a new bicycle.",
                 "blip_caption": "a red bicycle"},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Rex chewed my shoes today."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ann's puppy?", "answer": "Rex",
             "evidence": ["D1:1"], "category": 4},
            {"question": "What colour is Ben's bicycle?", "answer": "red",
             "evidence": ["D1:2; D9:9"], "category": 1},
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": [],
             "category": 5},
            {"question": "Broken evidence?", "answer": "x", "evidence": ["D7:7"], "category": 2},
        ],
    }]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    convs = locomo.load(path)
    assert [t.dia_id for t in convs[0].turns] == ["D1:1", "D1:2", "D2:1"]
    assert convs[0].turns[1].text == "Ben: Nice! I bought a new bicycle. [shares a photo: a red " \
        "bicycle]"
    assert [q.evidence for q in convs[0].questions] == [{"D1:1"}, {"D1:2"}]
    assert convs[0].skipped == 1
    report = locomo.run(path, profiles=["recall"], embedder="none")
    overall = report["profiles"]["recall"]["metrics"]["overall"]
    assert report["questions"] == 2
    assert overall["recall_any@10"] == 1.0
    assert "overall" in locomo.render(report)
