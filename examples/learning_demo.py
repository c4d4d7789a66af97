"""An agent repeats one task 50 times and learns which strategy works.

The simulated environment answers each strategy with a fixed success rate the agent does not
know. Before each attempt the agent asks memstream for advice: with a heuristic it follows the
most confident one (exploring another strategy one time in five), without one it explores.
Run it: python examples/learning_demo.py
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from memstream import FixedClock, Memory
from memstream.learning import Learner, MemoryScope

TASK = "Create a customer through the billing API endpoint"
STRATEGIES = {  # strategy -> (success rate, the error it fails with)
    "read docs then compose payload": (0.85, "422 invalid currency code"),
    "guess fields from screenshots": (0.35, "400 missing required field tax_id"),
    "replay logged calls with edits": (0.55, "409 idempotency key reused"),
}


def run(episodes: int = 50, seed: int = 7, path: str | None = None,
        out=sys.stdout) -> list[str]:
    """Run the loop; returns the advice (best strategy or "-") after each episode."""
    rng = random.Random(seed)
    clock = FixedClock("2026-01-05T09:00:00Z")
    folder = tempfile.mkdtemp(prefix="memstream-learning-")
    advice_log: list[str] = []
    with Memory(path or str(Path(folder) / "learning.db"), clock=clock) as mem:
        learner = Learner(mem, scopes=[MemoryScope("billing-bot", can_learn=["api_testing"])])
        for n in range(1, episodes + 1):
            advice = learner.retrieve(TASK, "billing-bot", k=3)
            best = advice.heuristics[0].strategy if advice.heuristics else None
            if best is None or rng.random() < 0.2:
                strategy = rng.choice(sorted(STRATEGIES))
            else:
                strategy = best
            rate, error = STRATEGIES[strategy]
            ok = rng.random() < rate
            learner.learn("billing-bot", "crm", TASK, ok, strategy,
                          error_message=None if ok else error)
            clock.advance(hours=1)
            after = learner.retrieve(TASK, "billing-bot", k=3)
            top = after.heuristics[0] if after.heuristics else None
            advice_log.append(top.strategy if top else "-")
            if n % 10 == 0:
                shown = f"{top.strategy} ({top.confidence:.2f})" if top else "none yet"
                print(f"after {n:2d} episodes: advice = {shown}", file=out)
        print("\nwhat the agent would be told now:\n" + after.to_prompt(), file=out)
    return advice_log


if __name__ == "__main__":
    run()
