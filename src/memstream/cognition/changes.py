"""What a new memory does to the older ones: changes a fact, restates one, or is junk.

The worker, once a new record has its vector, compares it with the same owner's valid records
written before it (``engine.changes`` gathers them). Offline, the decision is two small fitted
models over structural signals, none of them a word of any language:

- a *pair* model, for the new record and each of its nearest older records: how alike the two
  are (``z``, in the namespace's pair deviations: ``retrieval.null.Null``), whether each is the
  other's nearest, how many of their words and numbers they share, what the new one adds, how
  long after it came and whether the kinds agree. With the embedder its directions were
  fitted for (``Directions``), it also reads two directions of the vector space: how far the
  new record reads as announcing a change (the mean vector of records that replaced one,
  minus that of the others), and how far what the new record says beyond the old (its vector
  less its part along the old one) points where a successor's does. It answers "none",
  "changes" (the new record supersedes the old: a move, a new price, a rescheduled event, a
  correction, a retraction) or "restates" (a duplicate of the old);
- a *junk* model, for the new record alone: its length, its share of digits, whether it ends
  by announcing something (a colon), whether it was stored as a tool's output, a status code
  in it, whether it names anyone, how alike it is to anything else the owner keeps, and how
  near its vector is to chatter (``CHATTER``) rather than to ordinary sentences.

The weights (``changes_weights.json``) were fitted on the changes development set, each store
held out in turn to report what they do on a store they never saw (``memstream bench
changes``; docs/benchmarks.md). A decision is applied only at its ``APPLY`` confidence or more.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import cast

import numpy as np

from .directions import Direction, Directions, beyond, fit_directions
from .identifiers import distinct_things, identifiers

__all__ = ["APPLY", "CHATTER", "DIRECTION_FEATURES", "JUNK_FEATURES", "LABELS", "PAIR_FEATURES",
           "READ_CHANGES", "READ_RESTATES", "RESTATEMENT_FEATURES", "STATED", "Decision",
           "Direction", "Directions", "Item", "Weights", "beyond", "chatter_of", "decide",
           "distinct_things", "fit", "fit_directions", "identifiers", "junk_features",
           "load_weights", "pair_features", "veto"]

WEIGHTS_FILE = "changes_weights.json"
#: the pair model's classes, in the order of its weight rows
LABELS = ("none", "changes", "restates")
PAIR_FEATURES = ("bias", "z", "nearest", "mutual", "shared_words", "new_words", "new_number",
                 "numbers_both", "days", "same_kind", "shared_names", "length_ratio", "margin",
                 "new_names", "z_shared")
#: the change model's signals read from the vectors (``Directions``), after ``PAIR_FEATURES``
DIRECTION_FEATURES = ("announces", "adds_as_successor")
#: the restatement model's signal read from the vectors, after ``PAIR_FEATURES``
RESTATEMENT_FEATURES = ("reminds",)
#: the reader (``cognition.reader``) vetoes: a change is linked (or kept as tentative) only
#: when the reader reads it at this probability or more, a restatement only from
#: ``READ_RESTATES``; each is the largest that keeps ``VETO_KEEPS`` of the labelled changes (and
#: restatements) among the worker's pairs of the changes development set (``veto``; the bench
#: chooses them on the other stores for each store it holds out: docs/retrieval.md, "The
#: reader"). Mild on purpose: keeping nine in ten instead cost right tentative changes there
#: and caught no wrong one
READ_CHANGES = 0.02
READ_RESTATES = 0.01
#: the share of the labelled changes and restatements the vetoes keep (``veto``)
VETO_KEEPS = 0.97
#: two records naming different identifiers (``identifiers``) are linked only when the reader
#: reads a change at this probability or more: they are different things unless one says it
#: replaces the other
DISTINCT_CHANGE = 0.95
JUNK_FEATURES = ("bias", "digits", "colon", "tool", "status", "isolated", "names",
                 "chatter")
#: what chatter sounds like, in one language: the junk model reads how much nearer a record's
#: vector is to the nearest of these than to the nearest background sentence (a multilingual
#: embedder puts an acknowledgement in any language near them). Written from the kinds of
#: noise an agent stores (acknowledgements, greetings, fillers, a tool's retries), not from
#: any evaluation set.
CHATTER: tuple[str, ...] = (
    "ok, thanks", "thank you, that's all", "hi there", "hello, how are you?", "good morning",
    "got it", "sounds good", "no problem", "one moment please", "I'll look into it",
    "bye, talk to you later", "here you go:", "request failed, retrying",
    "connection timed out, trying again", "done", "let me think about it")
#: what a short memory worth keeping sounds like: chatter is measured against these and the
#: background sentences both, so that a short fact is not chatter for being short
STATED: tuple[str, ...] = (
    "I'm vegetarian", "my sister lives in Madrid", "the meeting moved to Friday",
    "Tom is allergic to nuts", "we have two cats", "I work as a nurse",
    "the rent is 900 a month", "call the dentist tomorrow", "her birthday is in May",
    "I prefer tea to coffee", "the car needs new tyres", "the flight lands at 6pm")
#: each decision is applied at this confidence or more (below, nothing is linked): chosen on
#: the development set held out by store, for precision first (a wrong link hides a fact); a
#: record is refused (``Config(junk="refuse")``: never stored) only at the "refuse" confidence
APPLY = {"junk": 0.7, "duplicate": 0.6, "superseded": 0.8, "refuse": 0.8}
#: a change below its ``APPLY`` confidence is kept as tentative from this probability: it
#: only orders reads (the older record right after its probable successor, both shown), so a
#: wrong one costs a place and a right one puts the current fact first. Held out by store on
#: the changes set, tentative changes from 0.4 are 0.65 right (from "more likely than either
#: other answer", about 0.5, 0.70; from 0.3, 0.61, and the everyday suite's top five fell)
TENTATIVE = 0.4
#: how many of the new record's nearest older records are compared with it
NEAREST = 5

_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
#: a capitalised word after the first of its sentence: a name, in most cased languages
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[^\W\d_][\w'-]*", re.UNICODE)
_STATUS = re.compile(r"\b[45]\d\d\b")


@dataclass(frozen=True, slots=True)
class Item:
    """What the models read of one record."""

    id: str
    text: str
    kind: str
    at: float


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision about ``record`` (ids only: ``memstream.Finding`` is what ``audit`` shows of
    it, with the records): ``kind`` "superseded" (``related`` is its successor),
    "duplicate" (``related`` is the original it restates) or "junk"; ``confidence`` in [0, 1];
    ``reason`` names the signals that decided it; ``applied`` says whether it is in effect.
    ``tentative``: a probable change (``TENTATIVE`` or more), below the confidence to link
    (``APPLY``): nothing is invalidated; a read about now puts the successor first, and the
    old record after it. ``others``: the other probable successors found for the record (id
    and probability), less likely than ``related`` or replaced by it: a read as of a time
    before ``related`` was written reads the likeliest of those written by then."""

    kind: str
    record: str
    related: str | None
    confidence: float
    reason: str
    applied: bool = True
    tentative: bool = False
    others: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict[str, object]:
        """As stored (``tentative`` only when true: a finding that is not reads as it did
        before there were tentative ones)."""
        out: dict[str, object] = {
            "kind": self.kind, "record": self.record, "related": self.related,
            "confidence": round(self.confidence, 3), "reason": self.reason,
            "applied": self.applied}
        if self.tentative:
            out["tentative"] = True
        if self.others:
            out["others"] = [[rid, round(p, 3)] for rid, p in self.others]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Decision:
        """As stored; keys a later version added are left out."""
        return cls(str(raw["kind"]), str(raw["record"]),
                   None if raw.get("related") is None else str(raw["related"]),
                   float(raw["confidence"]),  # type: ignore[arg-type]
                   str(raw.get("reason", "")), bool(raw.get("applied", True)),
                   bool(raw.get("tentative", False)),
                   tuple((str(rid), float(p)) for rid, p in cast(
                       "list[tuple[str, float]]", raw.get("others") or ())))


