"""What the tests need from the machine beyond Python packages, set up by the tests themselves:
the README's one test command passes on a fresh Debian or Ubuntu machine.

- Chromium (Debian's package), for the browser tests of the inspector and the API docs.
- A Redis server on 127.0.0.1:6379, for the tiers tests.

Each is installed with apt-get when it is missing and the tests run as root (as in a container
or CI); where it cannot be had, `why_missing` says why in one sentence and the tests that need
it report that one reason."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

from .redis_server import redis_up

#: serialises installs between test sessions that start at the same time
LOCK = Path("/tmp/memstream-tests-apt.lock")
_tried: dict[str, str | None] = {}


def install_command(package: str) -> list[str]:
    """The apt-get call that installs ``package`` with what it depends on and nothing more:
    without --no-install-recommends, Chromium alone pulled about 130 packages (avahi-daemon,
    cups, samba's libraries) and an upgrade of systemd."""
    return ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]


def _apt_install(package: str) -> str | None:
    """Install a Debian package; None when it worked, else why it did not."""
    if package in _tried:
        return _tried[package]
    why: str | None
    if shutil.which("apt-get") is None:
        why = f"{package} is not installed and this machine has no apt-get: install it yourself"
    elif os.geteuid() != 0:
        why = (f"{package} is not installed and the tests do not run as root: "
               f"run `sudo apt-get install {package}` once")
    else:
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            run = [["apt-get", "update", "-qq"],
                   install_command(package)]
            why = None
            for cmd in run:
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
                    why = f"`{' '.join(cmd)}` failed: {' '.join(tail) or done.returncode}"
                    break
    _tried[package] = why
    return why


def chromium() -> tuple[str | None, str | None]:
    """(path to Chromium, None), or (None, why it cannot be had here)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found, None
    why = _apt_install("chromium")
    found = shutil.which("chromium")
    if found:
        return found, None
    return None, f"the browser tests need Chromium: {why or 'apt-get installed no chromium'}"


def redis() -> str | None:
    """Make sure a Redis server answers on 127.0.0.1:6379; None when one does, else why not."""
    if redis_up():
        return None
    if shutil.which("redis-server") is None:
        why = _apt_install("redis-server")
        if why:
            return f"the tiers tests need a Redis server on 127.0.0.1:6379: {why}"
    subprocess.run(["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", "6379",
                    "--save", "", "--appendonly", "no"], capture_output=True)
    for _ in range(100):
        if redis_up():
            return None
        time.sleep(0.1)
    return "the tiers tests need a Redis server on 127.0.0.1:6379, and none would start"
