"""The replay buffer of a run state, saved in segments so that a save writes only what changed since the last one.

A full replay buffer is large (1e6 Ant transitions: 290 MB) and a run saves every few dozen epochs, each time
adding a small part of it (50 Ant epochs: 80,000 transitions, 8 %). Pickling the whole buffer every time, as SB3's
``save_replay_buffer`` does, rewrites and re-hashes all of it. Here the buffer's large arrays are cut along their
first (transition) axis into segments of about :data:`SEGMENT_BYTES`, each an ``.npy`` file; a segment whose sha256
equals the one recorded by the previous save is hard-linked from the previous run state instead of written again.
Everything else of the buffer object (positions, flags, spaces, small arrays) is pickled into :data:`META` with the
large arrays left out. Loading puts the same arrays back into the same object, so resume stays exact.

Each run state folder stays self-contained (hard links, not references), so the crash-safe save of
:mod:`pretrain.run.run_state` (temporary folder, then renames) keeps holding; where the file system cannot link,
the segment is copied.
"""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np

META = "replay_buffer.pkl"
SEGMENT_PREFIX = "replay."
SEGMENT_BYTES = 8 << 20  # 8 MiB: ~36 files for a 290 MB buffer, of which a 50-epoch Ant save rewrites about 4
MIN_SEGMENTED_BYTES = 1 << 20  # smaller arrays stay in the pickle


class _Segmented:
    """Stands in the pickled buffer for an array stored in segment files."""

    def __init__(self, key: str) -> None:
        self.key = key


def _large_arrays(buffer: Any) -> dict[str, np.ndarray]:
    """The buffer's large arrays by key: ``attr`` for an attribute, ``attr:key`` for an entry of a dict attribute
    (dict observations)."""
    arrays = {}
    for name, value in vars(buffer).items():
        if isinstance(value, np.ndarray) and value.ndim and value.nbytes >= MIN_SEGMENTED_BYTES:
            arrays[name] = value
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, np.ndarray) and item.ndim and item.nbytes >= MIN_SEGMENTED_BYTES:
                    arrays[f"{name}:{key}"] = item
    return arrays


def _segment_rows(array: np.ndarray) -> int:
    row_bytes = max(1, array.nbytes // len(array))
    return max(1, SEGMENT_BYTES // row_bytes)


def save_replay(buffer: Any, folder: Path, previous: Path | None = None,
                previous_files: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Write ``buffer`` into ``folder``; return ``{file name: {"bytes", "sha256"}}`` of every file written or linked.

    :param buffer: an SB3 replay buffer (any class: its large numpy arrays are found by size).
    :param folder: the run state folder being written.
    :param previous: the previous run state folder, whose unchanged segments are hard-linked.
    :param previous_files: that folder's recorded files (``state.json["files"]``), to know their sha256.
    """
    folder = Path(folder)
    previous_files = previous_files or {}
    files: dict[str, dict[str, Any]] = {}
    layout: dict[str, dict[str, Any]] = {}
    for key, array in _large_arrays(buffer).items():
        rows = _segment_rows(array)
        names = []
        for index, start in enumerate(range(0, len(array), rows)):
            name = f"{SEGMENT_PREFIX}{key.replace(':', '.')}.{index:04d}.npy"
            data = io.BytesIO()
            np.save(data, array[start:start + rows], allow_pickle=False)
            digest = hashlib.sha256(data.getbuffer()).hexdigest()
            if not _link_unchanged(previous, name, digest, previous_files, folder / name):
                with open(folder / name, "wb") as f:
                    f.write(data.getbuffer())
            files[name] = {"bytes": data.getbuffer().nbytes, "sha256": digest}
            names.append(name)
        layout[key] = {"shape": array.shape, "dtype": array.dtype.str, "rows": rows, "segments": names}
    stripped = copy.copy(buffer)
    for key in layout:
        name, _, entry = key.partition(":")
        if entry:
            setattr(stripped, name, {**getattr(stripped, name), entry: _Segmented(key)})
        else:
            setattr(stripped, name, _Segmented(key))
    stripped.device = None  # set again at load, to the model's device
    with open(folder / META, "wb") as f:
        pickle.dump({"buffer": stripped, "layout": layout}, f, protocol=pickle.HIGHEST_PROTOCOL)
    return files


def _link_unchanged(previous: Path | None, name: str, digest: str, previous_files: dict[str, dict[str, Any]],
                    target: Path) -> bool:
    """Hard-link ``previous/name`` to ``target`` when it holds exactly these bytes; False when it must be written."""
    if previous is None or previous_files.get(name, {}).get("sha256") != digest:
        return False
    source = Path(previous) / name
    try:
        os.link(source, target)
    except FileNotFoundError:
        return False
    except OSError:  # a file system without hard links: copy
        shutil.copyfile(source, target)
    return True


def load_replay(folder: Path, device: Any) -> Any:
    """The buffer saved by :func:`save_replay` in ``folder`` (sha256 already checked by the caller), on ``device``.
    A buffer pickled whole (run states of earlier versions, SB3's format) loads too."""
    folder = Path(folder)
    with open(folder / META, "rb") as f:
        saved = pickle.load(f)
    if not (isinstance(saved, dict) and "layout" in saved):  # a whole pickled buffer
        saved.device = device
        return saved
    buffer = saved["buffer"]
    for key, spec in saved["layout"].items():
        array = np.empty(spec["shape"], dtype=np.dtype(spec["dtype"]))
        rows = spec["rows"]
        for index, name in enumerate(spec["segments"]):
            array[index * rows:(index + 1) * rows] = np.load(folder / name, allow_pickle=False)
        name, _, entry = key.partition(":")
        if entry:
            getattr(buffer, name)[entry] = array
        else:
            setattr(buffer, name, array)
    buffer.device = device
    return buffer