@dataclass(frozen=True, slots=True)
class Weights:
    pair: np.ndarray  # (len(LABELS), len(PAIR_FEATURES) + len(DIRECTION_FEATURES))
    junk: np.ndarray  # (len(JUNK_FEATURES),)
    #: the pair model without the directions: for an embedder they were not fitted for
    plain: np.ndarray | None = None  # (len(LABELS), len(PAIR_FEATURES))
    directions: Directions | None = None
    #: the pair model that decides restatements with the directions
    restating: np.ndarray | None = None  # (len(LABELS), len(PAIR_FEATURES) + 1)
    #: the reader's vetoes (``READ_CHANGES``, ``READ_RESTATES``)
    read_changes: float = READ_CHANGES
    read_restates: float = READ_RESTATES


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _names(text: str) -> set[str]:
    return {w for w in _NAME.findall(text) if w[:1].isupper()}


def junk_features(item: Item, nearest_z: float, chatter: float) -> np.ndarray:
    """The junk model's signals of one record; ``nearest_z``: how alike (pair deviations) the
    most alike of the owner's other records is; ``chatter``: how much nearer (cosine) it is to
    ``CHATTER`` than to the background sentences (``chatter_of``)."""
    text = item.text.strip()
    chars = max(1, len(text))
    return np.array([
        1.0, sum(c.isdigit() for c in text) / chars,
        float(text.endswith(":")), float(item.kind == "tool"),
        float(bool(_STATUS.search(text))), -min(3.0, max(-3.0, nearest_z)),
        float(len(_names(text)) > 0), chatter], dtype=np.float64)


