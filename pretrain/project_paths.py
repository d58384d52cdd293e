"""How stored results name folders: relative to the project (the working directory), never the training machine's
absolute paths."""

from __future__ import annotations

from pathlib import Path


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
    repo as given."""
    return project_path(checkpoint) if Path(checkpoint).exists() else str(checkpoint)
