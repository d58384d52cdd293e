"""Save and restore the state of a running MuJoCo environment, to try actions and come back (look-ahead planning).

Copying the environment does not do it: metra-gym's environments pickle and deep-copy as fresh environments built
from their constructor arguments (as Gymnasium's MuJoCo environments do). A snapshot holds instead

- the simulator's whole integration state (``mujoco.mj_getState`` with ``mjSTATE_INTEGRATION``: time, positions,
  velocities, actuator activations, the solver's warm start, controls and applied forces), so that stepping from a
  restored state repeats the original steps exactly;
- a copy of the environment's own Python state: every attribute of the unwrapped environment that is a number, a
  bool, a string, a numpy array or a random generator (goals, counters, the cached proprioception of the DMC
  environments, ``np_random`` whose draws place later goals).

Gymnasium MuJoCo environments (``model`` and ``data``) and the DMC environments (``physics``) are supported.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

_PLAIN = (bool, int, float, str, np.ndarray, np.generic, np.random.Generator)


@dataclass
class EnvSnapshot:
    """What :func:`save_state` keeps: the simulator's integration state and the environment's plain attributes."""

    physics: np.ndarray
    attributes: dict[str, Any]


def mujoco_structs(env: Any) -> tuple[Any, Any]:
    """The raw ``mujoco.MjModel`` and ``mujoco.MjData`` of an unwrapped environment."""
    if hasattr(env, "physics"):  # dm_control, wrapping the raw structs
        return env.physics.model.ptr, env.physics.data.ptr
    if hasattr(env, "model") and hasattr(env, "data"):  # gymnasium.envs.mujoco.MujocoEnv
        return env.model, env.data
    raise TypeError(f"cannot save the state of {type(env).__name__}: only MuJoCo environments (Gymnasium's MujocoEnv, "
                    "metra-gym's DMC environments) are supported")


def save_state(env: Any) -> EnvSnapshot:
    """A snapshot of an environment (wrapped or not; the unwrapped one is saved)."""
    import mujoco

    env = env.unwrapped
    model, data = mujoco_structs(env)
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    attributes = {key: copy.deepcopy(value) for key, value in vars(env).items() if isinstance(value, _PLAIN)}
    return EnvSnapshot(state, attributes)


def restore_state(env: Any, snapshot: EnvSnapshot) -> None:
    """Put an environment back into the state of ``snapshot`` (taken from this environment)."""
    import mujoco

    env = env.unwrapped
    model, data = mujoco_structs(env)
    mujoco.mj_setState(model, data, snapshot.physics, mujoco.mjtState.mjSTATE_INTEGRATION)
    mujoco.mj_forward(model, data)  # positions of bodies and sensors, as after a step (the state is not changed)
    for key, value in snapshot.attributes.items():
        setattr(env, key, copy.deepcopy(value))  # the snapshot stays valid for another restore
