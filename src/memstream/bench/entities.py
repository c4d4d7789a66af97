"""``memstream bench entities``: how well the offline extractor finds names (precision and recall
on a sample the team wrote and labelled by hand, in English, German and Spanish: ``SAMPLE``),
and what the entity graph costs at scale: the ingest rate with linking on and off, an entity
lookup's latency, the graph's size, and search latency with and without following names.

A name counts as found when the extractor gives the same key (``_entities.key_of``: case,
accents and a title aside); only confirmed (strong) mentions count as the extractor's claims,
as only those make an entity listed, and days and months (kind "date") are not claimed as
names.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..core.names import extract, key_of
from ..engine.memory import Memory
from ..errors import InvalidInput
from ..store.parts.graph import Graph

__all__ = ["SAMPLE", "cost", "dev_set", "matches", "quality"]

#: (language, text, the names in it): written and labelled by the team, not drawn from any
#: development set
SAMPLE: list[tuple[str, str, list[str]]] = [
    ("en", "Booked the dentist for Oliver on Tuesday with Dr. Amara Singh.",
     ["Oliver", "Amara Singh"]),
    ("en", "Grandma Rose is flying in from Dublin with Aer Lingus on the 3rd.",
     ["Rose", "Dublin", "Aer Lingus"]),
    ("en", "The invoice from Northgate Plumbing is still unpaid; Kevin said he'd call them.",
     ["Northgate Plumbing", "Kevin"]),
    ("en", "Priya moved the sprint review to Thursday because the Berlin team is offline.",
     ["Priya", "Berlin"]),
    ("en", "Ticket OPS-2291 was closed by Hannah after the Cloudflare change.",
     ["OPS-2291", "Hannah", "Cloudflare"]),
    ("en", "Sam prefers window seats and hates layovers in Frankfurt.", ["Sam", "Frankfurt"]),
    ("en", "We bought the Thermos flask at the REI store on Pearl Street.",
     ["Thermos", "REI", "Pearl Street"]),
    ("en", "Ms. Okafor from Lakeside Elementary wants the permission slip by Friday.",
     ["Okafor", "Lakeside Elementary"]),
    ("en", "Remember that Luca is allergic to peanuts and shellfish.", ["Luca"]),
    ("en", "The lease on the Maple Avenue flat ends in March; Jordan wants to renew.",
     ["Maple Avenue", "Jordan"]),
    ("en", "Coffee with Fatima Haddad at Blue Bottle to talk about the Lisbon conference.",
     ["Fatima Haddad", "Blue Bottle", "Lisbon"]),
    ("en", "Order 55812 from IKEA arrives between 8 and 12 tomorrow.", ["IKEA"]),
    ("de", "Termin beim Zahnarzt Dr. Weber am Montag um 9 Uhr in der Lindenstraße.",
     ["Weber", "Lindenstraße"]),
    ("de", "Oma Hilde kommt am Wochenende aus Hamburg zu Besuch.", ["Hilde", "Hamburg"]),
    ("de", "Die Rechnung von Stadtwerke Leipzig ist noch offen, sagt Tobias.",
     ["Stadtwerke Leipzig", "Tobias"]),
    ("de", "Lea hat den Kita-Platz in der Kita Sonnenschein bekommen.",
     ["Lea", "Kita Sonnenschein"]),
    ("de", "Das Paket von Zalando wurde bei Familie Schneider abgegeben.",
     ["Zalando", "Schneider"]),
    ("de", "Frau Yilmaz von der Sparkasse ruft wegen des Kredits zurück.",
     ["Yilmaz", "Sparkasse"]),
    ("de", "Im Sommer fahren wir mit Jonas und Mila an den Bodensee.",
     ["Jonas", "Mila", "Bodensee"]),
    ("de", "Vertrag Nr. KV-4471 bei der Allianz läuft im Dezember aus.", ["KV-4471", "Allianz"]),
    ("de", "Herr Becker ist ab Mittwoch im Urlaub; Vertretung macht Frau Krause.",
     ["Becker", "Krause"]),
    ("de", "Noah spielt jetzt Handball beim SC Leipzig.", ["Noah", "SC Leipzig"]),
    ("de", "Kündigung an Vodafone per Einschreiben geschickt.", ["Vodafone"]),
    ("de", "Geburtstagsfeier für Emma im Café Glück am Samstag.", ["Emma", "Café Glück"]),
    ("es", "Cita con la doctora Ruiz en el Hospital La Paz el martes.",
     ["Ruiz", "Hospital La Paz"]),
    ("es", "Mi hermana Carmen vive ahora en Valencia con su novio Pablo.",
     ["Carmen", "Valencia", "Pablo"]),
    ("es", "El vuelo de Iberia a Bogotá sale a las 7 de la mañana.", ["Iberia", "Bogotá"]),
    ("es", "Javier trabaja en Telefónica desde enero.", ["Javier", "Telefónica"]),
    ("es", "La reserva en el Hotel Miramar está a nombre de Lucía Fernández.",
     ["Hotel Miramar", "Lucía Fernández"]),
    ("es", "Pedido PED-9031 de El Corte Inglés llega el jueves.",
     ["PED-9031", "El Corte Inglés"]),
    ("es", "Sofía no come carne; para la cena en Madrid pedimos mesa vegetariana.",
     ["Sofía", "Madrid"]),
    ("es", "El señor Ortega del banco Santander nos llamará mañana.", ["Ortega", "Santander"]),
    ("es", "Diego y Marta celebran su aniversario en Granada.", ["Diego", "Marta", "Granada"]),
    ("es", "Hay que renovar el pasaporte de Andrés antes de agosto.", ["Andrés"]),
    ("es", "La profesora Gómez dice que Lucas lee muy bien.", ["Gómez", "Lucas"]),
    ("es", "Comprar entradas para el Museo del Prado para el domingo.", ["Museo del Prado"]),
]


def quality() -> dict[str, Any]:
    """Precision and recall per language and overall; ``misses`` and ``extra`` list what went
    wrong."""
    tally: dict[str, list[int]] = {}
    misses: list[str] = []
    extra: list[str] = []
    for lang, text, names in SAMPLE:
        want = {key_of(n) for n in names}
        got = {m.key for m in extract(text) if m.strong and m.kind != "date"}
        for group in (lang, "all"):
            t = tally.setdefault(group, [0, 0, 0])  # true positives, claimed, labelled
            t[0] += len(want & got)
            t[1] += len(got)
            t[2] += len(want)
        misses += [f"{lang}: {k}" for k in sorted(want - got)]
        extra += [f"{lang}: {k}" for k in sorted(got - want)]
    return {"groups": {g: {"precision": round(tp / claimed, 3) if claimed else 0.0,
                           "recall": round(tp / labelled, 3), "names": labelled}
                       for g, (tp, claimed, labelled) in tally.items()},
            "misses": misses, "extra": extra}


_FIRST = ["Marta", "Priya", "Jonas", "Lucía", "Oliver", "Fatima", "Kenji", "Amara", "Tobias",
          "Ines", "Pablo", "Hilde", "Noah", "Sofía", "Kevin", "Mila", "Dmitri", "Aisha"]
_LAST = ["Silva", "Haddad", "Becker", "Ruiz", "Okafor", "Tanaka", "Novak", "Brandt", "Costa",
         "Lindqvist", "Moreau", "Abara"]
_PLACES = ["Porto", "Leipzig", "Valencia", "Dublin", "Kyoto", "Bergen", "Lyon", "Krakow",
           "Austin", "Cusco"]
_VERBS = ["met", "called", "emailed", "visited", "thanked", "argued with", "drove",
          "sent the notes to", "had lunch with", "reminded"]


def _texts(n: int, seed: int = 11) -> list[str]:
    """Everyday notes with names: people (from some 2,600 first and last names and a number,
    so that names repeat the way a long history's do), places and ids."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        who = f"{_FIRST[rng.integers(len(_FIRST))]} {_LAST[rng.integers(len(_LAST))]}" \
              f"{'' if rng.random() < 0.5 else ' ' + str(int(rng.integers(12)))}"
        out.append(f"Today I {_VERBS[rng.integers(len(_VERBS))]} {who} in "
                   f"{_PLACES[rng.integers(len(_PLACES))]} about ticket OPS-{i % 5000}.")
    return out


def _timed(fn: Callable[[], Any], runs: int) -> float:
    """The median of ``runs`` calls, in milliseconds."""
    took = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took)


