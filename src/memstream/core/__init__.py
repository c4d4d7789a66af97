"""The foundations every layer above stands on: ids, JSON, validation, clocks, tracing,
tokens, the routes' table, the names in a text and the delivery of webhooks. Nothing here is
imported by users: the package's root re-exports what they need."""
