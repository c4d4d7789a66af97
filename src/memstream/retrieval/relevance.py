"""Calibrated relevance: one number in [0, 1] that says how likely a record is to be relevant to
a query, on the same scale for every query and every store size.

Fusion and the learned stage only *order* candidates: a rank cannot say "unrelated", and
min-max over the candidates hands the least related one full marks. The calibrated relevance
rests first on evidence that means the same everywhere (the record's **absolute evidence**):

- ``dense``: how far the record's cosine stands above the query's cosines to the
  namespace's other records, in standard deviations: ``(cos - mean) / std`` of the query's
  cosines to a sample of the namespace's own records (``null.null_rows``: all of them up to
  256, else 256 drawn along its stream; while it holds fewer than 32 vectors, with
  ``BACKGROUND``, about a hundred varied sentences (background.txt), beside them). Raw
  cosines do not mean the same for every query (a vague question such as "what was I doing?"
  is close to everything), nor for every language and domain (notes in German, or on one
  subject, all stand far above English small talk), so the query's own null distribution in
  the records it searches sets the scale;
- ``keyword``: the share of the query's content words (``keywords.query_terms``) the record
  holds, each word weighted by its rarity among the candidates (a word every candidate has is
  no evidence), matched on a 5-letter prefix as a crude stemmer; read, like the vector, from
  the record's passage window (``embed.cache.passage``), so a long record does not hold most
  words merely by being long (with the namespace's own null, a further length scaling of the
  window cost BEAM dev 0.7009 -> 0.6826 recall_any@5 and the everyday suite nothing);
- ``question``: 1 when both the query and the record are questions (a stored question is
  worded like the query but answers nothing).

``absolute = bias + dense_w * dense + keyword_w * keyword + question_w * question`` (for a
record without a vector, a keyword-only search or one not embedded yet, a keyword-only form).
When the learned ranking stage ran (retrieval.rerank: the record's surroundings, its session,
who speaks), an ordering model gives a second logit from the stage's score and the same
evidence (fitted on the candidates of each question); it is relative to the search's
candidates, so it may only *lower* what the absolute evidence allows, up to a margin:
``logit = softmin(absolute + margin, ordering)``, where ``softmin(a, b) = -log(exp(-a) +
exp(-b))``. An unrelated record therefore stays unlikely whatever its rank, and among
plausible ones the learned stage decides.

``relevance = 1 / (1 + exp(-logit))``. It is monotone in each piece of evidence, the same
texts get the same relevance, and a single candidate is scored like any other. The weights
were fitted by logistic regression with each question's positives and negatives weighted
equally, then scaled (one slope and one offset) to the share of records that do answer, so
that 0.5 reads "as likely the answer as not"; the margin was chosen on the development splits
(docs/retrieval.md, "Calibrated relevance").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..embed.cache import passage
from .keywords import query_terms

__all__ = ["BACKGROUND", "CALIBRATION", "UNRELATED", "Calibration", "Evidence", "evidence",
           "is_question", "null_of", "settle", "sigmoid"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

#: texts of the null distribution (see the module docstring)
BACKGROUND: tuple[str, ...] = tuple(
    line for line in resources.files(__package__).joinpath("background.txt").read_text(
        encoding="utf-8").splitlines() if line.strip() and not line.startswith("#"))


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the calibration reads of one candidate (see the module docstring). ``dense`` is
    None for a record without a vector, ``learned`` None when the learned stage did not run."""

    dense: float | None
    keyword: float
    question: float
    learned: float | None = None


@dataclass(frozen=True, slots=True)
class Calibration:
    """The weights of the map from evidence to a relevance logit (see the module docstring)."""

    bias: float
    dense: float
    keyword: float
    question: float
    #: for a record without a vector
    keyword_bias: float
    keyword_only: float
    keyword_question: float
    #: the ordering model, where the learned stage ran
    learned_bias: float
    learned: float
    learned_dense: float
    learned_keyword: float
    learned_question: float
    margin: float

    def absolute(self, e: Evidence) -> float:
        if e.dense is None:
            return (self.keyword_bias + self.keyword_only * e.keyword
                    + self.keyword_question * e.question)
        return self.bias + self.dense * e.dense + self.keyword * e.keyword \
            + self.question * e.question

    def logit(self, e: Evidence) -> float:
        a = self.absolute(e)
        if e.learned is None:
            return a
        b = (self.learned_bias + self.learned * e.learned + self.learned_keyword * e.keyword
             + self.learned_dense * (e.dense or 0.0) + self.learned_question * e.question)
        return -_logaddexp(-(a + self.margin), -b)


def _logaddexp(a: float, b: float) -> float:
    hi = max(a, b)
    return hi + math.log1p(math.exp(min(a, b) - hi))