def cost(n: int = 100_000, *, folder: str | None = None, queries: int = 200,
         progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Ingest rates (graph on and off), lookup and search latency and the graph's size at
    ``n`` records (random 384-dimension vectors; the texts carry names)."""
    say = progress or (lambda _msg: None)
    texts = _texts(n)
    rng = np.random.default_rng(5)
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for graph in (False, True):
            path = Path(tmp) / f"{'on' if graph else 'off'}.db"
            link = Graph.link
            if not graph:  # the records alone: today's write path without linking
                Graph.link = _no_link  # type: ignore[method-assign]
            try:
                with Memory(path, embedder="none", config=Config(reflection_threshold=0),
                            llm=None) as mem:
                    t0 = time.perf_counter()
                    for start in range(0, n, 1000):
                        mem.add_many([{"text": t, "embedding": v, "user_id": "u"} for t, v in
                                      zip(texts[start:start + 1000],
                                          vecs[start:start + 1000], strict=True)])
                    rate = n / (time.perf_counter() - t0)
                    out["ingest_on" if graph else "ingest_off"] = round(rate)
                    say(f"ingest with the graph {'on' if graph else 'off'}: {rate:,.0f} rec/s")
                    if graph:
                        out["lookup_ms"] = round(_timed(partial(_lookup, mem, rng), queries), 2)
                        out["list_ms"] = round(_timed(lambda: mem.entities(user_id="u"), 20), 2)
                        out["entities"], out["mentions"] = mem.store.graph.size()
                        out["graph_bytes"] = _table_bytes(path, ("entities", "entity_mentions",
                                                                 "entity_mentions_record",
                                                                 "sqlite_autoindex_entities_1"))
            finally:
                Graph.link = link  # type: ignore[method-assign]
        path = Path(tmp) / "on.db"
        ask = [texts[int(i)] for i in rng.integers(0, n, queries)]
        for flag in (False, True):
            with Memory(path, embedder="none", llm=None,
                        config=Config(reflection_threshold=0, entities=flag)) as mem:
                out["search_ms_entities" if flag else "search_ms"] = round(_timed(
                    partial(_search, mem, iter(ask), vecs, rng), queries), 2)
    out["ingest_ratio"] = round(out["ingest_on"] / out["ingest_off"], 3)
    return out


def _lookup(mem: Memory, rng: np.random.Generator) -> None:
    names = [f"{f} {s}" for f in _FIRST[:6] for s in _LAST[:5]]
    mem.entity(names[int(rng.integers(len(names)))], user_id="u")


def _search(mem: Memory, asked: Any, vecs: np.ndarray, rng: np.random.Generator) -> None:
    mem.search(next(asked), user_id="u", touch=False, vector=vecs[int(rng.integers(len(vecs)))])


def _no_link(self: Any, db: Any, records: Any) -> None:
    """The graph part's ``link`` switched off (the write path as it was without the graph)."""


def _table_bytes(path: Path, names: tuple[str, ...]) -> int | None:
    """The bytes the graph's tables and indexes take in the file (SQLite's dbstat, when
    compiled in)."""
    import sqlite3

    with sqlite3.connect(path) as db:
        try:
            rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        except sqlite3.OperationalError:
            return None
    return int(sum(size for name, size in rows if name in names))


#: the settings the held-out check chooses among: off, or the bonus a name adds (logits)
SETTINGS: dict[str, float | None] = {"off": None, "bonus 1": 1.0, "bonus 2": 2.0, "bonus 3": 3.0}


def held_out(path: str, *, progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """The everyday suite with following names held out by store: for each store, the setting
    (``SETTINGS``) that answers most questions first or in the top 5 on the other stores is
    scored on it. Also each setting on every store, and vector search from the same runs."""
    import os

    from ..retrieval import entities as following
    from .everyday import run

    per: dict[str, dict[str, tuple[int, int, int]]] = {}
    overall: dict[str, tuple[float, float]] = {}
    vector = (0.0, 0.0)
    kept = os.environ.get("MEMSTREAM_ENTITIES"), following.BRIDGE_BONUS
    try:
        for name, bonus in SETTINGS.items():
            os.environ["MEMSTREAM_ENTITIES"] = "0" if bonus is None else "1"
            following.BRIDGE_BONUS = bonus if bonus is not None else kept[1]
            groups = run(path, profiles=("default",))["profiles"]
            mine = groups["default"]["groups"]
            per[name] = {k.split(":", 1)[1]: (g["first_count"], g["top5_count"], g["n"])
                         for k, g in mine.items() if k.startswith("store:")}
            overall[name] = (mine["overall"]["first"], mine["overall"]["top5"])
            vo = groups["vector only"]["groups"]["overall"]
            vector = (vo["first"], vo["top5"])
            if progress:
                progress(f"{name}: {overall[name][0]:.3f} / {overall[name][1]:.3f}")
    finally:
        following.BRIDGE_BONUS = kept[1]
        if kept[0] is None:
            os.environ.pop("MEMSTREAM_ENTITIES", None)
        else:
            os.environ["MEMSTREAM_ENTITIES"] = kept[0]
    stores = list(per["off"])
    first = top5 = n = 0
    chosen = {}
    for store in stores:
        def others(setting: str, store: str = store) -> int:
            return sum(per[setting][o][0] + per[setting][o][1] for o in stores if o != store)
        best = max(SETTINGS, key=lambda s: (others(s), s == "bonus 2"))
        chosen[store] = best
        a, b, c = per[best][store]
        first, top5, n = first + a, top5 + b, n + c
    return {"held_out": (round(first / n, 3), round(top5 / n, 3)), "chosen": chosen,
            "settings": overall, "vector_only": vector}


def _fold(name: str) -> list[str]:
    """A name's words after case-folding, a trailing possessive dropped (the dev set's rule)."""
    text = re.sub(r"(?:'s|’s|'|’)$", "", name.strip()).casefold()
    return [w for w in re.split(r"\s+", text) if w]


def matches(listed: str, labelled: str) -> bool:
    """The dev set's matching rule: equal after case-folding, or one with exactly one word
    more or fewer than the other ("Dr. Okafor" / "Okafor", "Priya" / "Priya Raman")."""
    a, b = _fold(listed), _fold(labelled)
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(long_) - len(short) == 1 and bool(short) and (
        long_[1:] == short or long_[:-1] == short)


def dev_set(path: str | Path, *, embedder: str | None = None) -> dict[str, Any]:
    """What ``Memory.entities`` lists for each note of a labelled set (``entities_dev.json``:
    ``{"notes": [{"id", "lang", "text", "entities": [{"name", "kind"}], "not_entities"}]}``),
    each note stored under a user of its own: precision, recall and the share of matched
    names with the labelled kind, overall and per language and kind; listed names that the
    note labels not-an-entity (weekdays and months among them), counted apart. The kinds are
    what a user gets with ``embedder`` (None: the default), which reads the kinds the words
    leave open (``cognition.kinds``); "none" gives the kinds of the words alone."""
    try:
        notes = json.loads(Path(path).read_text(encoding="utf-8"))["notes"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"cannot read the entities set {path}: {exc!r}; it needs "
                           "{'notes': [{'id', 'lang', 'text', 'entities', 'not_entities'}]}"
                           ) from exc
    tally: dict[str, list[int]] = {}  # group -> right, listed, labelled, kind right
    junk: list[str] = []
    calendar = 0
    with Memory(":memory:", embedder=embedder, config=Config(reflection_threshold=0),
                llm=None) as mem:
        for note in notes:
            user = f"note-{note['id']}"
            mem.add(note["text"], user_id=user)
            mem.flush()
            listed = mem.entities(user_id=user, limit=1000)
            labels = note.get("entities") or []
            found = {n for n, lab in enumerate(labels)
                     if any(matches(e.name, lab["name"]) for e in listed)}
            kind_right = sum(any(matches(e.name, labels[n]["name"]) and e.kind ==
                                 labels[n]["kind"] for e in listed) for n in found)
            right_listed = sum(any(matches(e.name, lab["name"]) for lab in labels)
                               for e in listed)
            groups = ["all", f"lang:{note['lang']}", f"half:{_half(note['id'])}",
                      f"half:{_half(note['id'])}:{note['lang']}"]
            for g in groups:
                t = tally.setdefault(g, [0, 0, 0, 0, 0])
                t[0] += len(found)
                t[1] += len(listed)
                t[2] += len(labels)
                t[3] += kind_right
                t[4] += right_listed
            for n, lab in enumerate(labels):
                t = tally.setdefault(f"kind:{lab['kind']}", [0, 0, 0, 0, 0])
                t[0] += n in found
                t[2] += 1
            nots = {key_of(x) for x in note.get("not_entities") or []}
            for e in listed:
                if key_of(e.name) in nots:
                    junk.append(f"{note['lang']}: {e.name}")
                    calendar += key_of(e.name) in _CALENDAR_KEYS
    return {"groups": {g: {"precision": round(t[4] / t[1], 3) if t[1] else None,
                           "recall": round(t[0] / t[2], 3) if t[2] else None,
                           "kind_right": round(t[3] / t[0], 3) if t[0] and t[1] else None,
                           "labelled": t[2], "listed": t[1]}
                       for g, t in tally.items()},
            "not_entities_listed": junk, "calendar_listed": calendar}


def _half(note_id: Any) -> str:
    """The half of the set a note falls in by its id's number: "a" (odd) to look at while
    developing, "b" (even) to report as held out (``docs/entities.md``)."""
    digits = re.sub(r"\D", "", str(note_id))
    return "a" if digits and int(digits) % 2 else "b"


#: month and weekday names (English, German, Spanish, French), to count the calendar listed
_CALENDAR_KEYS = {key_of(w) for w in """january february march april may june july august
september october november december monday tuesday wednesday thursday friday saturday sunday
januar februar märz juni juli oktober dezember montag dienstag mittwoch donnerstag freitag
samstag sonntag enero febrero marzo abril mayo junio julio agosto septiembre octubre
noviembre diciembre lunes martes miércoles jueves viernes sábado domingo""".split()}
