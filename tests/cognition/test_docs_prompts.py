"""docs/cognition.md shows the prompts the code sends, word for word."""

from __future__ import annotations

from pathlib import Path

from memstream.cognition import changes_llm, consolidation, extraction, importance, reflection


def test_documented_prompts_match_the_code():
    doc = (Path(__file__).parents[2] / "docs" / "cognition.md").read_text()
    for prompt in (importance.RATING_PROMPT, reflection.QUESTION_PROMPT,
                   reflection.INSIGHT_PROMPT, extraction.FACTS_PROMPT, extraction.DECIDE_PROMPT,
                   consolidation.MERGE_PROMPT, changes_llm.PROMPT):
        assert prompt.replace("{{", "{").replace("}}", "}") in doc
