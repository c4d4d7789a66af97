"""Small stand-ins for the benchmark datasets, in their upstream formats and places, so that
the documented fetch-and-run commands run in the tests: a LoCoMo file served over HTTP on
loopback and a BEAM git repository on disk (``chats/500K/<N>/``, questions in
``probing_questions/``)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FILLER = ["We watched a film about {}.", "The weather in {} was mild.", "I cooked {} for dinner.",
          "My sister visited {} last week.", "The train to {} was late again."]
PLACES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Accra", "Lima", "Hanoi", "Perth"]


def locomo(path: Path, conversations: int = 5, filler: int = 60) -> Path:
    """A LoCoMo file of small conversations: two answerable questions each, among ``filler``
    everyday turns (enough candidates for the learned ranking stage to run)."""
    data = []
    for n in range(conversations):
        data.append({
            "sample_id": f"tiny-{n}",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1",
                     "text": f"I adopted a puppy named Rex{n}."},
                    {"speaker": "Ben", "dia_id": "D1:2",
                     "text": "Nice! I bought a red bicycle."},
                ],
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": [
                    {"speaker": "Ann", "dia_id": "D2:1", "text": "Rex chewed my shoes today."},
                    *({"speaker": "Ben" if i % 2 else "Ann", "dia_id": f"D2:{i + 2}",
                       "text": FILLER[i % len(FILLER)].format(PLACES[(i + n) % len(PLACES)])}
                      for i in range(filler)),
                ],
            },
            "qa": [
                {"question": "What is the name of Ann's puppy?", "answer": f"Rex{n}",
                 "evidence": ["D1:1"], "category": 4},
                {"question": "What colour is Ben's bicycle?", "answer": "red",
                 "evidence": ["D1:2"], "category": 1},
            ],
        })
    path.write_text(json.dumps(data))
    return path


def beam_repo(root: Path, chats: range = range(1, 36)) -> Path:
    """A git repository laid out as BEAM's: ``chats/500K/<N>/chat.json`` and
    ``chats/500K/<N>/probing_questions/probing_questions.json``."""
    for n in chats:
        folder = root / "chats" / "500K" / str(n)
        (folder / "probing_questions").mkdir(parents=True)
        turns = [[{"role": "user", "id": "0", "content": f"My locker code for gym {n} is 4{n}1."},
                  {"role": "assistant", "id": "1", "content": "Noted."}],
                 [{"role": "user", "id": "2", "content": "I switched to the morning class."},
                  {"role": "assistant", "id": "3", "content": "Got it."}]]
        (folder / "chat.json").write_text(json.dumps(
            [{"batch_number": 1, "time_anchor": "March-01-2024", "turns": turns}]))
        (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps({
            "information_extraction": [{"question": "What is my locker code?",
                                        "source_chat_ids": "[0]"}]}))
    git = ["git", "-C", str(root), "-c", "user.name=tests", "-c", "user.email=tests@localhost"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "chats"], check=True)
    return root


@contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """A folder over HTTP on a loopback port; yields its base URL."""
    handler = partial(_Quiet, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
