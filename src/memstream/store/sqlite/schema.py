"""The SQLite schema and its migrations. ``SCHEMA_VERSION`` is saved in the ``meta`` table."""

from __future__ import annotations

from ..parts.lg_tables import schema

SCHEMA_VERSION = 10
GRAPH_VERSION = 9  #: the migration that makes the entity graph

COLUMNS = (
    "id", "namespace", "text", "kind", "data", "user_id", "agent_id", "run_id", "step",
    "importance", "created_at", "updated_at", "last_accessed_at", "access_count", "provenance",
    "invalidated_at", "superseded_by", "metadata", "space",
)

MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    text TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT,
    user_id TEXT,
    agent_id TEXT,
    run_id TEXT,
    step INTEGER,
    importance REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL,
    last_accessed_at REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    provenance TEXT NOT NULL DEFAULT '[]',
    invalidated_at REAL,
    superseded_by TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    embedding BLOB,
    embed_model TEXT,
    needs_embedding INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX records_ns_created ON records(namespace, created_at, id);
CREATE INDEX records_ns_agent_step ON records(namespace, agent_id, step);
CREATE INDEX records_ns_user ON records(namespace, user_id, created_at);
CREATE INDEX records_ns_run ON records(namespace, run_id, created_at);
CREATE INDEX records_ns_kind ON records(namespace, kind, created_at);
CREATE INDEX records_pending ON records(needs_embedding, rowid) WHERE needs_embedding = 1;

CREATE VIRTUAL TABLE records_fts USING fts5(
    text, content='records', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER records_fts_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER records_fts_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER records_fts_au AFTER UPDATE OF text ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO records_fts(rowid, text) VALUES (new.rowid, new.text);
END;

-- op: 0 removed, 1 valid vector, 2 vector of an invalidated record (see store/parts/vectors.py)
CREATE TABLE vector_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    rid INTEGER NOT NULL,
    op INTEGER NOT NULL
);
CREATE TRIGGER records_vec_ai AFTER INSERT ON records WHEN new.embedding IS NOT NULL BEGIN
    INSERT INTO vector_log(namespace, rid, op)
    VALUES (new.namespace, new.rowid, CASE WHEN new.invalidated_at IS NULL THEN 1 ELSE 2 END);
END;
CREATE TRIGGER records_vec_au AFTER UPDATE OF embedding, invalidated_at ON records BEGIN
    INSERT INTO vector_log(namespace, rid, op) VALUES (new.namespace, new.rowid,
        CASE WHEN new.embedding IS NULL THEN 0 WHEN new.invalidated_at IS NULL THEN 1 ELSE 2 END);
END;
CREATE TRIGGER records_vec_ad AFTER DELETE ON records WHEN old.embedding IS NOT NULL BEGIN
    INSERT INTO vector_log(namespace, rid, op) VALUES (old.namespace, old.rowid, 0);
END;

CREATE TABLE history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    record_id TEXT NOT NULL,
    event TEXT NOT NULL,
    at REAL NOT NULL,
    old TEXT,
    new TEXT
);
CREATE INDEX history_record ON history(namespace, record_id, seq);

CREATE TABLE embedding_cache (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
""",
    2: """
ALTER TABLE records ADD COLUMN needs_rating INTEGER NOT NULL DEFAULT 0;
CREATE INDEX records_rating ON records(needs_rating, rowid) WHERE needs_rating = 1;
""",
    3: """
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    name TEXT NOT NULL,
    namespaces TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
);
""",
    # Records without a user or run (agent states, most bulk data) skip those two indexes:
    # a query for `user_id = ?` implies `user_id IS NOT NULL`, so SQLite still uses them.
    4: """
DROP INDEX records_ns_user;
DROP INDEX records_ns_run;
CREATE INDEX records_ns_user ON records(namespace, user_id, created_at)
    WHERE user_id IS NOT NULL;
CREATE INDEX records_ns_run ON records(namespace, run_id, created_at)
    WHERE run_id IS NOT NULL;
""",
    # embedding work claimed by one worker at a time (see Store.pending_embeddings)
    5: """
ALTER TABLE records ADD COLUMN embed_owner TEXT;
ALTER TABLE records ADD COLUMN embed_until REAL;
""",
    # add's duplicate check (Store.insert(refresh=True)): records without a step, by the head
    # of their text (the full text is compared on the few rows the head finds)
    6: """
