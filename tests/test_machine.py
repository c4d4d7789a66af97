"""The README's test command on a machine where a browser cannot be had: the browser tests
report one reason, and nothing else fails (no event loop leaks into the tests after them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_without_a_browser_only_the_browser_tests_skip(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()  # no chromium and no apt-get on this PATH: the browser cannot be had
    env = {**os.environ, "PATH": str(empty)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "t"), "-rs",
         "tests/server/test_apidocs.py", "tests/compat/test_mem0.py", "-k",
         "swagger or redoc or async"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert " failed" not in out and " error" not in out, out
    reasons = {line.split(": ", 1)[1] for line in out.splitlines()
               if line.startswith("SKIPPED") and ": " in line}
    assert reasons == {"the browser tests need Chromium: chromium is not installed and this "
                       "machine has no apt-get: install it yourself"}, out
    assert " passed" in out, out  # the asyncio tests after them ran and passed


def test_a_module_that_leaves_an_event_loop_running_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "test_a_leak.py").write_text(
        "import asyncio\n\n"
        "def test_leaves_a_loop():\n"
        "    asyncio._set_running_loop(asyncio.new_event_loop())\n")
    (tmp_path / "test_b_after.py").write_text(
        "import asyncio\n\n"
        "def test_runs_asyncio():\n"
        "    async def one():\n        return 1\n"
        "    assert asyncio.run(one()) == 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert "test_a_leak left an event loop running" in out, out
    assert "2 passed, 1 error" in out, out  # the leak is the leaking module's error alone


@pytest.mark.slow
def test_postgres_survives_another_pytest_session_of_the_same_user(pg_admin: str,
                                                                    tmp_path: Path) -> None:
    """Any other pytest session of root resets /tmp/pytest-of-root to mode 0700. A test server
    whose data lived in there (running as its own user) panicked at its next checkpoint; its
    data folder is now its own, so the suite passes beside other pytest jobs."""
    import psycopg

    (tmp_path / "test_other_job.py").write_text(
        "def test_uses_a_temporary_folder(tmp_path):\n    assert tmp_path.is_dir()\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_other_job.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # the server reads its control file again
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.slow
def test_a_stopped_postgres_ends_the_session_with_one_message(tmp_path: Path) -> None:
    """A test server that stops mid-suite gives one message that says so and shows its log,
    not an error for every PostgreSQL test after it."""
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.conftest import *  # noqa: F403\n")
    (tmp_path / "test_stop.py").write_text(
        "import os, signal, psutil, psycopg\n\n"
        "def test_first(pg_url):\n"
        "    with psycopg.connect(pg_url) as conn:  # the server goes away mid-suite\n"
        "        postmaster = psutil.Process(conn.info.backend_pid).ppid()\n"
        "    os.kill(postmaster, signal.SIGINT)\n"
        "    psutil.Process(postmaster).wait(30)\n\n"
        + "".join(f"def test_after_{n}(pg_url):\n    psycopg.connect(pg_url).close()\n\n"
                  for n in range(5)))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_stop.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert out.count("stopped answering") == 1, out
    assert "test_after_1" not in out and " error" not in out, out


def test_apt_installs_only_what_the_tests_need() -> None:
    """The tests' own installs take a package and what it depends on, never its recommends
    (Chromium's pulled avahi-daemon, cups and an upgrade of systemd onto a user's machine)."""
    import shutil

    from .machine import install_command

    command = install_command("chromium")
    assert command[:2] == ["apt-get", "install"] and "--no-install-recommends" in command
    if shutil.which("apt-get") is None or shutil.which("chromium"):
        return  # nothing to simulate here
    simulated = subprocess.run([*command, "--simulate"], capture_output=True, text=True)
    if simulated.returncode != 0:
        pytest.skip(f"apt-get cannot simulate here: {simulated.stderr.strip()[:200]}")
    would = {line.split()[1] for line in simulated.stdout.splitlines()
             if line.startswith("Inst ")}
    assert "chromium" in would
    assert not would & {"avahi-daemon", "cups-common", "systemd", "samba-libs"}, sorted(would)