def chatter_of(vec: np.ndarray, chatter: np.ndarray | None, other: np.ndarray | None
               ) -> float:
    """How much nearer (cosine) ``vec`` is to the nearest ``CHATTER`` row than to the nearest
    of ``other`` (the ``STATED`` and background rows; 0 without either)."""
    if chatter is None or other is None or len(chatter) == 0 or len(other) == 0:
        return 0.0
    v = vec / (np.linalg.norm(vec) or 1.0)
    return float((chatter @ v).max() - (other @ v).max())


def pair_features(new: Item, old: Item, z: float, nearest: bool, mutual: bool,
                  margin: float) -> np.ndarray:
    """The pair model's signals for ``new`` and an older record ``old``; ``margin``: how much
    more alike (pair deviations) ``old`` is to ``new`` than the next most alike older record
    (negative: less alike than the most alike)."""
    a, b = _words(new.text), _words(old.text)
    na, nb = set(_NUMBER.findall(new.text)), set(_NUMBER.findall(old.text))
    names_a, names_b = _names(new.text), _names(old.text)
    return np.array([
        1.0, z, float(nearest), float(mutual), len(a & b) / max(1, len(a | b)),
        len(a - b) / max(1, len(a)), float(bool(na - nb)), float(bool(na) and bool(nb)),
        math.log1p(max(0.0, new.at - old.at) / 86400.0), float(new.kind == old.kind),
        len(names_a & names_b) / max(1, len(names_b)),
        math.log((len(new.text) + 1) / (len(old.text) + 1)), margin,
        float(bool(names_a - names_b)), z * len(a & b) / max(1, len(a | b)),
        ], dtype=np.float64)


def margins(z: np.ndarray) -> list[float]:
    """For each of the older records (most alike first), how much more alike it is than the
    next one (the first) or than the first (every other)."""
    if len(z) == 0:
        return []
    second = float(z[1]) if len(z) > 1 else float(z[0]) - 3.0
    return [float(z[0]) - second] + [float(v - z[0]) for v in z[1:]]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


def _sigmoid(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64))))


def _reason(names: Sequence[str], x: np.ndarray, w: np.ndarray) -> str:
    parts = sorted(((float(x[n] * w[n]), names[n]) for n in range(1, len(names))), reverse=True)
    return ", ".join(f"{name} {v:+.2f}" for v, name in parts[:3] if v > 0)


