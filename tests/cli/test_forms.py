"""The command line as a new user types it: options after the subcommand, standard input,
``python -m memstream``, a mistyped store path, and progress on a terminal and in a pipe."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXE = [sys.executable, "-m", "memstream"]


def ms(*args: str, stdin: str | None = None, cwd: Path | None = None
       ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMSTREAM_EMBEDDER": "none"}
    env.pop("MEMSTREAM_DB", None)
    return subprocess.run([*EXE, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


@pytest.mark.slow
def test_options_before_or_after_the_subcommand(tmp_path: Path):
    db = str(tmp_path / "x.db")
    first = ms("add", "The user likes green tea", "--db", db, "--user", "u")
    assert first.returncode == 0, first.stderr
    after = ms("search", "tea", "--json", "--db", db, "-n", "default")
    before = ms("--db", db, "--json", "search", "tea")
    assert after.returncode == before.returncode == 0, after.stderr
    assert json.loads(after.stdout)[0]["record"]["text"] == "The user likes green tea"
    assert [h["record"]["id"] for h in json.loads(after.stdout)] == \
        [h["record"]["id"] for h in json.loads(before.stdout)]
    assert ms("--db", db, "stats", "--namespace=default", "--json").returncode == 0
    # a nested command, with the group's option after it
    rec = ms("episodes", "--agent", "bob", "record", "--score", "0.9", "--summary", "ok",
             "--db", db)
    assert rec.returncode == 0, rec.stderr
    assert json.loads(ms("episodes", "--agent", "bob", "summary", "--json", "--db", db).stdout)
    # an option of the subcommand's own keeps its meaning: the key's namespaces, not the store's
    key = ms("keys", "create", "--name", "k1", "--namespace", "team-a", "--db", db, "--json")
    assert key.returncode == 0, key.stderr
    assert json.loads(key.stdout)["namespaces"] == ["team-a"]
    # text after -- is never taken for an option
    dash = ms("add", "--db", db, "--", "--json is my favourite flag")
    assert dash.returncode == 0, dash.stderr
    assert "--json is my favourite flag" in ms("list", "--db", db).stdout


def test_standard_input(tmp_path: Path):
    db = str(tmp_path / "s.db")
    one = ms("add", "-", "--db", db, stdin="The user likes tea\n")
    assert one.returncode == 0, one.stderr
    two = ms("add", "--db", db, "--user", "u", stdin="The user lives in Lisbon\n")
    assert two.returncode == 0, two.stderr
    many = ms("add", "--lines", "--db", db, stdin="line one\n\nline two\nline three\n")
    assert many.returncode == 0 and len(many.stdout.split()) == 3
    texts = [r["text"] for r in json.loads(ms("list", "--json", "--db", db).stdout)]
    assert texts == ["The user likes tea", "The user lives in Lisbon", "line one", "line two",
                     "line three"]
    assert "-" not in texts
    found = ms("search", "-", "--json", "--db", db, stdin="Lisbon")
    assert json.loads(found.stdout)[0]["record"]["text"] == "The user lives in Lisbon"
    empty = ms("add", "--lines", "--db", db, stdin="")
    assert empty.returncode == 2 and "empty" in empty.stderr


def test_a_missing_store_is_an_error_for_a_read(tmp_path: Path):
    typo = tmp_path / "typo.db"
    res = ms("--db", str(typo), "search", "tea")
    assert res.returncode == 3
    assert str(typo) in res.stderr and "--create" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not typo.exists()
    created = ms("--db", str(typo), "--create", "search", "tea")
    assert created.returncode == 0 and "no matching memories" in created.stdout
    assert typo.exists()
    fresh = tmp_path / "fresh.db"
    assert ms("add", "a write creates its store", "--db", str(fresh)).returncode == 0


def _records(path: Path, n: int) -> None:
    with path.open("w") as fp:
        for i in range(n):
            fp.write(json.dumps({"id": f"01HX{i:022d}", "namespace": "default",
                                 "text": f"record number {i}", "importance": 0.5,
                                 "created_at": 1_700_000_000 + i}) + "\n")


def test_import_progress_piped_is_lines(tmp_path: Path):
    big = tmp_path / "big.jsonl"
    _records(big, 1500)
    res = ms("--db", str(tmp_path / "p.db"), "import", str(big))
    assert res.returncode == 0, res.stderr
    assert "import: read 1500/1500 (100%)" in res.stderr
    assert "import: store 1500/1500 (100%)" in res.stderr
    assert re.search(r"imported 1500 records in \d+\.\d s", res.stderr)
    assert res.stdout.strip() == "imported 1500 records"


def test_import_progress_on_a_terminal_is_a_moving_bar(tmp_path: Path):
    big = tmp_path / "big.jsonl"
    _records(big, 1500)
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr are the terminal
        os.environ["MEMSTREAM_EMBEDDER"] = "none"
        os.environ["COLUMNS"] = "100"
        os.execv(sys.executable, [*EXE, "--db", str(tmp_path / "t.db"), "import", str(big)])
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    shown = set(re.findall(r"import: read:\s+(\d+)%", text))
    assert len(shown) >= 5, text[-2000:]  # the bar moved through several states
    assert "100%" in text and "\r" in text
    assert re.search(r"imported 1500 records in \d+\.\d s", text)


@pytest.mark.parametrize("args", [["--help"], ["search", "--help"]])
def test_python_dash_m(args: list[str]):
    res = ms(*args)
    assert res.returncode == 0 and "Usage: memstream" in res.stdout


def test_shell_completion_as_documented():
    env = {**os.environ, "_MEMSTREAM_COMPLETE": "bash_source"}
    script = subprocess.run([str(Path(sys.executable).parent / "memstream")], env=env,
                            capture_output=True, text=True, timeout=60)
    assert "_memstream_completion" in script.stdout
    env = {**os.environ, "_MEMSTREAM_COMPLETE": "bash_complete", "COMP_WORDS": "memstream sea",
           "COMP_CWORD": "1"}
    words = subprocess.run([str(Path(sys.executable).parent / "memstream")], env=env,
                           capture_output=True, text=True, timeout=60)
    assert "plain,search" in words.stdout.splitlines()
