"""The linters are part of the suite: ruff and mypy (strict) must be clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_clean():
    res = _run("ruff", "check", "src", "tests", "examples", "benchmarks")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_clean():
    res = _run("mypy")
    assert res.returncode == 0, res.stdout + res.stderr


def test_async_memory_has_the_signatures_of_memory():
    """Every public Memory method but the callback registration is awaitable on AsyncMemory
    with the same signature, and the types reach the caller (mypy checks a use of them)."""
    import inspect

    from memstream import AsyncMemory, Memory

    def methods(cls: type) -> set[str]:
        return {n for c in cls.__mro__ if c is not object for n, f in vars(c).items()
                if callable(f) and not n.startswith("_")}

    callbacks = {"on_delete", "on"}  # registering a callback needs no awaiting
    public = methods(Memory)
    assert public - {"on_delete"} == methods(AsyncMemory)
    for name in public - {"on_delete"}:
        assert inspect.signature(getattr(AsyncMemory, name)) == \
            inspect.signature(getattr(Memory, name)), name
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name)) == \
            (name not in callbacks), name


@pytest.mark.slow
def test_async_memory_is_typed_for_callers(tmp_path: Path):
    use = tmp_path / "use_async.py"
    use.write_text(
        "from memstream import AsyncMemory\n"
        "async def f(m: AsyncMemory) -> None:\n"
        "    n: int = await m.count(user_id='u')\n"
        "    hits = await m.search('q', k=3)\n"
        "    text: str = hits[0].record.text\n"
        "    wrong: str = await m.count()\n", encoding="utf-8")
    res = _run("mypy", "--strict", "--no-incremental", str(use))
    errors = [line for line in res.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "use_async.py:6:" in errors[0], res.stdout
