"""The PostgreSQL schema and its migrations. ``SCHEMA_VERSION`` is saved in the ``meta`` table;
migrations run in one transaction under an advisory lock, so servers starting together apply
each one once.

Vectors live in one ``vector`` column of any dimension; each dimension in use gets its own
partial HNSW index (cosine) on ``embedding::vector(d)``, made the first time an embedding of
that size is stored (``vector_index_sql``).
"""

from __future__ import annotations

from ..parts.lg_tables import schema

SCHEMA_VERSION = 7
GRAPH_VERSION = 6  #: the migration that makes the entity graph
LOCK_ID = 0x6D656D73  # "mems": the advisory lock migrations take
EVENTS_LOCK = 0x6D657674  # "mevt": taken before numbering events (commit order)

COLUMNS = (
    "id", "namespace", "text", "kind", "data", "user_id", "agent_id", "run_id", "step",
    "importance", "created_at", "updated_at", "last_accessed_at", "access_count", "provenance",
    "invalidated_at", "superseded_by", "metadata", "space",
)

MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE records (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text COLLATE "C" PRIMARY KEY,
            namespace text COLLATE "C" NOT NULL,
            text text NOT NULL,
            kind text COLLATE "C" NOT NULL,
            data jsonb,
            user_id text COLLATE "C",
            agent_id text COLLATE "C",
            run_id text COLLATE "C",
            step bigint,
            importance double precision NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision,
            last_accessed_at double precision NOT NULL,
            access_count integer NOT NULL DEFAULT 0,
            provenance text[] NOT NULL DEFAULT '{}',
            invalidated_at double precision,
            superseded_by text,
            metadata jsonb NOT NULL DEFAULT '{}',
            embedding vector,
            embed_model text,
            needs_embedding boolean NOT NULL DEFAULT true,
            needs_rating boolean NOT NULL DEFAULT false,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
        )""",
        "CREATE INDEX records_ns_created ON records(namespace, created_at, id)",
        "CREATE INDEX records_ns_agent_step ON records(namespace, agent_id, step)",
        "CREATE INDEX records_ns_user ON records(namespace, user_id, created_at)",
        "CREATE INDEX records_ns_kind ON records(namespace, kind, created_at)",
        "CREATE INDEX records_tsv ON records USING gin(tsv)",
        "CREATE INDEX records_pending ON records(seq) WHERE needs_embedding",
        "CREATE INDEX records_rating ON records(seq) WHERE needs_rating",
        """CREATE TABLE history (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            namespace text COLLATE "C" NOT NULL,
            record_id text COLLATE "C" NOT NULL,
            event text NOT NULL,
            at double precision NOT NULL,
            old jsonb,
            new jsonb
        )""",
        "CREATE INDEX history_record ON history(namespace, record_id, seq)",
        """CREATE TABLE embedding_cache (
            model text NOT NULL, hash text NOT NULL, vector bytea NOT NULL,
            PRIMARY KEY (model, hash)
        )""",
        """CREATE TABLE api_keys (
            id text PRIMARY KEY, hash text NOT NULL, name text NOT NULL,
            namespaces text[] NOT NULL, role text NOT NULL,
            created_at double precision NOT NULL, revoked_at double precision
        )""",
    ],
    # embedding work claimed by one worker at a time (see Store.pending_embeddings)
    2: [
        "ALTER TABLE records ADD COLUMN embed_owner text",
        "ALTER TABLE records ADD COLUMN embed_until double precision",
    ],
    # add's duplicate check (Store.insert(refresh=True)): records without a step, by a hash
    # of their text
    3: [
        "CREATE INDEX records_ns_text ON records(namespace, md5(text)) WHERE step IS NULL",
    ],
    # the change-event outbox and webhooks (store/parts/events.py)
    4: [
        """CREATE TABLE events (
            seq bigserial PRIMARY KEY,
            namespace text NOT NULL,
            type text NOT NULL,
            record_ids text NOT NULL,
            kind text,
            user_id text,
            agent_id text,
            run_id text,
            at double precision NOT NULL,
            data text
        )""",
        "CREATE INDEX events_ns ON events(namespace, seq)",
        """CREATE TABLE webhooks (
            id text PRIMARY KEY,
            namespace text NOT NULL,
            url text NOT NULL,
            secret text NOT NULL,
            types text,
            created_at double precision NOT NULL,
            cursor bigint NOT NULL,
            attempts integer NOT NULL DEFAULT 0,
            next_at double precision NOT NULL DEFAULT 0,
            last_error text,
            delivered bigint NOT NULL DEFAULT 0,
            owner text,
            lease_until double precision NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE webhook_dead (
            webhook_id text NOT NULL,
            seq bigint NOT NULL,
            at double precision NOT NULL,
            error text,
            PRIMARY KEY (webhook_id, seq)
        )""",
    ],
    # vector spaces (see the SQLite store's migration 8): the stream index leads with the
    # space; the agents' tiers move from "<ns>.agents" into <ns>, under the space "agents"
    5: [
        "ALTER TABLE records ADD COLUMN space text COLLATE \"C\" NOT NULL DEFAULT ''",
        "DROP INDEX records_ns_created",
        "CREATE INDEX records_ns_created ON records(namespace, space, created_at, id)",
        """UPDATE records SET namespace = left(namespace, -7), space = 'agents'
           WHERE namespace LIKE '%.agents' AND embed_model LIKE 'memstream-state-hash-%'""",
        """UPDATE history SET namespace = left(namespace, -7)
           WHERE namespace LIKE '%.agents'
           AND record_id IN (SELECT id FROM records WHERE space = 'agents')""",
    ],
    # the entity graph and the checkpoint tables (see the SQLite store's migration 9)
    6: [
        """CREATE TABLE entities (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            namespace text COLLATE "C" NOT NULL,
            owner text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            name text NOT NULL,
            kind text NOT NULL,
            mentions integer NOT NULL DEFAULT 0,
            strong integer NOT NULL DEFAULT 0,
            first_seen double precision,
            last_seen double precision,
            UNIQUE (namespace, owner, key)
        )""",
        """CREATE TABLE entity_mentions (
            entity_id bigint NOT NULL,
            record_id text COLLATE "C" NOT NULL,
            namespace text COLLATE "C" NOT NULL,
            at double precision NOT NULL,
            strong integer NOT NULL,
            PRIMARY KEY (entity_id, at, record_id)
        )""",
        "CREATE INDEX entity_mentions_record ON entity_mentions(record_id, namespace)",
        """CREATE TABLE entity_relations (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            namespace text COLLATE "C" NOT NULL,
            owner text COLLATE "C" NOT NULL,
            subject_key text COLLATE "C" NOT NULL,
            subject text NOT NULL,
            predicate text COLLATE "C" NOT NULL,
            object_key text COLLATE "C" NOT NULL,
            object text NOT NULL,
            record_id text COLLATE "C" NOT NULL,
            valid_from double precision NOT NULL,
            valid_to double precision
        )""",
        "CREATE INDEX entity_relations_subject ON entity_relations(namespace, owner, "
        "subject_key, predicate, valid_from)",
        "CREATE INDEX entity_relations_record ON entity_relations(record_id)",
        *schema("BYTEA"),  # LangGraph's checkpoint tables (see the SQLite migration 9)
    ],
    # the entities whose kind the words left open (see the SQLite migration 10)
    7: ["CREATE INDEX entities_unread ON entities(id) WHERE kind IN ('name', 'thing') "
        "AND strong > 0"],
}


def vector_index_sql(dim: int) -> str:
    """The HNSW index for embeddings of ``dim`` dimensions (cosine distance)."""
    return (f"CREATE INDEX IF NOT EXISTS records_vec_{dim} ON records USING hnsw "
            f"((embedding::vector({dim})) vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
            f"WHERE vector_dims(embedding) = {dim}")
