"""Write ``src/memstream/first_names.txt``: given names common in at least one of 105 countries
(rank 500 or better among that country's names), from the ``names-dataset`` package (MIT). A
single capitalised word that opens a sentence is taken for a name when it is on this list and
the tokenizer does not find it much likelier in lowercase (``core.names``): "Marta gave me her
copy", but not "Will you call".

    pip install names-dataset && python tools/first_names.py

The package is needed only to regenerate the file; memstream reads the file."""

from __future__ import annotations

import gzip
import pickle
from importlib.util import find_spec
from pathlib import Path

#: the worst rank in a country's list of given names that still counts as common there
RANK = 500
OUT = Path(__file__).resolve().parents[1] / "src" / "memstream" / "first_names.txt"


def ranked(best: int) -> set[str]:
    """Given names that at least one country ranks ``best`` or better (names-dataset)."""
    spec = find_spec("names_dataset")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("needs the names-dataset package: pip install names-dataset")
    folder = Path(next(iter(spec.submodule_search_locations))) / "v3"
    with gzip.open(folder / "first_names.pkl.gz") as f:
        table = pickle.load(f)
    return {name for name, facts in table.items()
            if facts.get("rank") and min(facts["rank"].values()) <= best}


def names() -> set[str]:
    return {name for name in ranked(RANK) if name.isalpha() and name[:1].isupper()}


def main() -> None:
    found = sorted(names())
    OUT.write_text(f"# given names ranked {RANK} or better in at least one of 105 countries "
                   "(names-dataset: tools/first_names.py)\n" + "\n".join(found) + "\n",
                   encoding="utf-8")
    print(f"wrote {len(found)} names to {OUT}")


if __name__ == "__main__":
    main()
