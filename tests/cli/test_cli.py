from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memstream.cli import cli


@pytest.fixture
def run(db_path: Path):
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True, input: str | None = None):
        result = runner.invoke(cli, ["--db", str(db_path), "--embedder", "none", *args],
                               input=input)
        if ok:
            assert result.exit_code == 0, result.output + str(result.exception)
        return result

    return invoke


def test_add_search_get_list_history_delete(run):
    rid = run("add", "Dana likes climbing in Yosemite", "--user", "dana", "--kind", "fact",
              "--data", '{"sport": "climbing"}').output.strip()
    run("add", "Dana's cat is called Miso", "--user", "dana")
    out = run("search", "climbing", "--user", "dana").output
    assert "recency" in out and "relevance" in out and rid in out
    hits = json.loads(run("--json", "search", "climbing", "--no-touch").output)
    assert hits[0]["record"]["id"] == rid and "explain" in hits[0]
    assert "Yosemite" in run("get", rid).output
    assert json.loads(run("--json", "get", rid).output)["data"] == {"sport": "climbing"}
    listed = json.loads(run("--json", "list", "--filter", '{"sport": "climbing"}').output)
    assert [r["id"] for r in listed] == [rid]
    run("delete", rid)
    events = [e["event"] for e in json.loads(run("--json", "history", rid).output)]
    assert events == ["add", "delete"]
    stats = json.loads(run("--json", "stats").output)
    assert stats["records"] == 1


def test_update_context_and_list_order(run):
    """The verbs the API has and the CLI had not: update (its old values in the history),
    context (a prompt block within a budget) and list's order; add takes provenance."""
    first = run("add", "Ana likes the window seat", "--step", "2").output.strip()
    second = run("add", "Ana is vegetarian", "--step", "1", "--provenance", first).output.strip()
    assert json.loads(run("--json", "get", second).output)["provenance"] == [first]
    changed = json.loads(run("--json", "update", first, "--text", "Ana likes the aisle seat",
                             "--importance", "0.9", "--metadata", '{"src": "chat"}').output)
    assert changed["text"] == "Ana likes the aisle seat" and changed["importance"] == 0.9
    history = json.loads(run("--json", "history", first).output)
    assert [e["event"] for e in history] == ["add", "update"]
    assert history[1]["old"]["text"] == "Ana likes the window seat"
    # as a table: what the add created the record with, what the update changed, no more
    table = run("history", first).output.splitlines()
    assert "created with text='Ana likes the window seat'" in table[2]
    assert "step=2" in table[2] and "access_count" not in table[2]
    assert "text: 'Ana likes the window seat' -> 'Ana likes the aisle seat'" in table[3]
    assert "-> 0.9" in table[3] and "kind" not in table[3]
    nothing = run("update", first, ok=False)
    assert nothing.exit_code == 2 and "name what to change" in nothing.output
    block = json.loads(run("--json", "context", "aisle seat", "--budget", "50").output)
    assert "aisle seat" in block["text"] and 0 < block["tokens"] <= 50
    assert "vegetarian" not in block["text"]  # unrelated: not padded in
    by_step = [r["id"] for r in json.loads(run("--json", "list", "--order", "step").output)]
    assert by_step == [second, first]
    assert [r["id"] for r in json.loads(run("--json", "list", "--order", "-step").output)] \
        == [first, second]


def test_errors_are_one_line_with_exit_codes(run):
    missing = run("get", "01NOPE", "--create", ok=False)
    assert missing.exit_code == 3
    assert missing.output.strip().startswith("error: no record")
    assert len(missing.output.strip().splitlines()) == 1
    bad = run("add", "x", "--importance", "3", ok=False)
    assert bad.exit_code == 2 and "importance" in bad.output
    bad_json = run("add", "x", "--data", "{nope", ok=False)
    assert bad_json.exit_code == 2 and "not valid JSON" in bad_json.output
    bad_ns = run("--namespace", "no spaces allowed", "add", "x", ok=False)
    assert bad_ns.exit_code == 2


