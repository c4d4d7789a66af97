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
         "tests/server/test_apidocs.py", "tests/test_compat_mem0.py", "-k",
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
