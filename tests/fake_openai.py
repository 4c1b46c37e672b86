"""A scripted OpenAI-compatible chat server on 127.0.0.1, for testing the `openai` policy offline.

It answers ``/v1/models`` and ``/v1/chat/completions``. For each request it finds the task by its
first user message, counts user messages to know the turn, and replies with that turn's
ground-truth calls as ``tool_calls`` (then a text reply once tool results came back). Tasks
listed in ``malformed`` get broken JSON arguments instead.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from envs.policies import keyword_arguments
from envs.task import Task


class LoopbackServer:
    """An HTTP server on a free 127.0.0.1 port, served from a thread while the ``with`` block runs."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


class FakeOpenAI(LoopbackServer):
    def __init__(self, tasks: list[Task], malformed: set[str] = frozenset()):
        self.by_first_message = {t.turns[0][0].content: t for t in tasks}
        self.malformed = set(malformed)
        self.requests: list[dict] = []
        super().__init__(self._handler())

    def reply(self, body: dict) -> dict:
        self.requests.append(body)
        messages = body["messages"]
        task = self.by_first_message[next(m["content"] for m in messages if m["role"] == "user")]
        turn = sum(m["role"] == "user" for m in messages) - 1
        message: dict = {"role": "assistant", "content": "Done."}
        if messages[-1]["role"] == "user" and task.ground_truth[turn]:
            calls = []
            for i, call in enumerate(task.ground_truth[turn]):
                name, args = keyword_arguments(task, call)
                arguments = '{"broken": ' if task.id in self.malformed else json.dumps(args)
                calls.append({"id": f"call_{turn}_{i}", "type": "function",
                              "function": {"name": name, "arguments": arguments}})
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _send(self, obj: dict, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "test"}]})
                else:
                    self._send({"error": "not found"}, 404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._send(fake.reply(body))

        return Handler
