"""What a new memory does to the older ones: changes a fact, restates one, or is junk.

The worker, once a new record has its vector, compares it with the same owner's valid records
written before it (``engine.changes`` gathers them). Offline, the decision is two small fitted
models over structural signals, none of them a word of any language:

- a *pair* model, for the new record and each of its nearest older records: how alike the two
  are (``z``, in the namespace's pair deviations: ``retrieval.null.Null``), whether each is the
  other's nearest, how many of their words and numbers they share, what the new one adds, how
  long after it came and whether the kinds agree. It answers "none", "changes" (the new record
  supersedes the old: a move, a new price, a rescheduled event, a correction, a retraction) or
  "restates" (a duplicate of the old);
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["APPLY", "CHATTER", "JUNK_FEATURES", "LABELS", "PAIR_FEATURES", "STATED", "Decision",
           "Item", "Weights", "chatter_of", "decide", "fit", "junk_features", "load_weights",
           "pair_features"]

WEIGHTS_FILE = "changes_weights.json"
#: the pair model's classes, in the order of its weight rows
LABELS = ("none", "changes", "restates")
PAIR_FEATURES = ("bias", "z", "nearest", "mutual", "shared_words", "new_words", "new_number",
                 "numbers_both", "days", "same_kind", "shared_names", "length_ratio", "margin",
                 "new_names", "z_shared")
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
    ``tentative``: a change more likely than not, but below the confidence to link
    (``APPLY``): nothing is invalidated; a read about now puts the successor first, and the
    old record after it."""

    kind: str
    record: str
    related: str | None
    confidence: float
    reason: str
    applied: bool = True
    tentative: bool = False

    def to_dict(self) -> dict[str, object]:
        """As stored (``tentative`` only when true: a finding that is not reads as it did
        before there were tentative ones)."""
        out: dict[str, object] = {
            "kind": self.kind, "record": self.record, "related": self.related,
            "confidence": round(self.confidence, 3), "reason": self.reason,
            "applied": self.applied}
        if self.tentative:
            out["tentative"] = True
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Decision:
        """As stored; keys a later version added are left out."""
        return cls(str(raw["kind"]), str(raw["record"]),
                   None if raw.get("related") is None else str(raw["related"]),
                   float(raw["confidence"]),  # type: ignore[arg-type]
                   str(raw.get("reason", "")), bool(raw.get("applied", True)),
                   bool(raw.get("tentative", False)))


@dataclass(frozen=True, slots=True)
class Weights:
    pair: np.ndarray  # (len(LABELS), len(PAIR_FEATURES))
    junk: np.ndarray  # (len(JUNK_FEATURES),)


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
           nearest_z: float, chatter: float, w: Weights) -> list[Decision]:
    """The findings about ``new`` (junk, a duplicate of an older record) and about the older
    records it changes. ``older`` are its nearest older records, most alike first, with their
    likeness ``z`` and whether ``new`` is each one's nearest newer record (``mutual``).
    Findings below their ``APPLY`` confidence are not returned, but for a change the pair
    model finds more likely than either other answer: it comes back ``tentative`` (not
    applied)."""
    jx = junk_features(new, nearest_z, chatter)
    junk = float(_sigmoid(jx @ w.junk))
    if junk >= APPLY["junk"]:
        return [Decision("junk", new.id, None, junk, _reason(JUNK_FEATURES, jx, w.junk))]
    if not older:
        return []
    gaps = margins(z)
    x = np.vstack([pair_features(new, o, float(z[n]), n == 0, bool(mutual[n]), gaps[n])
                   for n, o in enumerate(older)])
    p = _softmax(x @ w.pair.T)
    best = int(np.argmax(p[:, 2]))
    if p[best, 2] >= APPLY["duplicate"]:  # a restatement: the new record is the duplicate
        return [Decision("duplicate", new.id, older[best].id, float(p[best, 2]),
                        _reason(PAIR_FEATURES, x[best], w.pair[2]))]
    best = int(np.argmax(p[:, 1]))  # one change per new record: the most likely
    sure = bool(p[best, 1] >= APPLY["superseded"])
    if not sure and int(np.argmax(p[best])) != 1:
        return []
    return [Decision("superseded", older[best].id, new.id, float(p[best, 1]),
                     _reason(PAIR_FEATURES, x[best], w.pair[1]), applied=sure,
                     tentative=not sure)]


def fit(pairs: np.ndarray, pair_labels: np.ndarray, singles: np.ndarray,
        junk_labels: np.ndarray, *, l2: float = 1e-2, steps: int = 3000) -> Weights:
    """Weights by gradient descent on the log loss (multinomial for pairs, logistic for junk),
    with an L2 penalty on everything but the bias."""
    wp = np.zeros((len(LABELS), pairs.shape[1]))
    y = np.eye(len(LABELS))[pair_labels]
    scale = pairs.std(axis=0) + 1e-6
    scale[0] = 1.0
    xs = pairs / scale
    for _ in range(steps):
        g = xs.T @ (_softmax(xs @ wp.T) - y) / len(xs)
        g[1:] += l2 * wp.T[1:]
        wp -= 0.5 * g.T
    wj = np.zeros(singles.shape[1])
    sj = singles.std(axis=0) + 1e-6
    sj[0] = 1.0
    xj = singles / sj
    for _ in range(steps):
        g = xj.T @ (_sigmoid(xj @ wj) - junk_labels) / len(xj)
        g[1:] += l2 * wj[1:]
        wj -= 0.5 * g
    return Weights(pair=wp / scale, junk=wj / sj)


def save_weights(w: Weights) -> str:
    return json.dumps({"pair_features": list(PAIR_FEATURES), "labels": list(LABELS),
                       "pair": np.round(w.pair, 5).tolist(),
                       "junk_features": list(JUNK_FEATURES),
                       "junk": np.round(w.junk, 5).tolist()}, indent=1)


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
            JUNK_FEATURES):
        raise ValueError(f"{WEIGHTS_FILE} was fitted for other features; refit it "
                         "(memstream bench changes --fit)")
    return Weights(pair=np.array(raw["pair"], dtype=np.float64),
                   junk=np.array(raw["junk"], dtype=np.float64))
