"""The results file of a timing benchmark: one JSON saying what is measured, with a list of measurements that
grows by one per invocation, each with its date and machine, so that numbers of different days stay side by side
(absolute times differ up to 1.7x between machines; compare within one measurement)."""

from __future__ import annotations

import json
import os
import platform
from datetime import date
from pathlib import Path
from typing import Any

import torch


def machine() -> str:
    """CPU, its vector extensions (AVX-512 decides whether bf16 is native) and cores."""
    return (f"{platform.processor() or platform.machine()}, {torch.backends.cpu.get_cpu_capability()}, "
            f"{len(os.sched_getaffinity(0))} cores")


def append_measurement(path: Path, what: str, measurement: dict[str, Any]) -> None:
    """Add ``measurement`` (dated, with the machine) to the file at ``path``; the earlier ones are kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    history = json.loads(path.read_text())["measurements"] if path.is_file() else []
    entry = {"date": str(date.today()), "machine": machine(), **measurement}
    path.write_text(json.dumps({"what": what, "measurements": [*history, entry]}, indent=1))
    print(f"wrote {path}")