def test_export_import_roundtrip_every_field(run, tmp_path: Path, db_path: Path):
    run("add", "first", "--user", "u", "--agent", "a", "--run", "r", "--kind", "fact",
        "--data", '{"n": [1, {"x": null}]}', "--metadata", '{"m": true}', "--importance",
        "0.25", "--step", "4", "--at", "2024-01-02T03:04:05Z")
    second = run("add", "second").output.strip()
    run("search", "second")  # access count and last access change
    run("delete", second)
    run("add", "third")
    out = tmp_path / "dump.jsonl"
    run("export", "--out", str(out))
    original = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(original) == 2
    other_db = tmp_path / "copy.db"
    runner = CliRunner()
    res = runner.invoke(cli, ["--db", str(other_db), "--embedder", "none", "import", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--db", str(other_db), "--embedder", "none", "export"])
    assert [json.loads(line) for line in res.stdout.splitlines()] == original
    again = runner.invoke(cli, ["--db", str(other_db), "--embedder", "none", "import", str(out)])
    assert again.exit_code == 4 and "already exist" in again.output
    skip = runner.invoke(cli, ["--db", str(other_db), "--embedder", "none", "import",
                               "--skip-existing", str(out)])
    assert skip.exit_code == 0 and "imported 0" in skip.output


def test_import_bad_line_stores_nothing(run, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    good = {"id": "01HX0000000000000000000000", "namespace": "default", "text": "fine",
            "importance": 0.5}
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "x", "colour": 1}) + "\n")
    res = run("import", str(bad), ok=False)
    assert res.exit_code == 2 and "line 2" in res.output
    # nothing stored: not even the store the failed import would have created
    assert not list(tmp_path.glob("mem.db*"))
    run("add", "something else")  # into an existing store, a failed import keeps it
    assert run("import", str(bad), ok=False).exit_code == 2
    assert json.loads(run("--json", "stats").output)["records"] == 1


