"""The changes bench: stores whose facts change, with junk and duplicates labelled.

The data is a JSON file (``{"now", "stores"}``, as ``changes_dev.json`` of the development
split; it is never shipped): each store names its ``user`` and ``lang``, its ``memories`` (``id``,
``at``, ``kind``, ``text``, ``label`` "ok", "junk", "duplicate" with ``duplicate_of`` or
"superseded" with ``superseded_by``) and its ``questions`` (``type`` current, history, as_of,
unchanged or no_answer, the ``question``, ``as_of`` for as_of, and ``expected`` ids).

Every store is one namespace; its memories are written, embedded, then compared in the order
they were written (``engine.changes.compare``, as the worker does). Figures, per type, language
and store, beside plain vector search over the same records (which knows no links):

- ``current`` and ``unchanged``: the expected memory first; ``history``: in the first three,
  asking for the past (``include_invalid``), and again without asking (``UNASKED``: the search
  reads it from the question, ``retrieval.past``; not in ``overall``); ``as_of``: first,
  searching ``as_of`` its time; a duplicate found counts as its original;
- links: precision and recall of the superseded links (the record's ``superseded_by`` names its
  labelled successor, or a later one of the same chain), of junk and of duplicates (``audit``),
  and of the junk ``Config(junk="refuse")`` would refuse (found at ``APPLY["refuse"]``); the
  precision of the tentative changes (``Finding.tentative``: not linked, they order reads
  about now);
- the reliability of the relevance shown (the first ten hits of every question, ``no_answer``
  ones included) and a ``min_relevance`` chosen on the other stores for each store
  (``metrics.reliability``, ``metrics.held_out_threshold``).

``held_out``: each store is compared with weights fitted on the other stores only
(``cognition.changes.fit``), the figures a store never seen gets. ``fit`` returns the weights
fitted on every store (``memstream bench changes --fit``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..cognition import changes as model
from ..config import Config
from ..engine import changes as engine
from ..engine.memory import Memory
from ..engine.queries import embed_ahead
from ..errors import InvalidInput
from ..filters import Selection
from ..retrieval.null import Null
from ..scope import Query
from .metrics import held_out_threshold, reliability, render_reliability

TYPES = ("current", "history", "as_of", "unchanged", "no_answer")
#: history counts in the first this many hits
HISTORY_TOP = 3
#: the group of the history questions asked without ``include_invalid`` (the search reads
#: from the question that it asks about the past: ``retrieval.past``)
UNASKED = "type:history, past not asked for"


def _time(raw: Any) -> float:
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise InvalidInput(f"{raw!r} is not an ISO 8601 time") from exc


def load(path: str | Path) -> dict[str, Any]:
    try:
        raw: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
        raw["now_ts"] = _time(raw["now"])
        for s in raw["stores"]:
            for m in s["memories"]:
                m["ts"] = _time(m["at"])
            s["memories"].sort(key=lambda m: m["ts"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InvalidInput(f"cannot read the changes set {path}: {exc!r}; it needs 'now' and "
                           "'stores' (user, lang, memories, questions)") from exc
    return raw


def _ns(store: dict[str, Any], prefix: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9._-]", "-", store["user"])


def _index(mem: Memory, store: dict[str, Any], ns: str) -> dict[str, str]:
    """The store's memories written into ``ns`` and embedded; record id -> memory id."""
    mem.delete_all(namespace=ns)
    records = mem.add_many([{"text": m["text"], "kind": m.get("kind", "note"), "at": m["ts"],
                             "user_id": store["user"]} for m in store["memories"]],
                           namespace=ns, duplicates="keep")
    mem.flush()
    return {r.id: m["id"] for r, m in zip(records, store["memories"], strict=True)}


def _null(mem: Memory, ns: str) -> Null:
    from ..engine.nulls import null_rows

    null = null_rows(mem.store, Selection(ns), mem.vectors.background())
    if null is None:
        raise InvalidInput("the changes bench needs an embedder")
    return null


@dataclass(frozen=True, slots=True)
class Rows:
    """What the models are fitted on, of one store: the pair rows (``pairs``, labelled
    ``pair_y``: 0 none, 1 changes, 2 restates) with the new record's vector (``new_vecs``)
    and what it says beyond the old one (``beyond``), the junk rows
    (``singles``, ``junk_y``), and every record's vector (``vecs``) with whether it replaced
    an older one (``replaced_one``) or restates one (``restates_one``)."""

    pairs: np.ndarray
    pair_y: np.ndarray
    new_vecs: np.ndarray
    beyond: np.ndarray
    singles: np.ndarray
    junk_y: np.ndarray
    vecs: np.ndarray
    replaced_one: np.ndarray
    restates_one: np.ndarray
    #: what the reader reads of each pair (``RELATIONS`` probabilities; no rows when off)
    reads: np.ndarray


