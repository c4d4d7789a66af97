"""memstream inside the agent frameworks people build with: each integration is a module (or a
small package) here behind an extra named after its framework (``memstream[langgraph]``,
``memstream[openai-agents]``); see docs/integrations.md."""
