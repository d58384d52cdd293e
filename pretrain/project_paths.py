"""How stored results name folders: relative to the project (the working directory), never the training machine's
absolute paths."""

from __future__ import annotations

from pathlib import Path

SNAPSHOTS = "snapshots"  # a run folder's skill snapshots: RUN/snapshots/epoch_NNNNNN


def snapshot_name(epoch: int) -> str:
    """The folder name of a run's skill snapshot at ``epoch`` (``RUN/snapshots/epoch_NNNNNN``)."""
    return f"epoch_{epoch:06d}"


def project_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies under it, else its last part (``runs/ant-s0`` for
    ``/work/project/runs/ant-s0`` run from ``/work/project``; ``ant-s0`` from elsewhere)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path.name


def checkpoint_reference(checkpoint: str | Path) -> str:
    """A skill checkpoint as a result names it: a local folder by :func:`project_path`, a bundled name or a Hub
    repo as given. A snapshot outside the project keeps its run's name (``ant-s0/snapshots/epoch_000900``), so that
    two runs' snapshots of the same epoch stay apart in one result."""
    path = Path(checkpoint)
    if not path.exists():
        return str(checkpoint)
    named = project_path(path)
    if named == path.name and path.parent.name == SNAPSHOTS:
        return f"{path.parent.parent.name}/{SNAPSHOTS}/{path.name}"
    return named
