"""The foundations every layer above stands on: ids, JSON, validation, clocks, tracing,
tokens, the routes' table and the names in a text. Nothing here is
imported by users: the package's root re-exports what they need."""
