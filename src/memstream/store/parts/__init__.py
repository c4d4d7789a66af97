"""The parts both stores are made of, written once over a backend's SQL dialect: the records
(``records``), events and webhooks (``events``), settings and the embedding cache (``kv``),
the entity graph (``graph``), the work queues (``queues``), imports and exports
(``transfer``), the index protocol and in-memory vectors (``indexes``, ``vectors``), the
LangGraph checkpoint tables (``lg_tables``), the SQL both share (``common``) and what a part
needs of its host (``backend``, ``bundle``)."""