def features(mem: Memory, store: dict[str, Any]) -> Rows:
    """The pair and junk rows of one store with their labels, each record compared in the order
    written; a labelled change is applied as it comes (so that later records meet the store as
    the worker would leave it when it decides right)."""
    ns = _ns(store, "changes-fit-")
    ids = _index(mem, store, ns)
    of = {v: k for k, v in ids.items()}
    label = {m["id"]: m for m in store["memories"]}
    successors = {m["superseded_by"] for m in store["memories"] if m.get("superseded_by")}
    null = _null(mem, ns)
    vecs = mem.store.indexes.embeddings(ns, list(ids))
    pairs, pair_y, new_vecs, beyond, singles, junk_y = [], [], [], [], [], []
    reads: list[np.ndarray] = []
    for m in store["memories"]:
        rec = mem.get(of[m["id"]], namespace=ns)
        older, z, mutual = engine.neighbours(mem, rec, vecs[rec.id], null.pair_mean,
                                             null.pair_std)
        item = model.Item(rec.id, rec.text, rec.kind, rec.created_at)
        singles.append(model.junk_features(item, float(z[0]) if len(z) else -3.0,
                                           engine.chatter(mem, vecs[rec.id])))
        junk_y.append(float(m["label"] == "junk"))
        gaps = model.margins(z)
        read = engine.reads(mem, item, older)
        if read is not None:
            reads.extend(read)
        for n, o in enumerate(older):
            old = label[ids[o.id]]
            pairs.append(model.pair_features(item, o, float(z[n]), n == 0, bool(mutual[n]),
                                             gaps[n]))
            pair_y.append(1 if old.get("superseded_by") == m["id"]
                          else 2 if m.get("duplicate_of") == old["id"] else 0)
            new_vecs.append(vecs[rec.id])
            beyond.append(model.beyond(vecs[rec.id], vecs[o.id][None, :])[0])
        for old in store["memories"]:
            if old.get("superseded_by") == m["id"] and mem.get(of[old["id"]], namespace=ns).valid:
                mem.invalidate(of[old["id"]], superseded_by=rec.id, namespace=ns,
                               at=rec.created_at)
    mem.delete_all(namespace=ns)
    return Rows(np.array(pairs), np.array(pair_y, dtype=np.int64), np.array(new_vecs),
                np.array(beyond), np.array(singles), np.array(junk_y),
                np.array([vecs[of[m["id"]]] for m in store["memories"]]),
                np.array([m["id"] in successors for m in store["memories"]]),
                np.array([m["label"] == "duplicate" for m in store["memories"]]),
                np.array(reads))


def _chain(store: dict[str, Any], mid: str) -> list[str]:
    """The labelled successors of a memory, nearest first."""
    by_id = {m["id"]: m for m in store["memories"]}
    out: list[str] = []
    while (nxt := by_id[mid].get("superseded_by")) and nxt not in out:
        out.append(nxt)
        mid = nxt
    return out


class _Tally:
    def __init__(self) -> None:
        self.n: dict[str, int] = defaultdict(int)
        self.hit: dict[str, int] = defaultdict(int)
        self.links: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # right, found, labelled
        #: each store's shown hits: (relevance, answers the question?)
        self.shown: dict[str, list[tuple[float, bool]]] = defaultdict(list)

    def answer(self, groups: list[str], right: bool) -> None:
        for g in groups:
            self.n[g] += 1
            self.hit[g] += right

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"groups": {g: {"n": self.n[g],
                                              "right": round(self.hit[g] / self.n[g], 3)}
                                          for g in self.n}}
        if self.links:
            out["links"] = {k: {"precision": round(r / f, 3) if f else None,
                                "recall": round(r / t, 3) if t else None,
                                "found": f, "labelled": t}
                            for k, (r, f, t) in self.links.items()}
        if self.shown:
            out["reliability"] = reliability([p for ps in self.shown.values() for p in ps])
            out["min_relevance"] = held_out_threshold(self.shown)
        return out


