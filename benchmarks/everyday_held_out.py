"""The whole default engine on the everyday suite, held out by store: for each store, the notes
stage's weights are refitted on the other nine (``bench.fit_notes``, as the shipped ones were
fitted on all ten), and the store is then scored as ``memstream bench everyday`` scores it,
beside plain vector search in the same run. Answer first / in the top 5, by type (about 2 min).

    python benchmarks/everyday_held_out.py ../shared/data/everyday_dev.json
"""

from __future__ import annotations

import sys
from collections import defaultdict

from memstream.bench import everyday, fit_notes
from memstream.retrieval import notes


def main() -> None:
    path = sys.argv[1]
    groups = fit_notes.collect(path)
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    shipped = notes.load_weights
    try:
        for store in groups:
            weights = fit_notes.fit([g for other, gs in groups.items() if other != store
                                     for g in gs])
            notes.load_weights = lambda w=weights: w  # type: ignore[misc]
            report = everyday.run(path, stores=[store])
            for profile in ("default", "vector only"):
                for group, row in report["profiles"][profile]["groups"].items():
                    if group.startswith("store:"):
                        continue
                    c = counts[profile][group]
                    c[0] += row["n"]
                    c[1] += row["first_count"]
                    c[2] += row["top5_count"]
            print(f"scored {store}", flush=True)
    finally:
        notes.load_weights = shipped  # type: ignore[misc]
    print(f"{'group':<28} {'n':>4} {'default':>13} {'vector only':>13}")
    for group in sorted(counts["default"], key=lambda g: (g != "overall", g)):
        cells = []
        for profile in ("default", "vector only"):
            n, first, top5 = counts[profile][group]
            cells.append(f"{first / n:.2f} / {top5 / n:.2f}")
        print(f"{group:<28} {counts['default'][group][0]:>4} {cells[0]:>13} {cells[1]:>13}")


if __name__ == "__main__":
    main()
