"""Files written so that a reader never sees half of one: through a temporary file (or folder) renamed into place,
with the mode that ``open`` and ``mkdir`` would have given it, and the temporaries of a killed earlier writer removed.
Used by the skill checkpoint writer and by the training stage's run folders."""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def _umask() -> int:
    """The process's umask, read from /proc where it is shown (Linux >= 4.7), else by setting and restoring it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def give_usual_mode(path: Path) -> None:
    """Give a file or folder made by ``tempfile`` (which makes them private: 0600 and 0700) the mode that ``open``
    and ``mkdir`` would have given it under the umask, before it is renamed into place for others to read."""
    path = Path(path)
    path.chmod((0o777 if path.is_dir() else 0o666) & ~_umask())


def temporary_prefix(path: Path) -> str:
    """The name prefix of the temporary files and folders written for ``path`` (said once: a later write removes
    the ones a killed process left behind, see :func:`remove_temporaries`)."""
    return f".{Path(path).name}.tmp-"


def remove_temporaries(path: Path) -> None:
    """Remove the temporary files and folders of ``path`` that an earlier, killed writer left behind (the callers
    are the only writers of ``path``: a run folder's files are written by the process that holds its lock)."""
    path = Path(path)
    for leftover in path.parent.glob(f"{glob.escape(temporary_prefix(path))}*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write a file through a temporary file renamed into place, so a reader never sees half a file. The file gets
    the usual mode for the umask, and temporaries of ``path`` left by a killed earlier write are removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        give_usual_mode(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, default=int))
