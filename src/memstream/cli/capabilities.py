"""Commands of the capabilities: learn, heuristics, forget, episodes."""

from __future__ import annotations

from typing import Any

import click

from ..engine.memory import Memory
from ._base import (
    _emit,
    _json_arg,
    _short,
    _State,
    _stdin_text,
    _table,
    cli,
)


@cli.command()
@click.option("--agent", required=True)
@click.option("--project", "project_id", required=True)
@click.option("--task", required=True, help="What the agent was asked to do.")
@click.option("--success/--failure", "outcome", required=True, help="The outcome.")
@click.option("--strategy-used", "--strategy", "strategy_used", required=True,
              help="What the agent did.")
@click.option("--task-type", help="Default: inferred from the task.")
@click.option("--error", "error_message")
@click.option("--feedback")
@click.option("--duration-ms", type=int)
@click.pass_obj
def learn(st: _State, agent: str, project_id: str, task: str, outcome: bool, strategy_used: str,
          task_type: str | None, error_message: str | None, feedback: str | None,
          duration_ms: int | None) -> None:
    """Record how an attempt went; heuristics and anti-patterns follow from repeats."""
    from ..learning import Learner

    with st.memory(create=True) as mem:
        out = Learner(mem).learn(agent, project_id, task, outcome, strategy_used,
                                 task_type=task_type, duration_ms=duration_ms,
                                 error_message=error_message, feedback=feedback)
    _emit({"id": out.id, **out.payload()}) if st.as_json else click.echo(out.id)


@cli.command()
@click.option("--agent")
@click.option("--project", "project_id")
@click.pass_obj
def heuristics(st: _State, agent: str | None, project_id: str | None) -> None:
    """List learned heuristics with their (decayed) confidence."""
    from ..learning import Learner

    with st.memory() as mem:
        learner = Learner(mem)
        rows = [(h, learner.effective_confidence(h)) for h in learner.heuristics(agent, project_id)]
    if st.as_json:
        _emit([{"id": h.id, **h.payload(), "effective_confidence": c} for h, c in rows])
    else:
        click.echo(_table(["confidence", "now", "seen", "agent", "condition", "strategy"], [
            [f"{h.confidence:.2f}", f"{c:.2f}", f"{h.success_count}/{h.occurrence_count}",
             h.agent, h.condition, _short(h.strategy, 50)] for h, c in rows]))


@cli.command()
@click.option("--project", "project_id", required=True)
@click.option("--agent")
@click.option("--older-than-days", default=90.0, show_default=True)
@click.option("--below-confidence", default=0.3, show_default=True)
@click.pass_obj
def forget(st: _State, project_id: str, agent: str | None, older_than_days: float,
           below_confidence: float) -> None:
    """Delete old outcomes and weak heuristics of a project."""
    from ..learning import Learner

    with st.memory() as mem:
        n = Learner(mem).forget(project_id, agent=agent, older_than_days=older_than_days,
                                below_confidence=below_confidence)
    _emit({"forgotten": n}) if st.as_json else click.echo(f"forgot {n} records")


@cli.group()
@click.option("--agent", "agent_id", default="default", show_default=True,
              help="Whose episodes.")
@click.pass_obj
def episodes(st: _State, agent_id: str) -> None:
    """Cross-episode memory for training loops."""
    st.agent_id = agent_id


def _episodes(st: _State, mem: Memory) -> Any:
    from ..episodes import EpisodeMemory

    return EpisodeMemory(mem, agent_id=st.agent_id)


@episodes.command("record")
@click.option("--episode", help="The whole episode as one JSON object, as REST and MCP take it "
              "('-': read it from standard input); the other options build one instead.")
@click.option("--task", "task_id", default="unknown", show_default=True)
@click.option("--score", type=float, help="In [0, 1] (required without --episode).")
@click.option("--steps", type=int, default=0)
@click.option("--summary", default="", help="One or two sentences on what happened.")
@click.option("--mistake", "mistakes", multiple=True, help="Repeatable.")
@click.option("--success", "successes", multiple=True, help="Repeatable.")
@click.option("--card", "cards", multiple=True, help="A mistake card as JSON; repeatable.")
@click.pass_obj
def episodes_record(st: _State, episode: str | None, task_id: str, score: float | None,
                    steps: int, summary: str, mistakes: tuple[str, ...],
                    successes: tuple[str, ...], cards: tuple[str, ...]) -> None:
    """Record a finished episode."""
    if episode is not None:
        raw = _stdin_text("episode", "episodes record --episode") if episode == "-" else episode
        report = _json_arg(raw, "episode")
    elif score is None:
        raise click.UsageError("give --score (or the whole episode with --episode)")
    else:
        report = {"task_id": task_id, "score": score, "steps": steps,
                  "trajectory_summary": summary, "mistakes": list(mistakes),
                  "successes": list(successes),
                  "mistake_cards": [_json_arg(c, "card") for c in cards]}
    with st.memory(create=True) as mem:
        rec = _episodes(st, mem).record(report)
    _emit(rec.to_dict()) if st.as_json else click.echo(rec.id)


@episodes.command("context")
@click.option("--task", "task_id")
@click.option("--max-rules", default=5, show_default=True)
@click.option("--max-recent", default=3, show_default=True)
@click.option("--budget", "--max-tokens", "budget", type=int,
              help="An exact limit in cl100k_base tokens.")
@click.pass_obj
def episodes_context(st: _State, task_id: str | None, max_rules: int, max_recent: int,
                     budget: int | None) -> None:
    """Print the context block for the system prompt."""
    with st.memory() as mem:
        text = _episodes(st, mem).context(task_id, max_rules, max_recent, budget=budget)
    _emit({"context": text}) if st.as_json else click.echo(text)


@episodes.command("summary")
@click.pass_obj
def episodes_summary(st: _State) -> None:
    """Totals, rules per task, top mistake cards, mean scores."""
    with st.memory() as mem:
        _emit(_episodes(st, mem).summary())


@episodes.command("consolidate")
@click.option("--force", is_flag=True, help="Run even when fewer than 20 episodes passed.")
@click.pass_obj
def episodes_consolidate(st: _State, force: bool) -> None:
    """Distil recent episodes into global rules (LLM if configured, else a heuristic)."""
    with st.memory() as mem:
        method = _episodes(st, mem).consolidate(force=force)
    click.echo(f"consolidated ({method})" if method else "not due yet")


@episodes.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.pass_obj
def episodes_import(st: _State, path: str) -> None:
    """Load a memory file in the JSON layout as the new base state."""
    from ..compat.episodes import load_agent_memory

    with st.memory(create=True) as mem:
        _episodes(st, mem).import_dict(load_agent_memory(path))
    click.echo(f"imported {path}")


@episodes.command("export")
@click.argument("path", type=click.Path(dir_okay=False))
@click.pass_obj
def episodes_export(st: _State, path: str) -> None:
    """Write the memory in the JSON layout (atomically)."""
    from ..compat.episodes import save_agent_memory

    with st.memory() as mem:
        save_agent_memory(_episodes(st, mem).export_dict(), path)
    click.echo(f"exported to {path}")