def _evaluate(mem: Memory, suite: dict[str, Any], store: dict[str, Any],
              w: model.Weights, tallies: dict[str, _Tally]) -> None:
    ns = _ns(store, "changes-")
    ids = _index(mem, store, ns)
    of = {v: k for k, v in ids.items()}
    engine.compare(mem, [(ns, of[m["id"]]) for m in store["memories"]],
                   background=mem.vectors.background(), weights=w)
    label = {m["id"]: m for m in store["memories"]}
    canonical = {m["id"]: m.get("duplicate_of", m["id"]) for m in store["memories"]}
    links = tallies["default"].links
    for m in store["memories"]:
        rec = mem.get(of[m["id"]], namespace=ns)
        if m["label"] == "superseded":
            links["superseded"][2] += 1
        if rec.superseded_by is not None:
            links["superseded"][1] += 1
            links["superseded"][0] += ids.get(rec.superseded_by) in _chain(store, m["id"])
        links["junk"][2] += m["label"] == "junk"
        links["refused"][2] += m["label"] == "junk"
        links["duplicate"][2] += m["label"] == "duplicate"
    for f in mem.audit(namespace=ns, kinds=("junk", "duplicate"), limit=10_000):
        mid = ids[f.record.id]
        links[f.kind][1] += 1
        if f.kind == "junk":
            links["junk"][0] += label[mid]["label"] == "junk"
            if f.confidence >= model.APPLY["refuse"]:  # what Config(junk="refuse") refuses
                links["refused"][1] += 1
                links["refused"][0] += label[mid]["label"] == "junk"
        else:
            related = ids.get(f.related.id) if f.related else None
            links["duplicate"][0] += (label[mid]["label"] == "duplicate"
                                      and canonical.get(related or "") == label[mid][
                                          "duplicate_of"])
    for f in mem.audit(namespace=ns, kinds="superseded", limit=10_000):
        if f.tentative and f.related is not None:  # orders reads about now, links nothing
            links["tentative"][1] += 1
            links["tentative"][0] += ids[f.related.id] in _chain(store, ids[f.record.id])
    for q in store["questions"]:
        groups = ["overall", f"type:{q['type']}", f"lang:{store['lang']}",
                  f"store:{store['user']}"]
        want = set(q.get("expected") or ())
        top = HISTORY_TOP if q["type"] == "history" else 1
        as_of = _time(q["as_of"]) if q["type"] == "as_of" else None
        vector = mem.vectors.vector(q["question"])
        if vector is None:
            raise InvalidInput("the changes bench needs an embedder")
        embed_ahead(mem.vectors, mem.store, Selection(ns), q["question"])  # as a user's search
        hits = mem.search(Query(q["question"], include_invalid=q["type"] == "history"), k=10,
                          namespace=ns, now=suite["now_ts"], touch=False, as_of=as_of)
        got = [canonical[ids[h.record.id]] for h in hits]
        tallies["default"].shown[store["user"]].extend(
            (h.explain.relevance, g in want) for h, g in zip(hits, got, strict=True))
        if q["type"] == "no_answer":
            continue
        tallies["default"].answer(groups, bool(want.intersection(got[:top])))
        if q["type"] == "history":  # the same question, the past not asked for: read from it
            hits = mem.search(q["question"], k=10, namespace=ns, now=suite["now_ts"],
                              touch=False)
            got = [canonical[ids[h.record.id]] for h in hits]
            tallies["default"].answer([UNASKED], bool(want.intersection(got[:top])))
        plain = mem.store.indexes.vector_search(Selection(ns, include_invalid=True), vector, 10)
        got = [canonical[ids[i]] for i, _ in plain]
        tallies["vector only"].answer(groups, bool(want.intersection(got[:top])))
        if q["type"] == "history":
            tallies["vector only"].answer([UNASKED], bool(want.intersection(got[:top])))


def run(path: str | Path, *, db: str = ":memory:", embedder: str | None = None,
        held_out: bool = True, progress: Callable[[str], Any] | None = None
        ) -> dict[str, Any]:
    """Every figure of the module docstring; with ``held_out`` each store is compared with
    weights fitted on the others, else with the shipped weights."""
    suite = load(path)
    tallies = {"default": _Tally(), "vector only": _Tally()}
    config = Config(reflection_threshold=0, find_changes=False)
    with Memory(db, embedder=embedder, config=config, llm=None) as mem:
        rows = []
        if held_out:
            for store in suite["stores"]:
                rows.append(features(mem, store))
                if progress:
                    progress(f"features of {store['user']}")
        for n, store in enumerate(suite["stores"]):
            w = _fit([r for k, r in enumerate(rows) if k != n], _name(mem)) if held_out \
                else model.load_weights()
            with model.fitted(w):
                _evaluate(mem, suite, store, w, tallies)
            if progress:
                progress(f"scored {store['user']}")
    return {"data": str(path), "stores": len(suite["stores"]), "held_out": held_out,
            "profiles": {name: t.report() for name, t in tallies.items()}}