def test_import_a_users_own_lines(run, tmp_path: Path):
    """Lines of a text and any of add's fields import as new records: ids made, the current
    namespace, the line's own time (ISO 8601 or epoch) or now, importance as add gives it."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text("\n".join(json.dumps(line) for line in [
        {"text": "Ana likes the window seat", "user_id": "ana"},
        {"text": "Deadline moved to Friday", "user_id": "ana", "created_at": "2024-05-08T13:56:00Z",
         "kind": "fact", "importance": 0.9},
        {"content": "Bought oat milk", "at": 1700000000},
    ]) + "\n")
    res = run("--namespace", "home", "import", str(notes))
    assert "imported 3" in res.output
    listed = {r["text"]: r for r in json.loads(run("--namespace", "home", "--json", "list").output)}
    assert set(listed) == {"Ana likes the window seat", "Deadline moved to Friday",
                           "Bought oat milk"}
    assert {r["namespace"] for r in listed.values()} == {"home"}
    assert len({r["id"] for r in listed.values()}) == 3
    seat, deadline, milk = (listed[t] for t in ("Ana likes the window seat",
                                                "Deadline moved to Friday", "Bought oat milk"))
    assert deadline["importance"] == 0.9 and deadline["kind"] == "fact"
    from memstream.cognition.importance import heuristic_importance
    from memstream.core.clock import to_timestamp
    assert to_timestamp(deadline["created_at"]) == to_timestamp("2024-05-08T13:56:00Z")
    assert to_timestamp(milk["created_at"]) == 1700000000
    import time
    assert abs(to_timestamp(seat["created_at"]) - time.time()) < 120  # now, not 1970
    assert seat["importance"] == heuristic_importance("Ana likes the window seat", "observation")
    assert seat["user_id"] == "ana" and milk["user_id"] is None


def test_import_names_every_problem_of_a_line_at_once(run, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps(
        {"user_id": "", "importance": 3, "created_at": "yesterday-ish", "colour": "red"}) + "\n")
    res = run("import", str(bad), ok=False)
    assert res.exit_code == 2
    message = res.output
    assert "line 2" in message
    for problem in ("text is missing", "colour", "user_id", "importance", "created_at"):
        assert problem in message, (problem, message)
    assert not list(tmp_path.glob("mem.db*"))  # nothing stored, no store made


def test_json_output_writes_times_in_iso_8601_utc(run):
    rid = run("add", "paid the plumber", "--at", "1715176560", "--data",
              '{"paid_at": 1715176560}').output.strip()
    got = json.loads(run("--json", "get", rid).output)
    assert got["created_at"] == "2024-05-08T13:56:00.000000Z"
    assert got["data"] == {"paid_at": 1715176560}  # the user's own JSON is left as it was
    assert json.loads(run("--json", "history", rid).output)[0]["at"].endswith("Z")
    stats = json.loads(run("--json", "stats").output)
    assert stats["oldest"] == stats["newest"] == "2024-05-08T13:56:00.000000Z"
    hit = json.loads(run("--json", "search", "plumber", "--no-touch").output)[0]
    assert hit["record"]["last_accessed_at"] == "2024-05-08T13:56:00.000000Z"


def test_console_script_runs(tmp_path: Path):
    exe = Path(sys.executable).parent / "memstream"
    res = subprocess.run([str(exe), "--db", str(tmp_path / "s.db"), "--embedder", "none", "add",
                          "from a real process"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and len(res.stdout.strip()) == 26
    res = subprocess.run([str(exe), "--db", str(tmp_path / "s.db"), "get", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 3 and res.stderr.startswith("error:")


@pytest.mark.slow
def test_demo_shows_why_weight_profiles_exist():
    """The README's first command, with the real embedding model: under the default rule the
    Maria memory comes first and heads the context block; under the paper's formula the day's
    most important memory, unrelated to Maria, is carried into the first two by importance
    alone (min-max puts its near-zero relevance on the same footing)."""
    out = CliRunner().invoke(cli, ["demo"])
    assert out.exit_code == 0, out.output
    assert "stored in a temporary file, deleted when the demo ends" in out.output
    blocks = out.output.split("\n\n")
    searches = [[line for line in b.splitlines() if not line.lstrip().startswith("why")]
                for b in blocks if b.startswith("search (")]
    hits = [(lines[0][8:].split(":")[0], [line.split("  ")[-1] for line in lines[1:]])
            for lines in searches if "Maria" in lines[0]]
    maria = "Lunch with Maria; she is allergic to peanuts and prefers Thai food."
    assert [profile for profile, _ in hits] == ["default", "paper"]
    assert hits[0][1][0] == maria
    bug = "Found the bug: the March sales export double-counts refunds."
    assert maria in hits[1][1] and bug in hits[1][1][:2]
    assert blocks[-1].splitlines()[1] == f"- {maria}"
    assert "tokens of 40" in blocks[-1]
    # the day's most important memory, third for a question in other words, says why in one
    # line, and the next question, in its own words, finds it first
    report = next(b.splitlines() for b in blocks if "went wrong with the report" in b)
    assert report[3].endswith(bug) and report[4].lstrip().startswith("not higher: it is the "
                                                                      "most important")
    own = next(b.splitlines() for b in blocks if "bug in the sales export" in b)
    assert own[1].endswith(bug)
    # a hit placed above a more relevant one says what decided it, on the line after it
    for block in (b.splitlines() for b in blocks if b.startswith("search (default")):
        shown = [line for line in block[1:]
                 if not line.lstrip().startswith(("why", "not higher"))]
        relevance = [float(line.split("relevance ")[1].split()[0]) for line in shown]
        for n, line in enumerate(shown):
            after = block[block.index(line) + 1] if block.index(line) + 1 < len(block) else ""
            above_more_relevant = any(r > relevance[n] for r in relevance[n + 1:])
            assert after.lstrip().startswith("why") == above_more_relevant, block


@pytest.mark.slow
def test_demo_keeps_a_named_store_and_says_how_to_open_it(tmp_path: Path):
    db = tmp_path / "demo.db"
    out = CliRunner().invoke(cli, ["--db", str(db), "demo"])
    assert out.exit_code == 0, out.output
    assert f"stored in {db}, kept: `memstream --db {db} search" in out.output
    found = CliRunner().invoke(cli, ["--db", str(db), "--json", "search", "Maria", "--agent",
                                     "ada", "--no-touch"])
    assert "Maria" in json.loads(found.output)[0]["record"]["text"]


def test_every_command_is_documented():
    doc = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    groups = {n for n, c in cli.commands.items() if hasattr(c, "commands")}
    names = [f"memstream {n}" for n in cli.commands if n not in groups]
    for group in groups:
        names += [f"memstream {group} {n}" for n in cli.commands[group].commands]  # type: ignore
    missing = [n for n in names if n not in doc]
    assert not missing, f"undocumented commands: {missing}"


def test_a_failed_write_leaves_no_store_behind(tmp_path: Path):
    runner = CliRunner()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a record"}\n', encoding="utf-8")
    for args in (["import", str(bad)], ["add", "note", "--at", "not a time"]):
        db = tmp_path / "new.db"
        out = runner.invoke(cli, ["--db", str(db), "--embedder", "none", *args])
        assert out.exit_code != 0 and "error:" in out.output
        assert not list(tmp_path.glob("new.db*")), args  # no empty store, no -wal or -shm
    # a store that existed before a failed write is kept, records and all
    db = tmp_path / "kept.db"
    assert runner.invoke(cli, ["--db", str(db), "--embedder", "none", "add", "keep me"]
                         ).exit_code == 0
    assert runner.invoke(cli, ["--db", str(db), "--embedder", "none", "import", str(bad)]
                         ).exit_code != 0
    assert db.exists()


def test_agent_and_learning_commands(run):
    """The operations agents use at run time, from a shell: advice after learned outcomes, an
    agent's states stored and compared, an episode as one JSON object (the REST form)."""
    for strategy in ("fill valid credentials first",) * 3:
        run("learn", "--agent", "bot", "--project", "p", "--task", "test the login form",
            "--success", "--strategy-used", strategy)
    run("learn", "--agent", "bot", "--project", "p", "--task", "test the login form",
        "--failure", "--strategy", "click submit twice")  # the old option name still works
    prompt = run("advice", "--task", "test the login form", "--agent", "bot").output
    assert "fill valid credentials first" in prompt
    advice = json.loads(run("--json", "advice", "--task", "test the login form",
                            "--agent", "bot", "-k", "1").output)
    assert len(advice["heuristics"]) == 1 and "fill valid credentials" in advice["prompt"]
    for step, food in enumerate((0, 5, 9)):
        run("agents", "store", "fox", "--contents", json.dumps({"food": food}),
            "--step", str(step))
    run("agents", "store", "fox", "--kind", "action", "--contents", '{"move": "north"}',
        "--step", "3")
    like = json.loads(run("--json", "agents", "similar", "fox", "--state", '{"food": 8}',
                          "-k", "1", "--kind", "state").output)
    assert [(e["step_number"], e["similarity"] > 0) for e in like] == [(2, True)]
    assert "similarity" in run("agents", "similar", "fox", "--state", '{"food": 8}').output
    bad = run("agents", "store", "fox", "--contents", "{food", "--step", "4", ok=False)
    assert bad.exit_code != 0 and "--contents is not valid JSON" in bad.output
    episode = {"task_id": "t", "score": 0.9, "successes": ["planned first"]}
    rid = run("episodes", "--agent", "bot", "record", "--episode", "-",
              input=json.dumps(episode)).output.strip()
    assert "[WORKS] planned first" in run("episodes", "--agent", "bot", "context", "--task", "t",
                                          "--budget", "200").output
    assert rid in run("get", rid).output
    none = run("episodes", "record", ok=False)
    assert none.exit_code != 0 and "--score" in none.output


