"""The memory server: REST (FastAPI), MCP (streamable HTTP and stdio), keys, limits, metrics.

Needs the ``server`` extra: ``pip install 'memstream[server]'``.
"""