def _directions(rows: list[Rows], embedder: str) -> model.Directions:
    return model.fit_directions(
        embedder, np.vstack([r.vecs for r in rows]),
        np.concatenate([r.replaced_one for r in rows]),
        np.concatenate([r.restates_one for r in rows]),
        np.vstack([r.beyond for r in rows]), np.concatenate([r.pair_y == 1 for r in rows]))


def _read(rows: list[Rows], embedder: str | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each store's direction rows (``DIRECTION_FEATURES``, ``RESTATEMENT_FEATURES``) read
    with directions fitted on the other stores (as a store the shipped directions never saw
    reads them)."""
    if embedder is None or len(rows) < 3:
        return []
    return [_directions([o for k, o in enumerate(rows) if k != n], embedder).pairs(
        r.new_vecs, r.beyond) for n, r in enumerate(rows)]


def _fit(rows: list[Rows], embedder: str | None, *, l2: float = 1e-2,
         read: list[tuple[np.ndarray, np.ndarray]] | None = None) -> model.Weights:
    """The weights fitted on ``rows`` with the penalty ``l2``; the pair model's direction
    signals of each store are read with directions fitted on the other stores (``_read``),
    the directions kept are fitted on every store of ``rows``."""
    pairs = np.vstack([r.pairs for r in rows])
    labels = np.concatenate([r.pair_y for r in rows])
    singles = np.vstack([r.singles for r in rows])
    junk = np.concatenate([r.junk_y for r in rows])
    read = _read(rows, embedder) if read is None else read
    if embedder is None or not read:
        w = model.fit(pairs, labels, singles, junk, l2=l2)
    else:
        w = model.fit(pairs, labels, singles, junk, l2=l2,
                      directions=_directions(rows, embedder),
                      direction_rows=np.vstack([d for d, _ in read]),
                      restating_rows=np.vstack([r for _, r in read]))
    if all(len(r.reads) == len(r.pairs) for r in rows):  # the reader's vetoes, chosen here
        reads = np.vstack([r.reads for r in rows])
        w = dataclasses.replace(w, read_changes=model.veto(reads[:, 0], labels == 1),
                                read_restates=model.veto(reads[:, 1], labels == 2))
    return w


def fit(path: str | Path, *, embedder: str | None = None,
        progress: Callable[[str], Any] | None = None) -> model.Weights:
    """The weights fitted on every store of the set."""
    suite = load(path)
    config = Config(reflection_threshold=0, find_changes=False)
    with Memory(":memory:", embedder=embedder, config=config, llm=None) as mem:
        rows = []
        for store in suite["stores"]:
            rows.append(features(mem, store))
            if progress:
                progress(f"features of {store['user']}")
    return _fit(rows, _name(mem))


def _name(mem: Memory) -> str | None:
    return mem.embedder.name if mem.embedder is not None else None


def render(report: dict[str, Any]) -> str:
    profiles = report["profiles"]
    lines = [f"changes {report['data']}: {report['stores']} stores"
             + (", links held out by store" if report["held_out"] else ""), "",
             f"{'group':<34}{'n':>4}" + "".join(f"{n:>14}" for n in profiles)]
    first = profiles["default"]["groups"]
    order = sorted(first, key=lambda g: (g != "overall", g.split(":")[0], g))
    for g in order:
        cells = [f"{body['groups'][g]['right']:.2f}" if g in body["groups"] else "-"
                 for body in profiles.values()]
        lines.append(f"{g:<34}{first[g]['n']:>4}" + "".join(f"{c:>14}" for c in cells))
    lines.append("(current, as_of, unchanged: first; history: in the first three)")
    lines.append("")
    for kind, f in profiles["default"].get("links", {}).items():
        if kind == "tentative":
            lines.append(f"tentative changes (not linked: a read about now puts the successor "
                         f"first): precision {f['precision']} ({f['found']} found)")
            continue
        lines.append(f"{kind} links: precision {f['precision']}, recall {f['recall']} "
                     f"({f['found']} found, {f['labelled']} labelled)")
    if "reliability" in profiles["default"]:
        lines.extend(render_reliability(profiles["default"]))
    return "\n".join(lines)