def test_every_read_command_takes_the_same_read_options(run):
    """search and context take the same scope, time, weights, now and touch options; from the
    shell a read only looks (as the inspector's), and --touch counts it as a use and says
    so."""
    from memstream.cli.memories import context, search

    def options(command: Any) -> set[str]:
        return {o for p in command.params for o in p.opts + p.secondary_opts} - {"-k"}

    assert options(search) - {"--min-relevance"} <= options(context)
    rid = run("add", "paid the plumber for the boiler", "--at", "2024-05-08T13:56:00Z"
              ).output.strip()
    block = json.loads(run("--json", "context", "plumber boiler").stdout)
    assert block["hits"][0]["record"]["id"] == rid
    looked = run("search", "plumber boiler")
    assert rid in looked.stdout and "counted as a use" not in looked.output
    assert json.loads(run("--json", "get", rid).output)["access_count"] == 0
    used = run("context", "plumber boiler", "--touch")
    assert "counted as a use: the last access of 1 memory moved to now" in used.output
    touched = json.loads(run("--json", "get", rid).output)
    assert touched["access_count"] == 1
    assert touched["last_accessed_at"] != "2024-05-08T13:56:00.000000Z"


def test_import_names_every_bad_line_once_in_the_users_terms(run, tmp_path: Path):
    """Every bad line is reported at once, each with all its problems, then a count of the rest
    past the cap; a line that is not JSON says where it breaks and what was expected, and
    "line N" means one thing: the line of the file."""
    from memstream.engine.transfer import MAX_BAD_LINES

    bad = tmp_path / "bad.jsonl"
    rows = [json.dumps({"text": "fine"}), '{"text": "no closing brace"',
            json.dumps({"text": "", "importance": 3}), '["an", "array"]',
            '{"text": "x",, "kind": "fact"}']
    rows += [json.dumps({"importance": 2})] * (MAX_BAD_LINES + 3)
    bad.write_text("\n".join(rows) + "\n")
    res = run("import", str(bad), ok=False)
    assert res.exit_code == 2
    out = res.output
    assert f"{len(rows) - 1} lines are not records; nothing was imported" in out
    assert "line 2: not valid JSON: the line ends before its object is complete" in out
    assert "line 3: " in out and "empty" in out and "importance" in out  # both problems
    assert "line 4: a line must be a JSON object, not an array" in out
    assert "line 5: not valid JSON at column 14 (expecting property name" in out
    assert "column 1 (char" not in out and len(re.findall(r"\bline 2\b", out)) == 1
    assert f"line {MAX_BAD_LINES + 1}:" in out and f"line {MAX_BAD_LINES + 2}:" not in out
    assert f"... and {len(rows) - 1 - MAX_BAD_LINES} more bad lines" in out
    assert not list(tmp_path.glob("mem.db*"))  # nothing stored


