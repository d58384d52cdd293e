"""The OpenGL backend MuJoCo and dm_control render with: ``MUJOCO_GL``, and the end of the contexts made on it.

``MUJOCO_GL`` is read once, when they are imported: a value they do not know is one :class:`MujocoGLError` that says
what to set, not a ``RuntimeError`` from inside their import (Gymnasium's MuJoCo environments import MuJoCo's
renderers even when they never render).

An environment that holds a rendering context is closed by :func:`close_at_exit` before the interpreter tears
down: left to the garbage collector, its context is freed after the EGL display it was made on has been terminated
(MuJoCo and dm_control terminate it at exit), and every such process ended with ``Exception ignored in ...
EGLError`` tracebacks.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import weakref
from collections.abc import Iterator
from typing import Any

# The values dm_control accepts for MUJOCO_GL (dm_control/_render/constants.py).
_KNOWN_GL = {"egl", "osmesa", "glfw", "", "enable", "enabled", "on", "true", "1",
             "disable", "disabled", "off", "false", "0"}


class MujocoGLError(RuntimeError):
    """``MUJOCO_GL`` names no rendering backend that works in this process."""


def _gl_message(value: str, problem: str) -> str:
    return (f"MUJOCO_GL={value!r} {problem}; set MUJOCO_GL=egl (headless rendering) or MUJOCO_GL=osmesa (software "
            "rendering, needs libosmesa6), or unset it, in the environment before MuJoCo or dm_control is imported, "
            "e.g. `MUJOCO_GL=egl python train.py`")


def configure_mujoco_gl() -> str:
    """Default ``MUJOCO_GL`` to ``egl`` (headless) if the user has not set it, and refuse a value dm_control does
    not know. Call before importing dm_control or shimmy: dm_control reads it once, at import."""
    value = os.environ.setdefault("MUJOCO_GL", "egl")
    if value not in _KNOWN_GL:
        raise MujocoGLError(_gl_message(value, "is not a rendering backend dm_control knows"))
    return value


@contextlib.contextmanager
def mujoco_gl_errors() -> Iterator[None]:
    """Around an import of MuJoCo's renderers (Gymnasium's MuJoCo environments): the ``RuntimeError`` MuJoCo raises
    for a ``MUJOCO_GL`` it does not know becomes a :class:`MujocoGLError`."""
    try:
        yield
    except RuntimeError as error:
        if "MUJOCO_GL" not in str(error) or isinstance(error, MujocoGLError):
            raise
        raise MujocoGLError(_gl_message(os.environ.get("MUJOCO_GL", ""), "is not a rendering backend MuJoCo knows "
                                                                          "on this system")) from None


_RENDERING: weakref.WeakSet[Any] = weakref.WeakSet()  # environments whose rendering context is still open


def _close_rendering_envs() -> None:
    for env in list(_RENDERING):
        try:
            env.close()
        except Exception:  # noqa: BLE001 (the interpreter is exiting: nothing can be done about a failed close)
            pass


def close_at_exit(env: Any) -> None:
    """Close ``env`` at interpreter exit, before the EGL display of its rendering context is terminated. Call it once
    the context exists: ``atexit`` runs handlers last-in first-out, and MuJoCo and dm_control register the
    display's termination when they make their first context, so the closing handler is registered again here, to
    come after theirs. Closing an environment that was closed already does nothing (its ``close`` is idempotent).
    """
    if env in _RENDERING:  # its context was made, and the handler placed after its display's, at its first render
        return
    _RENDERING.add(env)
    atexit.unregister(_close_rendering_envs)
    atexit.register(_close_rendering_envs)
