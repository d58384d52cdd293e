"""Checks of the Gymnasium calls every metra_gym environment answers the same way: ``reset`` options that are not
a mapping, and ``render()`` of an environment made without a render mode (Gymnasium's MuJoCo environments end in
an ``AttributeError`` there, its classic-control ones return None).
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from gymnasium import error


def check_reset_options(options: Any) -> None:
    """Refuse reset options that are not a mapping (or None). The keys of a mapping are not checked: metra_gym's
    environments read none, but by Gymnasium's convention a wrapper passes the options it was given, its own keys
    included, down to the environment (a skill wrapper's ``reset(options={"skill": z})``).

    :raises TypeError: for options that are not a mapping.
    """
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict (or None), got {reprlib.repr(options)} of type "
                        f"{type(options).__name__}; metra_gym's environments read no options: call reset(seed=...)")


def check_render_mode(render_mode: str | None) -> None:
    """Refuse ``render()`` of an environment made without a render mode (it has no frame to return).

    :raises gymnasium.error.UnsupportedMode: naming how to make the environment so that it renders.
    """
    if render_mode is None:
        raise error.UnsupportedMode("render() needs a render mode, and this environment was made without one; make "
                                    "it with render_mode='rgb_array', e.g. gym.make(env_id, render_mode='rgb_array')")
