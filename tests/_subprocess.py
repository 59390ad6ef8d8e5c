"""Run Python code in a fresh process: imports, forks, threads and first calls need one."""

from __future__ import annotations

import os
import subprocess
import sys


def run_python(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> str:
    """Run ``python -c code *args`` with ``env`` added to this environment; its stdout.

    Fails the test, showing the end of stderr, when the process does not exit with 0.
    """
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