def decide(new: Item, older: Sequence[Item], z: np.ndarray, mutual: Sequence[bool],
           nearest_z: float, chatter: float, w: Weights,
           vectors: tuple[np.ndarray, np.ndarray] | None = None,
           read: Callable[[list[int]], np.ndarray] | None = None) -> list[Decision]:
    """The findings about ``new`` (junk, a duplicate of an older record) and about the older
    records it changes. ``older`` are its nearest older records, most alike first, with their
    likeness ``z`` and whether ``new`` is each one's nearest newer record (``mutual``);
    ``vectors``: ``new``'s vector and ``older``'s rows, from the embedder ``w.directions``
    were fitted for: a restatement is then decided by the pair model that reads how far the
    new record reads like a reminder, a change by the one that reads the change directions
    (each alone: with the change directions, restatements were found less precisely, 0.77
    against 0.89 held out by store); without them, by the plain model.

    ``read``: the reader (``cognition.reader``), asked only about the pairs that could be
    decided (a change at ``TENTATIVE`` or more, a restatement at its ``APPLY``) and those
    naming one identifier: it gives a row of ``RELATIONS`` probabilities for each older
    record it is given the index of. A pair it reads no change in (``w.read_changes``) is no
    change, one it reads no restatement in (``w.read_restates``) no restatement; of two
    records naming the same identifier (one order, one ticket) it decides (likeness cannot
    tell an update of the order from the other orders of a log; the reader reads what the
    newer says of it). Two records naming different identifiers are never a restatement,
    and a change only when the reader reads one at ``DISTINCT_CHANGE``
    (``distinct_things``); a twin of the very same text is no restatement (its caller kept
    it on purpose).
    Findings below their ``APPLY`` confidence are not returned, but for a change of at least
    ``TENTATIVE`` probability: it comes back ``tentative`` (not applied)."""
    jx = junk_features(new, nearest_z, chatter)
    junk = float(_sigmoid(jx @ w.junk))
    if junk >= APPLY["junk"]:
        return [Decision("junk", new.id, None, junk, _reason(JUNK_FEATURES, jx, w.junk))]
    if not older:
        return []
    gaps = margins(z)
    base = np.vstack([pair_features(new, o, float(z[n]), n == 0, bool(mutual[n]), gaps[n])
                      for n, o in enumerate(older)])
    distinct = np.array([distinct_things(new.text, o.text) for o in older])
    named = identifiers(new.text)
    same = np.array([bool(named & identifiers(o.text)) for o in older])
    twin = np.array([o.text.strip() == new.text.strip() for o in older])
    xr, pr, nr = model_rows(base, w, vectors, restating=True)
    restating = _softmax(xr @ pr.T)[:, 2]
    restating[distinct | twin] = 0.0
    xc, pc, nc = model_rows(base, w, vectors)
    changing = _softmax(xc @ pc.T)[:, 1]
    reads = np.ones((len(older), 2))  # what the reader was not asked about, it vetoes not
    if read is not None:
        ask = [n for n in range(len(older)) if same[n] or restating[n] >= APPLY["duplicate"]
               or changing[n] >= TENTATIVE]
        if ask:
            reads[ask] = np.asarray(read(ask))[:, :2]
        restating[reads[:, 1] < w.read_restates] = 0.0
        restating[same] = np.maximum(restating[same], reads[same, 1])
        changing[(reads[:, 0] < w.read_changes)
                 | (distinct & (reads[:, 0] < DISTINCT_CHANGE))] = 0.0
        changing[same] = np.maximum(changing[same], reads[same, 0])
    else:
        changing[distinct] = 0.0
    best = int(np.argmax(restating))
    if restating[best] >= APPLY["duplicate"]:  # a restatement: the new record is the duplicate
        why = (_same(named, older[best].text) if same[best] and reads[best, 1] >= restating[best]
               else _reason(nr, xr[best], pr[2]))
        return [Decision("duplicate", new.id, older[best].id, float(restating[best]),
                         why + _said(read, reads, best, 1))]
    best = int(np.argmax(changing))  # one change per new record: the most likely
    sure = bool(changing[best] >= APPLY["superseded"])
    if not sure and changing[best] < TENTATIVE:
        return []
    why = (_same(named, older[best].text) if same[best] and reads[best, 0] >= changing[best]
           else _reason(nc, xc[best], pc[1]))
    return [Decision("superseded", older[best].id, new.id, float(changing[best]),
                     why + _said(read, reads, best, 0), applied=sure,
                     tentative=not sure)]


