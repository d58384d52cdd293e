"""DeepMind Control Quadruped and Humanoid as pixel METRA uses them, through Shimmy's Gymnasium compatibility layer.

The paper's setting (official code ``envs/custom_dmc_tasks``): dm_control's ``quadruped`` and ``humanoid`` *run*
tasks, action repeat 2, episodes of 400 control steps = 200 policy steps, observations that are 64 x 64 x 3 renders
only (camera 2 for the quadruped, 0 for the humanoid) stacked 3 deep, and a floor whose texture is a colour gradient
over a 30 x 30 m floor (R = 255 * row / H, G = 255 * col / W, B = 128) so that the agent's position can be read from
pixels. The torso x-y goes into ``info["coordinates"]`` (float64) at reset and at every step, for the coverage
metrics; the environment reward is dm_control's (METRA ignores it).

``obs_type="pixels"`` (default) gives one ``(64, 64, 3)`` uint8 frame per step; the registered ids stack 3 with
:class:`metra_gym.wrappers.ChannelStackObservation` (``(64, 64, 9)``, oldest frame first). ``obs_type="state"`` gives
a flat float32 vector: the torso x-y followed by dm_control's proprioception (``flat_observation``), for CPU
training and tests; the x-y is included as Ant's observation includes it, since METRA can only find positional
skills in what phi sees. Quadruped: 2 + 78 = 80 dims, 12 actions; Humanoid: 2 + 67 = 69 dims, 21 actions.

Rendering is headless: ``MUJOCO_GL`` defaults to ``egl`` when unset (it must be set before dm_control is imported,
which this module does lazily, inside the constructors). The renderer is cheap by default (shadows, reflections and
multisampling off, one persistent camera), several times cheaper per frame on a CPU than dm_control's default
scene (timings in ``benchmarks/results/render_time``).

Environments pickle and deep-copy through ``EzPickle`` like the other metra environments: a copy is a fresh
environment built from the same constructor arguments.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.envs.call_checks import check_render_mode, check_reset_options
from metra_gym.envs.mujoco_gl import MujocoGLError, _gl_message, close_at_exit, configure_mujoco_gl
from metra_gym.registration import DMC_ACTION_REPEAT as ACTION_REPEAT  # control steps per policy step

FRAME_SIZE = 64  # pixels, square
FRAME_STACK = 3
FLOOR_SIZE = 30.0  # metres: the coloured floor spans [-15, 15]^2
OBS_TYPES = ("pixels", "state")
INSTALL_HINT = "install the dm_control extra: pip install 'metra-gym[dmc]'"
# Downstream goal tasks (paper appendix): goals uniform in [-r, r]^2, reward 10 and the end within 3 m.
GOAL_RANGES = {"quadruped": 7.5, "humanoid": 5.0}
UPRIGHT_NOISE = 0.02  # std of the noise on the Quadruped's initial quaternion (official METRA task)

class DmControlMissingError(ImportError):
    """dm_control or shimmy is not installed."""


def import_dm_control() -> tuple[Any, Any, Any]:
    """``(dm_control.suite, dm_control.mujoco.engine.Camera, shimmy's DmControlCompatibilityV0)``, with
    ``MUJOCO_GL`` configured first and one clear error for each way this can fail."""
    gl = configure_mujoco_gl()
    try:
        from dm_control import suite
        from dm_control.mujoco.engine import Camera
        from shimmy.dm_control_compatibility import DmControlCompatibilityV0
    except ModuleNotFoundError as error:
        raise DmControlMissingError(f"metra_gym's DeepMind Control environments need dm_control and shimmy "
                                    f"(cannot import {error.name!r}); {INSTALL_HINT}") from error
    except Exception as error:  # a backend whose library cannot load fails at import (osmesa without libosmesa6)
        raise MujocoGLError(_gl_message(gl, f"could not be loaded ({type(error).__name__}: {error})")) from error
    return suite, Camera, DmControlCompatibilityV0


def floor_gradient(height: int, width: int) -> np.ndarray:
    """The floor texture of pixel METRA: ``(H, W, 3)`` uint8 with R = 255 * row / H, G = 255 * col / W, B = 128."""
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[..., 0] = (255 * np.arange(height) / height).astype(np.uint8)[:, None]
    image[..., 1] = (255 * np.arange(width) / width).astype(np.uint8)[None, :]
    image[..., 2] = 128
    return image


def paint_floor(model: Any, floor_size: float = FLOOR_SIZE) -> None:
    """Overwrite the floor's texture in ``model`` (an ``MjModel``) with :func:`floor_gradient`, stretched once over a
    ``floor_size`` x ``floor_size`` m floor centred at the origin.

    In place, before the rendering context exists (it uploads textures when it is made; afterwards
    ``mujoco.mjr_uploadTexture`` would be needed). The floor stays infinite for collisions: a MuJoCo plane's size only
    bounds what is drawn.
    """
    import mujoco

    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    material = model.geom_matid[floor]
    texture = model.mat_texid[material, mujoco.mjtTextureRole.mjTEXROLE_RGB]
    if floor < 0 or material < 0 or texture < 0 or model.tex_nchannel[texture] != 3:
        raise RuntimeError("unexpected dm_control model: no floor geom with an RGB texture")
    users = [g for g in range(model.ngeom) if model.geom_matid[g] == material]
    if users != [floor]:
        raise RuntimeError(f"the floor's material is shared with geoms {users}; painting it would colour them too")
    model.geom_size[floor, :2] = floor_size / 2  # plane sizes are half-extents
    model.mat_texuniform[material] = 0  # texrepeat counts repetitions over the whole plane, not per metre
    model.mat_texrepeat[material] = (1.0, 1.0)
    height, width, start = model.tex_height[texture], model.tex_width[texture], model.tex_adr[texture]
    model.tex_data[start:start + height * width * 3] = floor_gradient(height, width).reshape(-1)


def cheapen_rendering(model: Any) -> None:
    """No shadows, no reflections, no multisampling (anti-aliasing): the costs of a software-rendered frame.
    Before the rendering context exists (``offsamples`` is read when it is made)."""
    model.light_castshadow[:] = 0
    model.mat_reflectance[:] = 0
    model.vis.quality.offsamples = 0


class DMCLocomotionEnv(gym.Env, EzPickle):
    """A dm_control locomotion task as METRA uses it (base class of :class:`MetraQuadrupedEnv` and
    :class:`MetraHumanoidEnv`).

    One step applies the action for ``action_repeat`` control steps and returns the sum of dm_control's rewards.
    dm_control's own time limit is switched off: the registered ids end an episode after 200 policy steps
    (400 control steps). Seeding: ``reset(seed=s)`` seeds dm_control's task (initial pose) and this env's
    ``np_random`` (task goals) from ``s``.

    :param obs_type: ``"pixels"`` (one ``(frame_size, frame_size, 3)`` uint8 render per step, no proprioception)
        or ``"state"`` (float32 torso x-y then dm_control's flat proprioception).
    :param action_repeat: control steps per step.
    :param frame_size: width and height of a rendered frame.
    :param cheap_render: shadows, reflections and anti-aliasing off (:func:`cheapen_rendering`).
    :param render_mode: ``None`` or ``"rgb_array"`` (``render()`` returns the observation camera's frame).
    """

    domain: str = ""
    task: str = "run"
    camera_id: int = 0
    metadata = {"render_modes": ["rgb_array"], "render_fps": 25}

    def __init__(self, obs_type: str = "pixels", action_repeat: int = ACTION_REPEAT, frame_size: int = FRAME_SIZE,
                 cheap_render: bool = True, render_mode: str | None = None) -> None:
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be 'pixels' ({FRAME_SIZE}x{FRAME_SIZE} renders, the paper's setting) "
                             f"or 'state' (flat proprioception), got {obs_type!r}")
        for name, value in (("action_repeat", action_repeat), ("frame_size", frame_size)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        suite, self._camera_class, compatibility = import_dm_control()
        self.obs_type, self.action_repeat, self.frame_size = obs_type, int(action_repeat), int(frame_size)
        self.cheap_render, self.render_mode = bool(cheap_render), render_mode
        dm_env = self._load(suite)
        self.physics = dm_env.physics
        model = self.physics.model
        if model.jnt_type[0] != 0 or model.id2name(model.jnt_bodyid[0], "body") != "torso":
            raise RuntimeError(f"unexpected dm_control {self.domain} model: joint 0 is not the torso's free joint")
        paint_floor(model.ptr)
        if self.cheap_render:
            cheapen_rendering(model)
        # Shimmy's Gymnasium layer over the dm_env; frames come from our own persistent camera (see _frame).
        self._dmc = compatibility(dm_env)
        self._task = dm_env.task
        self.dt = dm_env.control_timestep() * self.action_repeat
        self.metadata = {**self.metadata, "render_fps": 1.0 / self.dt}
        inner = self._dmc.action_space
        self.action_space = spaces.Box(inner.low.astype(np.float32), inner.high.astype(np.float32),
                                       dtype=np.float32)
        self.state_dim = 2 + self._dmc.observation_space["observations"].shape[0]
        if obs_type == "pixels":
            self.observation_space = spaces.Box(0, 255, (self.frame_size, self.frame_size, 3), np.uint8)
        else:
            self.observation_space = spaces.Box(-np.inf, np.inf, (self.state_dim,), np.float32)
        self._camera = None
        self._proprio: np.ndarray | None = None
        self._closed = False
        if obs_type == "pixels" or render_mode == "rgb_array":
            self._camera = self._make_camera()
        EzPickle.__init__(self, obs_type=obs_type, action_repeat=action_repeat, frame_size=frame_size,
                          cheap_render=cheap_render, render_mode=render_mode)

    @property
    def renderer(self) -> dict[str, Any]:
        """How frames are drawn: ``{"cheap_render": bool, "frame_size": int}``, the constructor arguments a skill
        checkpoint records so that its skills are run on the frames they were trained on."""
        return {"cheap_render": self.cheap_render, "frame_size": self.frame_size}

    def _load(self, suite: Any) -> Any:
        """The dm_control environment (a ``control.Environment``) with its own time limit switched off."""
        return suite.load(self.domain, self.task, task_kwargs={"time_limit": float("inf")},
                          environment_kwargs={"flat_observation": True})

    def _make_camera(self) -> Any:
        """A persistent camera (dm_control's ``physics.render`` builds a new scene every call); creating it creates
        the OpenGL context, so an unusable ``MUJOCO_GL`` fails here, once, with a clear message."""
        try:
            camera = self._camera_class(self.physics, height=self.frame_size, width=self.frame_size,
                                        camera_id=self.camera_id)
            camera.render()
        except Exception as error:
            raise MujocoGLError(_gl_message(os.environ.get("MUJOCO_GL", ""),
                                            f"cannot render here ({type(error).__name__}: {error})")) from error
        close_at_exit(self)
        return camera

    def _frame(self) -> np.ndarray:
        # Camera.render returns a flipped view of its own buffer: copy it.
        return np.array(self._camera.render(), dtype=np.uint8, copy=True)

    def coordinates(self) -> np.ndarray:
        """The torso's x-y (the free joint's position), float64."""
        return np.array(self.physics.data.qpos[:2], dtype=np.float64)

    def heading(self) -> float:
        """The torso's heading: the angle (radians) from the x axis to its forward axis projected on the ground. Not
        in the state observation, whose body entries are egocentric (dm_control's); the downstream variant
        ``paper_heading`` gives it to the controller (``pretrain/downstream/protocol.py``)."""
        xmat = self.physics.named.data.xmat["torso"]  # row-major 3 x 3: column 0 is the torso's x axis in the world
        return float(np.arctan2(xmat[3], xmat[0]))

    @property
    def observation_groups(self) -> dict[str, tuple[int, int]] | None:
        """Where each part of the state observation lies, ``{name: (start, stop)}``: ``torso_xy``, then dm_control's
        observation entries in their flat order (Humanoid: ``joint_angles``, ``head_height``, ``extremities``,
        ``torso_vertical``, ``com_velocity``, ``velocity``); None for pixels. Training logs how much phi depends on
        each (``phi/sensitivity_<name>``)."""
        if self.obs_type != "state":
            return None
        groups, start = {"torso_xy": (0, 2)}, 2
        for name, value in self._task.get_observation(self.physics).items():
            groups[name] = (start, start + int(np.size(value)))
            start += int(np.size(value))
        return groups

    def state(self) -> np.ndarray:
        """The state observation: torso x-y then dm_control's flat proprioception, float32."""
        return np.concatenate([self.coordinates(), self._proprio]).astype(np.float32)

    def _get_obs(self) -> np.ndarray:
        return self._frame() if self.obs_type == "pixels" else self.state()

    def _on_reset(self) -> None:
        """Hook for tasks: called after dm_control's reset, before the first observation."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        super().reset(seed=seed)
        obs, _ = self._dmc.reset(seed=seed)  # shimmy seeds the task's RandomState (the initial pose) with seed
        self._proprio = obs["observations"]
        self._on_reset()
        return self._get_obs(), {"coordinates": self.coordinates()}

    def step(self, action: np.ndarray):
        if self._proprio is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        action = np.asarray(action, dtype=np.float64)
        # dm_control would refuse it only after stepping, with a PhysicsError (mjWARN_BADCTRL) that leaves the
        # physics in a bad state; Gymnasium's MuJoCo envs would run on with NaN observations.
        if action.shape != self.action_space.shape or not np.all(np.isfinite(action)):
            raise ValueError(f"an action of {self.domain} must be {self.action_space.shape[0]} finite numbers, got "
                             f"{np.array2string(action, precision=3, threshold=8)}")
        reward, terminated, truncated = 0.0, False, False
        for _ in range(self.action_repeat):
            obs, step_reward, terminated, truncated, _ = self._dmc.step(action)
            reward += float(step_reward)
            if terminated or truncated:
                break
        self._proprio = obs["observations"]
        return self._get_obs(), reward, bool(terminated), bool(truncated), {"coordinates": self.coordinates()}

    def render(self) -> np.ndarray:
        check_render_mode(self.render_mode)
        if self._camera is None:
            self._camera = self._make_camera()
        return self._frame()

    def close(self) -> None:
        if not getattr(self, "_closed", True):
            self._closed = True
            self._camera = None
            self._dmc.close()


def upright_orientation(random: np.random.RandomState, noise: float = UPRIGHT_NOISE) -> np.ndarray:
    """The Quadruped's initial torso orientation in the official METRA task: the identity quaternion
    ``(1, 0, 0, 0)`` plus ``noise * N(0, 1)`` per component, normalised (a tilt of about a degree)."""
    orientation = np.array([1.0, 0.0, 0.0, 0.0]) + noise * random.randn(4)
    return orientation / np.linalg.norm(orientation)


def upright_quadruped_run(time_limit: float = float("inf"), random: Any = None,
                          environment_kwargs: dict[str, Any] | None = None) -> Any:
    """dm_control's ``quadruped.run`` (same model, floor, reward, control timestep) whose episodes start upright, as
    in the official METRA task (``envs/custom_dmc_tasks/quadruped.py``, ``Move.initialize_episode``:
    https://github.com/seohongpark/METRA). dm_control's stock task draws a uniformly random orientation instead,
    so about half of its episodes start on the back, where METRA's skills would first have to learn to roll over."""
    from dm_control.rl import control
    from dm_control.suite import base, common, quadruped

    class UprightMove(quadruped.Move):
        def initialize_episode(self, physics: Any) -> None:
            # Upright, then lowered to the lowest height without contacts (dm_control's helper).
            quadruped._find_non_contacting_height(physics, upright_orientation(self.random))
            base.Task.initialize_episode(self, physics)

    physics = quadruped.Physics.from_xml_string(
        quadruped.make_model(floor_size=quadruped._DEFAULT_TIME_LIMIT * quadruped._RUN_SPEED), common.ASSETS)
    task = UprightMove(desired_speed=quadruped._RUN_SPEED, random=random)
    return control.Environment(physics, task, time_limit=time_limit, control_timestep=quadruped._CONTROL_TIMESTEP,
                               **(environment_kwargs or {}))


class MetraQuadrupedEnv(DMCLocomotionEnv):
    """dm_control ``quadruped-run`` as in pixel METRA: reward for running at 5 m/s along the torso's heading (a
    run-forward style task; METRA ignores it), an upright start (:func:`upright_quadruped_run`, the official
    task's; dm_control's stock task starts in a random orientation), camera 2, action repeat 2.
    Registered as ``metra/Quadruped-v0`` (200 policy steps; pixels stacked 3 deep)."""

    domain, task, camera_id = "quadruped", "run", 2

    def _load(self, suite: Any) -> Any:
        return upright_quadruped_run(environment_kwargs={"flat_observation": True})


class MetraHumanoidEnv(DMCLocomotionEnv):
    """dm_control ``humanoid-run`` as in pixel METRA (camera 0, action repeat 2). The initial pose is dm_control's
    stock one, as in the official task: limited joints uniform in their ranges, a random torso orientation,
    redrawn until nothing penetrates (the official ``humanoid.py`` keeps this ``initialize_episode``).
    Registered as ``metra/Humanoid-v0`` (200 policy steps; pixels stacked 3 deep)."""

    domain, task, camera_id = "humanoid", "run", 0


def _no_task_reward(physics: Any) -> float:
    """Stands in for a dm_control task's ``get_reward`` where the env pays its own reward instead."""
    return 0.0


class _GoalTask:
    """Mixin: reach a goal x-y uniform in ``[-goal_range, goal_range]^2``; reward ``goal_reward`` and the end of the
    episode when the torso is within ``goal_radius``. The observation is the state observation followed by the goal
    relative to the torso (2-d); ``pretraining_obs_dim`` says where that task information starts. State
    observations only: the goal is appended to the state, and the skill checkpoints are state-based.

    :param goal_range: half-width of the goal square (default: the paper's for the robot, ``GOAL_RANGES``).
    :param goal_radius: distance to the goal that counts as reached (m).
    :param goal_reward: the reward when reached (the episode then ends).
    """

    robot: str  # the key of GOAL_RANGES

    def __init__(self, goal_range: float | None = None, goal_radius: float = 3.0, goal_reward: float = 10.0,
                 obs_type: str = "state", **kwargs: Any) -> None:
        if obs_type != "state":
            raise ValueError(f"{type(self).__name__} supports obs_type='state' only (the goal is appended to the state "
                             f"observation, and the skill checkpoints are state-based); got obs_type={obs_type!r}")
        goal_range = GOAL_RANGES[self.robot] if goal_range is None else goal_range
        super().__init__(obs_type=obs_type, **kwargs)  # the robot's env, next in the MRO
        self.goal_range, self.goal_radius, self.goal_reward = float(goal_range), float(goal_radius), float(goal_reward)
        self.goal = np.zeros(2)
        # The goal's reward replaces dm_control's run reward, so that is not computed at each control step (a step
        # takes 0.80x / 0.87x the time on Quadruped / Humanoid: benchmarks/README.md, "DMC goal tasks"); the
        # physics are the same.
        self._task.get_reward = _no_task_reward
        self.pretraining_obs_dim = self.observation_space.shape[0]
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.pretraining_obs_dim + 2,), np.float32)
        EzPickle.__init__(self, goal_range=goal_range, goal_radius=goal_radius, goal_reward=goal_reward,
                          obs_type=obs_type, **kwargs)

    def _on_reset(self) -> None:
        self.goal = self.np_random.uniform(-self.goal_range, self.goal_range, 2)

    def _get_obs(self) -> np.ndarray:
        return np.concatenate([self.state(), (self.goal - self.coordinates()).astype(np.float32)])

    def step(self, action: np.ndarray):
        obs, _, _, truncated, info = super().step(action)
        reached = bool(np.linalg.norm(self.coordinates() - self.goal) <= self.goal_radius)
        info.update(goal=self.goal.copy(), goal_reached=reached)
        return obs, self.goal_reward if reached else 0.0, reached, truncated, info


class QuadrupedGoalEnv(_GoalTask, MetraQuadrupedEnv):
    """QuadrupedGoal (paper appendix): goal uniform in [-7.5, 7.5]^2, reward 10 and the end within 3 m.
    State observations only (80 + 2 dims). Registered as ``metra/QuadrupedGoal-v0`` (200 policy steps)."""

    robot = "quadruped"


class HumanoidGoalEnv(_GoalTask, MetraHumanoidEnv):
    """HumanoidGoal (paper appendix): goal uniform in [-5, 5]^2, reward 10 and the end within 3 m.
    State observations only (69 + 2 dims). Registered as ``metra/HumanoidGoal-v0`` (200 policy steps)."""

    robot = "humanoid"


def _stacked(env: DMCLocomotionEnv, frame_stack: int) -> gym.Env:
    if env.obs_type != "pixels" or frame_stack == 1:
        return env
    from metra_gym.wrappers import ChannelStackObservation

    return ChannelStackObservation(env, frame_stack)


def make_quadruped(frame_stack: int = FRAME_STACK, **kwargs: Any) -> gym.Env:
    """Entry point of ``metra/Quadruped-v0``: :class:`MetraQuadrupedEnv`, pixel frames stacked ``frame_stack`` deep
    (``(64, 64, 9)`` uint8 by default; ``frame_stack=1`` for single frames). Keyword arguments go to the env."""
    return _stacked(MetraQuadrupedEnv(**kwargs), frame_stack)


def make_humanoid(frame_stack: int = FRAME_STACK, **kwargs: Any) -> gym.Env:
    """Entry point of ``metra/Humanoid-v0``: :class:`MetraHumanoidEnv`, pixel frames stacked ``frame_stack`` deep."""
    return _stacked(MetraHumanoidEnv(**kwargs), frame_stack)


# gym.make reads the render modes of an entry point from its metadata.
make_quadruped.metadata = MetraQuadrupedEnv.metadata
make_humanoid.metadata = MetraHumanoidEnv.metadata
