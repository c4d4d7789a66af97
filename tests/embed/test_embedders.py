from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from memstream import BackendUnavailable, EmbeddingError, InvalidInput, Memory
from memstream.embed.remote import OpenAIEmbedder


def test_real_model_ranks_by_meaning(e5):
    docs = e5.embed_documents(["The cat sleeps on the sofa.", "Stock markets fell sharply.",
                               "A kitten naps on the couch."])
    assert docs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    q = e5.embed_query("where is the kitty resting?")
    order = np.argsort(-(docs @ q))
    assert set(order[:2]) == {0, 2}


def test_stored_texts_go_to_the_engine_a_few_at_a_time_with_the_same_vectors(e5):
    """Small calls are faster (the activations stay in cache) and give the very same vectors
    as one large call."""
    texts = ["short note"] * 3 + ["x " * 300, "a second long text " * 20, "tail"]
    calls = e5._calls(texts)
    assert [len(c) for c in calls] == [3, 1, 2]  # about 512 characters, at least one text
    assert [t for c in calls for t in c] == texts
    default = e5.embed_documents(texts)
    e5.batch_chars = 1 << 20
    try:
        together = e5.embed_documents(texts)
    finally:
        e5.batch_chars = 512
    assert np.array_equal(default, together)


def test_background_queries_leave_every_query_handle_to_searches(e5):
    """The kinds of names are read as background work: with every query handle taken (two
    searches embedding), they are still embedded, on the stored texts' handles, and the
    vectors are the queries' own; the kinds read them that way."""
    from memstream.engine.kinds import name_vectors

    names = ["Netflix", "Zalando", "Corrigan Plumbing"]
    want = e5.embed_queries(names)
    taken = [e5._query_models.get() for _ in range(e5.query_workers)]
    got: list[np.ndarray] = []
    try:
        assert e5._query_models.empty()
        # in a thread: one that waited for a query handle would wait for ever
        reader = threading.Thread(target=lambda: got.append(name_vectors(e5, names)), daemon=True)
        reader.start()
        reader.join(timeout=60)
        assert got, "the kinds waited for a query handle"
        assert np.array_equal(got[0], want)
        assert np.array_equal(e5.embed_queries_in_background(names), want)
    finally:
        for model in taken:
            e5._query_models.put(model)


def test_semantic_search_finds_paraphrase(db_path: Path, e5):
    with Memory(db_path, embedder=e5) as mem:
        mem.add("My sister moved to Canada last spring.")
        mem.add("The printer on floor two is out of toner.")
        mem.add("I ordered a pepperoni pizza for dinner.")
        mem.flush()
        hits = mem.search("Which country does my sibling live in now?", weights="recall")
        assert hits[0].record.text.startswith("My sister")
        assert hits[0].explain.cosine is not None and hits[0].explain.vector_rank == 1


def test_background_embedding_resumes_after_restart(db_path: Path, e5):
    with Memory(db_path, embedder="none") as mem:  # written with no embedder: all pending
        mem.add_many([f"note {i} about the harbour" for i in range(10)])
        assert mem.stats()["embedded"] == 0
    with Memory(db_path, embedder=e5) as mem:
        mem.flush(timeout=120)
        assert mem.stats()["embedded"] == 10
        assert mem.store.queues.pending_embeddings(5) == []


def test_embedding_cache_by_content_hash(db_path: Path, e5):
    calls = []

    class Counting:
        name, dim = e5.name, e5.dim

        def embed_documents(self, texts):
            calls.append(len(texts))
            return e5.embed_documents(texts)

        def embed_query(self, text):
            return e5.embed_query(text)

    with Memory(db_path, embedder=Counting(), config=_sync()) as mem:
        mem.add("same text")
        mem.add("same text")
        mem.add_many(["same text", "other text", "other text"])
    assert calls == [1, 1]


def test_a_users_embedder_is_checked_and_scaled_to_unit_length(db_path: Path):
    """Vectors of any length are stored and searched as unit vectors (a model that does not
    normalise its output would otherwise rank long texts first); a wrong shape is refused.
    (Two records: fewer than the learned stage's minimum, so fusion alone decides.)"""

    class Unscaled:
        name, dim = "unscaled-test-1", 3

        def __init__(self, rows=None):
            self.rows = rows

        def embed_documents(self, texts):
            return self.rows if self.rows is not None else \
                [[10.0 * len(t), 1.0, 0.0] if "cat" in t else [0.0, 1.0, 0.0] for t in texts]

        def embed_query(self, text):
            return [1.0, 0.0, 0.0]

    with Memory(db_path, embedder=Unscaled(), config=_sync()) as mem:
        a = mem.add("a cat").id
        mem.add("a very long text about the weather and nothing else at all")
        emb = mem.store.indexes.embeddings(mem.config.namespace, [a])[a]
        assert np.isclose(np.linalg.norm(emb), 1.0)
        assert mem.search("cat", k=1, weights="recall")[0].record.id == a
    with Memory(tmp_path_db(db_path), embedder=Unscaled(rows=[[1.0, 2.0]]),
                config=_sync()) as mem, pytest.raises(EmbeddingError, match="shape"):
        mem.add("anything")