def veto(read: np.ndarray, labelled: np.ndarray, keeps: float = VETO_KEEPS) -> float:
    """The largest veto (of 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5) under which at least
    ``keeps`` of the ``labelled`` pairs' ``read`` probabilities stay (0.0 without any)."""
    if not len(labelled) or not labelled.any():
        return 0.0
    kept = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
            if float(np.mean(read[labelled] >= t)) >= keeps]
    return max(kept, default=0.0)


def _same(named: set[str], older: str) -> str:
    """Why a pair naming one identifier was decided by the reader."""
    return "both name " + ", ".join(sorted(named & identifiers(older)))


def _said(read: object, reads: np.ndarray, row: int, column: int) -> str:
    """What the reader read of the pair decided, for the finding's reason."""
    if read is None:
        return ""
    return f"; the reader reads {('a change', 'a restatement')[column]} at {reads[row, column]:.2f}"


def model_rows(base: np.ndarray, w: Weights, vectors: tuple[np.ndarray, np.ndarray] | None,
               *, restating: bool = False) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The rows of the change model (``restating``: of the restatement model) from the pairs'
    ``PAIR_FEATURES`` (``base``), the weights that read them and the names of their columns:
    with the directions when ``w`` has them and ``vectors`` are given, else the plain
    model's."""
    if restating:
        if w.directions is not None and w.restating is not None and vectors is not None:
            return (np.hstack([base, w.directions.restating(vectors[0], vectors[1])]),
                    w.restating, PAIR_FEATURES + RESTATEMENT_FEATURES)
    elif w.directions is not None and vectors is not None:
        return (np.hstack([base, w.directions.features(vectors[0], vectors[1])]), w.pair,
                PAIR_FEATURES + DIRECTION_FEATURES)
    return base, (w.plain if w.plain is not None else w.pair), PAIR_FEATURES


def fit(pairs: np.ndarray, pair_labels: np.ndarray, singles: np.ndarray,
        junk_labels: np.ndarray, *, l2: float = 1e-2, steps: int = 3000,
        directions: Directions | None = None, direction_rows: np.ndarray | None = None,
        restating_rows: np.ndarray | None = None) -> Weights:
    """Weights by gradient descent on the log loss (multinomial for pairs, logistic for junk),
    with an L2 penalty on everything but the bias. ``pairs`` hold the ``PAIR_FEATURES``; with
    ``directions``, ``direction_rows`` and ``restating_rows`` are the pairs'
    ``DIRECTION_FEATURES`` and ``RESTATEMENT_FEATURES`` (read with directions fitted on other
    records than these: a direction read on the records it was fitted on reads them better
    than it will read a new store), and the models that read them are fitted beside the plain
    one."""
    plain = _fit_pairs(pairs, pair_labels, l2, steps)
    wj = np.zeros(singles.shape[1])
    sj = singles.std(axis=0) + 1e-6
    sj[0] = 1.0
    xj = singles / sj
    for _ in range(steps):
        g = xj.T @ (_sigmoid(xj @ wj) - junk_labels) / len(xj)
        g[1:] += l2 * wj[1:]
        wj -= 0.5 * g
    if directions is None or direction_rows is None or restating_rows is None:
        return Weights(pair=plain, junk=wj / sj)
    full = _fit_pairs(np.hstack([pairs, direction_rows]), pair_labels, l2, steps)
    restating = _fit_pairs(np.hstack([pairs, restating_rows]), pair_labels, l2, steps)
    return Weights(pair=full, junk=wj / sj, plain=plain, directions=directions,
                   restating=restating)


