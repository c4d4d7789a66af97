"""What an agent should know before a task: ranked advice, and its compact prompt rendering.

Each candidate's rank = its relevance to the task + its confidence + its recency (decay **
hours since last access, in [0, 1]). Relevance is the calibrated cosine similarity when vectors
exist (so that a few near-identical candidates are not stretched apart by min-max and
confidence can decide between them), else the engine's normalised keyword relevance.
Confidence is a heuristic's effective (decayed) confidence, a fact's or preference's stored
confidence, 1 - 0.5 ** occurrences for an anti-pattern (0.75
after 2 failures), and 0.5 for a plain outcome.

One piece of advice never says both "do" and "avoid" of one strategy: when a heuristic and an
anti-pattern of the same task type name similar strategies (``Learner.similar``), the evidence
decides. A heuristic that succeeded in more than half of its attempts is kept and the
anti-pattern left out; otherwise the anti-pattern is kept and the heuristic left out.
"Recent attempts" are the outcomes that fit the task, newest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._types import Hit
from ..embed.protocol import calibrated_similarity
from .models import AntiPattern, DomainKnowledge, Heuristic, Outcome, UserPreference

if TYPE_CHECKING:
    from .learner import Learner

__all__ = ["LearnedContext", "retrieve"]

_MODELS: dict[str, Any] = {"heuristic": Heuristic, "anti_pattern": AntiPattern,
                           "outcome": Outcome, "fact": DomainKnowledge,
                           "preference": UserPreference}


@dataclass
class LearnedContext:
    """The advice for one task, each list best first."""

    heuristics: list[Heuristic] = field(default_factory=list)
    anti_patterns: list[AntiPattern] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    preferences: list[UserPreference] = field(default_factory=list)
    knowledge: list[DomainKnowledge] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)

    def to_prompt(self, *, max_per_section: int = 3) -> str:
        """A compact block for a prompt ("" when there is nothing)."""
        n = max_per_section
        parts: list[str] = []
        if self.heuristics:
            parts.append("What has worked:")
            parts += [f"- {h.strategy} ({h.condition}; confidence {h.confidence:.2f}, "
                      f"{h.success_count}/{h.occurrence_count})" for h in self.heuristics[:n]]
        if self.anti_patterns:
            parts.append("What to avoid:")
            parts += [f"- {a.pattern}: fails with {a.why_bad}"
                      + (f"; instead: {a.better_alternative}" if a.better_alternative else "")
                      for a in self.anti_patterns[:n]]
        if self.knowledge:
            parts.append("Known facts:")
            parts += [f"- {k.domain}: {k.fact}" for k in self.knowledge[:n]]
        if self.preferences:
            parts.append("User preferences:")
            parts += [f"- {p.category}: {p.preference}" for p in self.preferences[:n]]
        if self.outcomes:
            parts.append("Recent attempts:")
            parts += [f"- {'succeeded' if o.success else 'failed'} with {o.strategy_used}"
                      + (f" ({o.error_message})" if o.error_message else "")
                      for o in self.outcomes[:n]]
        return "\n".join(parts)


def _confidence(learner: Learner, item: Any) -> float:
    if isinstance(item, Heuristic):
        return learner.effective_confidence(item)
    if isinstance(item, AntiPattern):
        return 1.0 - 0.5 ** max(1, item.occurrence_count)
    if isinstance(item, DomainKnowledge | UserPreference):
        return float(item.confidence)
    return 0.5


def _ranked(learner: Learner, hits: list[Hit], out: LearnedContext) -> list[Any]:
    scored = []
    for hit in hits:
        model = _MODELS[hit.record.kind].from_record(hit.record.id, hit.record.data or {})
        e = hit.explain
        relevance = e.relevance if e.cosine is None else \
            calibrated_similarity(e.cosine, learner.memory.embedder)
        score = relevance + _confidence(learner, model) + e.raw_recency
        out.scores[hit.record.id] = score
        scored.append((score, hit.record.created_at, hit.record.id, model))
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [s[3] for s in scored]


def _consistent(learner: Learner, agents: list[str], heuristics: list[Heuristic],
                anti_patterns: list[AntiPattern]) -> tuple[list[Heuristic], list[AntiPattern]]:
    """The heuristics and anti-patterns without a strategy advised and warned against at once
    (the module rule: the heuristic's success rate decides). Each side is checked against
    everything stored for these agents, not only what the search found."""
    stored_h = [h for a in agents for h in learner.heuristics(a)]
    stored_a = [x for a in agents for x in learner.anti_patterns(a)]

    def works(strategy: str, task_type: str) -> bool | None:
        """Whether the evidence advises the strategy (None: no heuristic for it)."""
        rates = [h.success_rate for h in stored_h
                 if h.task_type == task_type and learner.similar(h.strategy, strategy)]
        return max(rates) > 0.5 if rates else None

    def warned(h: Heuristic) -> bool:
        return any(x.task_type == h.task_type and learner.similar(h.strategy, x.pattern)
                   for x in stored_a)

    advised = [h for h in heuristics if not (warned(h) and not works(h.strategy, h.task_type))]
    return advised, [x for x in anti_patterns if not works(x.pattern, x.task_type)]


def retrieve(learner: Learner, task: str, agent: str, user_id: str | None = None,
             top_k: int = 5, project_id: str | None = None) -> LearnedContext:
    """The heuristics, anti-patterns, outcomes, knowledge (of the agents this one may read)
    and the user's preferences that fit a task, top_k of each."""
    out = LearnedContext()
    filters: dict[str, Any] = {"metadata.source": "learning",
                               "agent": {"in": learner.readable_agents(agent)}}
    if project_id is not None:
        filters["project_id"] = project_id
    pool = max(20, 4 * top_k)
    ranked: dict[str, list[Any]] = {}
    for kind in ("heuristic", "anti_pattern", "outcome", "fact"):  # one search per kind: many
        hits = learner.memory.search(task, k=pool, namespace=learner.namespace, kinds=kind,
                                     filters=filters, touch=False)  # outcomes never crowd out
        ranked[kind] = _ranked(learner, hits, out)  # the rarer heuristics
    heuristics, anti_patterns = _consistent(learner, learner.readable_agents(agent),
                                            ranked["heuristic"], ranked["anti_pattern"])
    out.heuristics = heuristics[:top_k]
    out.anti_patterns = anti_patterns[:top_k]
    out.outcomes = sorted(ranked["outcome"], key=lambda o: o.timestamp, reverse=True)[:top_k]
    out.knowledge = ranked["fact"][:top_k]
    if user_id is not None:
        prefs = learner.memory.search(task, k=pool, namespace=learner.namespace,
                                      kinds="preference", user_id=user_id,
                                      filters={"metadata.source": "learning"}, touch=False)
        out.preferences = _ranked(learner, prefs, out)[:top_k]
        if not out.preferences:  # preferences apply whatever the task's words
            rows = learner.memory.get_all(namespace=learner.namespace, user_id=user_id,
                                          kinds="preference", filters={"metadata.source":
                                                                       "learning"},
                                          order="-created", limit=top_k)
            out.preferences = [UserPreference.from_record(r.id, r.data or {}) for r in rows]
    return out
