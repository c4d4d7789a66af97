"""The engine's parts that are not the facade: what a search reads of the store and in which
order (``search.run_search``, with the namespace's null: ``nulls``), and the one way records
leave a memory (``deletions``). ``retrieval`` ranks what they read."""