def _fit_pairs(pairs: np.ndarray, labels: np.ndarray, l2: float, steps: int) -> np.ndarray:
    wp = np.zeros((len(LABELS), pairs.shape[1]))
    y = np.eye(len(LABELS))[labels]
    scale = pairs.std(axis=0) + 1e-6
    scale[0] = 1.0
    xs = pairs / scale
    for _ in range(steps):
        g = xs.T @ (_softmax(xs @ wp.T) - y) / len(xs)
        g[1:] += l2 * wp.T[1:]
        wp -= 0.5 * g.T
    out: np.ndarray = wp / scale
    return out


def save_weights(w: Weights) -> str:
    out: dict[str, object] = {
        "pair_features": list(PAIR_FEATURES), "labels": list(LABELS),
        "junk_features": list(JUNK_FEATURES), "junk": np.round(w.junk, 5).tolist()}
    if w.directions is None or w.plain is None or w.restating is None:
        out["pair"] = np.round(w.pair, 5).tolist()
        return json.dumps(out, indent=1)
    d = w.directions
    out.update({
        "pair": np.round(w.plain, 5).tolist(),
        "direction_features": list(DIRECTION_FEATURES),
        "pair_with_directions": np.round(w.pair, 5).tolist(),
        "restatement_features": list(RESTATEMENT_FEATURES),
        "restating": np.round(w.restating, 5).tolist(),
        "directions": {"embedder": d.embedder, **{
            name: {"vector": np.round(v.vector, 6).tolist(), "mean": round(v.mean, 6),
                   "scale": round(v.scale, 6)}
            for name, v in (("announces", d.announces),
                            ("adds_as_successor", d.adds_as_successor),
                            ("reminds", d.reminds))}}})
    return json.dumps(out, indent=1)


_fitted: list[Weights] = []


@contextlib.contextmanager
def fitted(w: Weights) -> Iterator[None]:
    """Use ``w`` instead of the shipped weights meanwhile (to score a store with weights fitted
    on the others: ``bench.changes``)."""
    _fitted.append(w)
    try:
        yield
    finally:
        _fitted.remove(w)


def load_weights() -> Weights:
    """The weights in use: the shipped ones (``changes_weights.json``), or those ``fitted``
    gives meanwhile."""
    return _fitted[-1] if _fitted else _shipped()


@lru_cache(maxsize=1)
def _shipped() -> Weights:
    raw = json.loads(resources.files("memstream.cognition").joinpath(WEIGHTS_FILE)
                     .read_text(encoding="utf-8"))
    if raw["pair_features"] != list(PAIR_FEATURES) or raw["junk_features"] != list(
            JUNK_FEATURES) or raw.get("direction_features", list(DIRECTION_FEATURES)) != list(
            DIRECTION_FEATURES) or raw.get("restatement_features", list(
            RESTATEMENT_FEATURES)) != list(RESTATEMENT_FEATURES):
        raise ValueError(f"{WEIGHTS_FILE} was fitted for other features; refit it "
                         "(memstream bench changes --fit)")
    plain = np.array(raw["pair"], dtype=np.float64)
    junk = np.array(raw["junk"], dtype=np.float64)
    if "directions" not in raw:
        return Weights(pair=plain, junk=junk)
    d = raw["directions"]

    def direction(name: str) -> Direction:
        return Direction(np.array(d[name]["vector"], dtype=np.float64), float(d[name]["mean"]),
                         float(d[name]["scale"]))

    return Weights(pair=np.array(raw["pair_with_directions"], dtype=np.float64), junk=junk,
                   plain=plain, restating=np.array(raw["restating"], dtype=np.float64),
                   directions=Directions(str(d["embedder"]), direction("announces"),
                                         direction("adds_as_successor"),
                                         direction("reminds")))
