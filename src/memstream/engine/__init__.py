"""The engine's search orchestration: what a search reads of the store, in which order, before
the pure functions of ``retrieval`` rank it (``search.run_search``)."""