#: fitted on the development splits (docs/retrieval.md, "Calibrated relevance"): the absolute
#: part on the everyday suite's stores (each record of a store against each question of it;
#: leave-one-store-out figures beside), the keyword-only part on LoCoMo and BEAM, the ordering
#: model on LoCoMo's candidates (evidence against the other candidates of its question)
CALIBRATION = Calibration(
    bias=-5.204, dense=1.051, keyword=2.464, question=-1.639,
    keyword_bias=-1.544, keyword_only=9.48, keyword_question=-0.611,
    learned_bias=-2.748, learned=0.744, learned_dense=0.081, learned_keyword=0.388,
    learned_question=-0.383, margin=9.0)


#: below this logit (relevance 0.076) a record is unlikely to answer (on the everyday suite,
#: four in five of the first ten records that do not answer stand below it, three answers in
#: five above it); differences below it mean little: ``settle`` compresses them ten-fold,
#: so that among unrelated memories recency and importance decide
UNRELATED = -2.5


def settle(logit: float, floor: float = UNRELATED, slope: float = 0.1) -> float:
    """The logit, with differences below ``floor`` shrunk to ``slope`` (smoothly; monotone)."""
    t = logit - floor
    return floor + slope * t + (1.0 - slope) * (max(t, 0.0) + math.log1p(math.exp(-abs(t))))


def sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


def is_question(text: str) -> bool:
    return text.rstrip().endswith("?")


def _prefixes(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower())}


_WORD_END = r"(?![^\W_])"


def term_finder(terms: Sequence[str]) -> Callable[[str], set[str]]:
    """``lambda text: set(terms) & _prefixes(text)``, in one regular-expression scan: a term of
    5 characters starts a word, a shorter one is a whole word (as ``word[:5]`` compares). A term
    that is not one word (``o'clo``) is the prefix of no word."""
    terms = [t for t in terms if _WORD.fullmatch(t)]
    if not terms:
        return lambda text: set()
    alternatives = "|".join("(" + re.escape(t) + ("" if len(t) >= 5 else _WORD_END) + ")"
                            for t in terms)
    pattern = re.compile(r"(?<![^\W_])(?:" + alternatives + ")")
    return lambda text: {terms[m.lastindex - 1] for m in pattern.finditer(text.lower())
                         if m.lastindex is not None}


def null_of(background: np.ndarray, vector: np.ndarray) -> tuple[float, float]:
    """(mean, standard deviation) of the query's cosines to the background rows."""
    cos = background @ vector
    return float(cos.mean()), max(float(cos.std()), 1e-3)


def better_reading(cosine: Mapping[str, float], plain: Mapping[str, float],
                   null: tuple[float, float], plain_null: tuple[float, float]
                   ) -> dict[str, float]:
    """Each record's cosine to the query, or where its cosine to a second reading of the
    query (``plain``: without the people it names) stands more deviations above that
    reading's ``plain_null``, the cosine to the query that stands as far above ``null``."""
    (mean, std), (p_mean, p_std) = null, plain_null
    out = dict(cosine)
    for rid, cos in cosine.items():
        if rid in plain:
            out[rid] = mean + std * max((cos - mean) / std, (plain[rid] - p_mean) / p_std)
    return out


def evidence(query: str, texts: Mapping[str, str], cosine: Mapping[str, float],
             learned: Mapping[str, float], *, null: tuple[float, float]
             ) -> dict[str, Evidence]:
    """The evidence of each record of ``texts`` (id -> text) for ``query``; ``null`` is
    ``null_of`` the query's vector."""
    terms = list(dict.fromkeys(t[:5] for t in query_terms(query)))
    find = term_finder(terms)
    windows: dict[str, str] = {}
    held: dict[str, set[str]] = {}
    for rid, text in texts.items():
        lowered = text.lower()  # a text holding no term even as a substring holds no word
        if any(t in lowered for t in terms):  # of it: its window need not be read
            windows[rid] = passage(text)
            held[rid] = find(windows[rid])
        else:
            held[rid] = set()
    n = len(texts)
    # rarity among the candidates: log((n + 1) / (holders + 0.5)), at least 0.1
    weight = {t: max(0.1, math.log((n + 1) / (sum(t in h for h in held.values()) + 0.5)))
              for t in terms}
    total = sum(weight.values()) or 1.0
    asked = 1.0 if is_question(query) else 0.0
    mean, std = null
    out = {}
    for rid, text in texts.items():
        cos = cosine.get(rid)
        out[rid] = Evidence(
            dense=(cos - mean) / std if cos is not None else None,
            keyword=sum(weight[t] for t in terms if t in held[rid]) / total,
            question=asked if is_question(text) else 0.0, learned=learned.get(rid))
    return out