def tmp_path_db(path: Path) -> Path:
    return path.with_name("other-" + path.name)


def _sync():
    from memstream import Config

    return Config(embed_mode="sync")


class _Handler(BaseHTTPRequestHandler):
    mode = "ok"
    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"body": body, "auth": self.headers.get("Authorization")})
        if self.mode == "500":
            self.send_response(500)
            self.end_headers()
            return
        if self.mode == "401":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "bad key"}')
            return
        dim = 2 if self.mode == "wrong-dim" else 4
        data = []
        for i, text in enumerate(body["input"]):
            vec = [float(len(text)), 1.0, float(text.count("a")), 0.5][:dim]
            if self.mode == "nan":
                vec[0] = float("nan")
            data.append({"object": "embedding", "index": i, "embedding": vec})
        payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]})
        raw = payload.replace("NaN", "NaN").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.mode, _Handler.seen = "ok", []
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_remote_embedder_speaks_openai_protocol(server):
    emb = OpenAIEmbedder(base_url=server, model="m1", dim=4, api_key="k", retries=0)
    rows = emb.embed_documents(["a", "bbbb"])
    assert rows.shape == (2, 4)
    assert rows[1] == pytest.approx(np.array([4, 1, 0, 0.5]) / np.linalg.norm([4, 1, 0, 0.5]))
    assert _Handler.seen[0]["body"] == {"model": "m1", "input": ["a", "bbbb"]}
    assert _Handler.seen[0]["auth"] == "Bearer k"


@pytest.mark.parametrize(("mode", "error"), [("wrong-dim", EmbeddingError),
                                             ("nan", EmbeddingError),
                                             ("401", EmbeddingError),
                                             ("500", BackendUnavailable)])
def test_remote_embedder_errors(server, mode, error):
    _Handler.mode = mode
    emb = OpenAIEmbedder(base_url=server, model="m1", dim=4, retries=1)
    with pytest.raises(error):
        emb.embed_documents(["a"])


def test_remote_embedder_config_errors():
    with pytest.raises(InvalidInput):
        OpenAIEmbedder(base_url="ftp://x", model="m", dim=4)
    with pytest.raises(InvalidInput, match="embed_url"):
        Memory(":memory:", embedder="openai")


def test_memory_with_remote_embedder(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTREAM_EMBED_URL", server)
    monkeypatch.setenv("MEMSTREAM_EMBED_MODEL", "m1")
    monkeypatch.setenv("MEMSTREAM_EMBED_DIM", "4")
    with Memory(tmp_path / "r.db", embedder="openai") as mem:
        mem.add("banana")
        mem.flush(timeout=30)
        assert mem.stats()["embedded"] == 1


def test_a_remote_embedder_embeds_the_past_questions_once_per_store(server, tmp_path,
                                                                    monkeypatch):
    """The questions a search reads the past with (``retrieval.past``) go to a remote
    embedder in batches at a store's first search, and never again for that store."""
    from memstream.retrieval.past import EVENTS, NOW, PAST

    monkeypatch.setenv("MEMSTREAM_EMBED_URL", server)
    monkeypatch.setenv("MEMSTREAM_EMBED_MODEL", "m1")
    monkeypatch.setenv("MEMSTREAM_EMBED_DIM", "4")
    asked = set(PAST + NOW + EVENTS)

    def requests_for_questions() -> int:
        return sum(bool(asked.intersection(s["body"]["input"])) for s in _Handler.seen)

    with Memory(tmp_path / "r.db", embedder="openai") as mem:
        mem.add("banana bread with walnuts")
        mem.flush(timeout=30)
        _Handler.seen = []
        mem.search("What did I bake?")
        sent = [t for s in _Handler.seen for t in s["body"]["input"] if t in asked]
        assert sorted(sent) == sorted(asked)
        assert requests_for_questions() <= 2  # in batches, not one request a question
    _Handler.seen = []
    with Memory(tmp_path / "r.db", embedder="openai") as mem:
        mem.search("What did I bake?")
        assert requests_for_questions() == 0
