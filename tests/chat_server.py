"""A small local HTTP server that speaks the OpenAI chat-completions protocol, for tests of
LLM-backed features (no hosted model is reachable from here). Set ``answers`` to what the
"model" replies, or ``mode`` to "slow", "500" or "401"."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    def __init__(self) -> None:
        self.answers: list[str] = []
        self.respond: Any = None  # optional: request body -> answer text
        self.mode = "ok"
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.url = ""


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "body": body,
                                   "auth": self.headers.get("Authorization")})
            if state.mode == "slow":
                time.sleep(state.delay)
            if state.mode in ("500", "401"):
                self.send_response(int(state.mode))
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "no"}}')
                return
            if state.respond is not None:
                content = state.respond(body)
            else:
                content = state.answers.pop(0) if state.answers else "[]"
            prompt = sum(len(m.get("content", "")) for m in body["messages"]) // 4 + 1
            completion = len(content) // 4 + 1
            usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                     "total_tokens": prompt + completion}  # about 4 characters a token
            payload = {
                "id": "chatcmpl-test", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": usage,
            }
            raw = json.dumps(payload).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
