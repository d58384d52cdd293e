"""Small builders shared by the runtime tests."""

import subprocess
import sys


def heavy_modules_after(imports: str, env_id: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of ``heavy`` a fresh interpreter has loaded after ``import {imports}`` and ``gym.spec(env_id)``."""
    code = (f"import sys, gymnasium as gym, {imports}\n"
            f"gym.spec({env_id!r})\n"
            f"print(','.join(sorted(m for m in {heavy!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]