CREATE INDEX records_ns_head ON records(namespace, substr(text, 1, 64)) WHERE step IS NULL;
""",
    # the change-event outbox and webhooks (store/parts/events.py)
    7: """
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    type TEXT NOT NULL,
    record_ids TEXT NOT NULL,
    kind TEXT,
    user_id TEXT,
    agent_id TEXT,
    run_id TEXT,
    at REAL NOT NULL,
    data TEXT
);
CREATE INDEX events_ns ON events(namespace, seq);
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    types TEXT,
    created_at REAL NOT NULL,
    cursor INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL DEFAULT 0,
    last_error TEXT,
    delivered INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until REAL NOT NULL DEFAULT 0
);
CREATE TABLE webhook_dead (
    webhook_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    error TEXT,
    PRIMARY KEY (webhook_id, seq)
) WITHOUT ROWID;
""",
    # vector spaces: a record's vectors belong to a named space ("" is the text embedder's);
    # the change log of the vector indexes is kept per namespace and space; the agents' tiers,
    # which kept their field-hashed states in a namespace "<ns>.agents", move into <ns> itself
    # under the space "agents"; the stream index leads with the space, so that a namespace's
    # text memories are found without walking its agents' states
    8: """
ALTER TABLE records ADD COLUMN space TEXT NOT NULL DEFAULT '';
DROP TRIGGER records_vec_ai;
DROP TRIGGER records_vec_au;
DROP TRIGGER records_vec_ad;
CREATE TRIGGER records_vec_ai AFTER INSERT ON records WHEN new.embedding IS NOT NULL BEGIN
    INSERT INTO vector_log(namespace, rid, op)
    VALUES (CASE WHEN new.space = '' THEN new.namespace
                 ELSE new.namespace || char(31) || new.space END,
            new.rowid, CASE WHEN new.invalidated_at IS NULL THEN 1 ELSE 2 END);
END;
CREATE TRIGGER records_vec_au AFTER UPDATE OF embedding, invalidated_at ON records BEGIN
    INSERT INTO vector_log(namespace, rid, op)
    VALUES (CASE WHEN new.space = '' THEN new.namespace
                 ELSE new.namespace || char(31) || new.space END, new.rowid,
        CASE WHEN new.embedding IS NULL THEN 0 WHEN new.invalidated_at IS NULL THEN 1 ELSE 2 END);
END;
CREATE TRIGGER records_vec_ad AFTER DELETE ON records WHEN old.embedding IS NOT NULL BEGIN
    INSERT INTO vector_log(namespace, rid, op)
    VALUES (CASE WHEN old.space = '' THEN old.namespace
                 ELSE old.namespace || char(31) || old.space END, old.rowid, 0);
END;
DROP INDEX records_ns_created;
CREATE INDEX records_ns_created ON records(namespace, space, created_at, id);
UPDATE records SET namespace = substr(namespace, 1, length(namespace) - 7), space = 'agents'
    WHERE namespace LIKE '%.agents' AND embed_model LIKE 'memstream-state-hash-%';
UPDATE history SET namespace = substr(namespace, 1, length(namespace) - 7)
    WHERE namespace LIKE '%.agents'
    AND record_id IN (SELECT id FROM records WHERE space = 'agents');
""",
    # the entity graph (store/parts/graph.py): the named things records mention, per namespace and
    # owner (user_id, '' for none), and which records mention them; the records written
    # before it are linked when the migration runs (SQLiteStore._migrate); and LangGraph's
    # checkpoint tables (store/parts/lg_tables.py), which a checkpointer made before when it first
    # ran
    9: """
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    mentions INTEGER NOT NULL DEFAULT 0,
    strong INTEGER NOT NULL DEFAULT 0,
    first_seen REAL,
    last_seen REAL,
    UNIQUE (namespace, owner, key)
);
CREATE TABLE entity_mentions (
    entity_id INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    at REAL NOT NULL,
    strong INTEGER NOT NULL,
    PRIMARY KEY (entity_id, at, record_id)
) WITHOUT ROWID;
CREATE INDEX entity_mentions_record ON entity_mentions(record_id, namespace);
CREATE TABLE entity_relations (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    owner TEXT NOT NULL,
    subject_key TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object_key TEXT NOT NULL,
    object TEXT NOT NULL,
    record_id TEXT NOT NULL,
    valid_from REAL NOT NULL,
    valid_to REAL
);
CREATE INDEX entity_relations_subject
    ON entity_relations(namespace, owner, subject_key, predicate, valid_from);
CREATE INDEX entity_relations_record ON entity_relations(record_id);
""" + "".join(f"{statement};\n" for statement in schema("BLOB")),
    # the entities whose kind the words left open, for the worker to read from the embedder
    # (cognition/kinds.py); the condition is the graph part's ``_UNREAD_WHERE``
    10: """
CREATE INDEX entities_unread ON entities(id) WHERE kind IN ('name', 'thing') AND strong > 0;
""",
}
