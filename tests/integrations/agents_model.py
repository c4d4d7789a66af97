"""A model for the OpenAI Agents SDK that runs here, implemented through the SDK's own ``Model``
interface (no network): it answers from the conversation it is given, and calls a tool when
asked about the weather, so a run makes messages, tool calls and tool outputs."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from agents import Model, ModelResponse, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def _texts(items: list[Any]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append((item.get("role", ""), content))
        elif isinstance(content, list):
            out.append((item.get("role", ""), " ".join(str(p.get("text", "")) for p in content
                                                       if isinstance(p, dict))))
    return out


class RecallModel(Model):
    """Knows only what the input holds: the session's history plus this turn."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions, input, model_settings, tools,
                           output_schema, handoffs, tracing, *, previous_response_id=None,
                           conversation_id=None, prompt=None, **_: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        last = items[-1]
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            return self._say(f"The weather: {last['output']}")
        said = _texts(items)
        question = said[-1][1] if said else ""
        if "weather" in question and tools:
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{len(self.inputs)}", name="weather",
                arguments=json.dumps({"city": question.split()[-1].strip("?")}))
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        if "my name" in question:
            names = [m.group(1) for role, text in said if role == "user"
                     for m in [re.search(r"I am (\w+)", text)] if m]
            return self._say(f"You are {names[-1]}." if names else "I do not know.")
        return self._say("Noted.")

    def _say(self, text: str) -> ModelResponse:
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this test model does not stream")
