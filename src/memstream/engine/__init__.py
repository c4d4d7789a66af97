"""The engine's parts that are not the facade: what a search reads of the store and in which
order (``search.run_search``, with the namespace's null: ``nulls``), the one way records leave
a memory (``deletions``), the entities of a scope (``entities``), how a write's arguments
become records (``building``), the cognitive operations (``cognitive``) and the background
worker (``worker``). ``retrieval`` ranks what they read."""