def test_list_says_what_it_leaves_out_and_marks_standing(run):
    old = run("add", "Our address is 27 Corrin Lane").output.strip()
    new = run("add", "We moved to 4 Quillon Row").output.strip()
    run("invalidate", old, "--superseded-by", new)
    listed = run("list")
    assert new in listed.stdout and old not in listed.stdout
    assert "1 superseded or invalidated record not listed: --all lists them too" in \
        listed.output
    every = run("list", "--all").stdout
    row = next(line for line in every.splitlines() if old in line)
    assert "superseded" in row


@pytest.mark.slow
def test_audit_first_compares_what_another_process_left_pending(tmp_path: Path):
    """A process that stored memories and ended before its worker embedded them leaves them
    pending: audit waits for them, with a progress line, instead of answering before it
    knows."""
    import subprocess
    import sys

    db = tmp_path / "m.db"
    subprocess.run([sys.executable, "-c", (
        "import os\nfrom memstream import Memory\n"
        f"m = Memory({str(db)!r})\n"
        "m.add_many([{'text': t, 'user_id': 'u'} for t in ("
        "'Our wifi password is tulip-42.', 'ok thanks!', 'The plumber comes on Friday.')])\n"
        "os._exit(0)  # before the worker embeds them\n")], check=True)
    result = CliRunner().invoke(cli, ["--db", str(db), "audit", "--kind", "junk"])
    assert result.exit_code == 0, result.output
    assert "audit: embedding" in result.stderr
    assert "ok thanks!" in result.stdout
