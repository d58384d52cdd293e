"""Kitchen as METRA uses it (the LEXA / D4RL Franka kitchen), on gymnasium-robotics' ``FrankaKitchen-v1``.

The paper's setting (official code ``envs/lexa/mykitchen.py`` over LEXA's ``KitchenEnv``): the Franka kitchen with
end-effector control and a frame skip of 40 (0.08 s per step), 50-step episodes, 64 x 64 x 3 renders from the LEXA
camera (distance 1.86, look-at (-0.3, 0.5, 2.0), azimuth 90, elevation -60) stacked 3 deep, no observation noise,
and a metric that counts which of six tasks (Kettle, Microwave, Light Switch, Hinge Cabinet, Slide Cabinet, Bottom
Burner) any evaluation rollout achieves.

Here the scene, the robot and the frame skip are gymnasium-robotics' (the same kitchen model and qpos layout as
D4RL's; its sim step is 2 ms, so 40 sub-steps make the same 0.08 s). What differs from the paper:

- **Control.** ``control="mocap"`` (default) is LEXA's end-effector control (``control_mode="end_effector"``,
  D4RL-LEXA ``kitchen_multitask_v0.py``, ``KitchenV0.step`` / ``_set_action`` / ``mocap_set_action``), built on
  gymnasium-robotics' model when the env is made: :func:`add_mocap_weld` adds, through ``mujoco.MjSpec`` (no copied
  XML, no edit of the installed package), a mocap body welded to the hand (``panda0_link7``; weld ``solref
  (0.02, 1)``, ``solimp (0.9, 0.95, 0.001)``, relative pose the identity, as LEXA's ``reset_mocap_welds`` sets it).
  An action is 7-d in [-1, 1]; at each of the 40 sub-steps the mocap body is put at the hand's current position plus
  ``MOCAP_POSITION_SCALE`` (0.05 m) x ``a[:3]`` and at the hand's current orientation plus ``MOCAP_ROTATION_SCALE``
  (0.05) x (target - current) as a quaternion, where the target is the hand's orientation at the start of the step
  with ``a[3:6]`` subtracted from its z-y-z Euler angles (LEXA's ``quat_to_rpy`` / ``rpy_to_quat`` are
  numpy-quaternion's ``as_euler_angles`` / ``from_euler_angles``, z-y-z despite the name; :func:`zyz_euler` and
  :func:`quat_from_zyz` are the same maps); the gripper's position servos get ``ctrl = a[6]`` and ``-a[6]`` (clipped
  by MuJoCo to their range [0, 0.04]: a positive ``a[6]`` opens one finger and closes the other, as in LEXA). The
  arm's own position servos are not driven: their targets stay at 0 as in LEXA, where nothing sets them, so they pull
  on the arm with up to 87 / 12 N m, which the weld overrules; a zero action does not hold the hand still (the mocap
  follows the hand). Bodies, the weld and the gripper's actuators are looked up by name (LEXA hard-codes body 10 and
  ``ctrl[7]``, ``ctrl[8]``). Measured at full command from the reset pose: 0.05-0.11 m per step
  (``benchmarks/results/kitchen/reach.json``), as LEXA's model emulated on MuJoCo 3 (0.06-0.09 m).
  What still differs from LEXA: MuJoCo 3's solver instead of MuJoCo 2.0 under mujoco_py (the weld's softness
  parameters mean the same; contacts and the constraint solver have changed since), and gymnasium-robotics' copy of
  the model (the same bodies, joints, actuators and initial state; LEXA's also has an unused ``panda0_end_effector``
  body and a gripper camera, no dynamics).
  ``control="end_effector_ik"`` is this package's earlier controller, kept for comparison: a Cartesian velocity of
  the ``end_effector`` site (``a[:3]``, ``EE_SPEED`` m/s at 1) and an angular velocity of the hand (``a[3:6]``,
  ``EE_ANGULAR_SPEED`` rad/s at 1) turned into gymnasium-robotics' joint velocities by damped least squares, once per
  step, for the package's joint position servos (capped at 87 / 12 N m, joint damping 100 / 10): the hand moves
  0.02-0.03 m per step, a third of LEXA's. ``control="joint_velocity"`` passes the package's own 9-d action through.
- **Success criteria.** The task flags follow LEXA's (``task_criteria="lexa"``, the paper's metric), which are not
  gymnasium-robotics' own: LEXA counts the hinge cabinet open at 0.3-0.7 rad, the microwave at -0.7 to -0.3 rad,
  the kettle's x-y within 0.2 m of the top-left burner, and the *bottom right* burner's knob (qpos 9) turned past
  -0.38; gymnasium-robotics counts a task when the norm of its joints' distance to its goal is below 0.3 (hinge
  1.45 rad, microwave -0.75 rad, the kettle's full 7-d pose, the *bottom left* burner's knob and joint, qpos 11-12).
  ``task_criteria="gymnasium_robotics"`` uses the package's goals and threshold instead.
- The kitchen's initial state is the package's (the same as LEXA's); observation noise is off as in LEXA.

``info`` holds ``coordinates`` (the end-effector site's x-y in metres, float64: what the generic coverage metrics and
trajectory plots read; METRA's code logged the first two joint angles there) and ``task_success``
(:data:`metra_gym.registration.TASK_SUCCESS_KEY`): a dict of the six tasks (in :data:`TASKS` order) to whether the
current state achieves them. The reward is the number of ``tasks`` achieved for the first time in the episode at this
step (sparse, as ``FrankaKitchen-v1``'s); METRA ignores it.

``obs_type="pixels"`` (default) gives one ``(64, 64, 3)`` uint8 render per step; the registered id stacks 3 with
:class:`metra_gym.wrappers.ChannelStackObservation`. ``obs_type="state"`` gives a flat float32 vector of 62: the
end-effector site's x-y-z, then ``FrankaKitchen-v1``'s ``observation`` entry (robot joint positions 9 and velocities
9, object positions 21 and velocities 20). Its nested ``achieved_goal`` / ``desired_goal`` dicts are left out: the
first repeats object positions already there, the second is constant.

Rendering is headless (``MUJOCO_GL`` defaults to ``egl``) and cheap by default (no shadows, reflections or
multisampling). A software-rendered frame stays costly all the same, since the Franka's visual meshes have 134,000
triangles (timings in ``benchmarks/results/kitchen``): pixel Kitchen is a GPU setting. Environments pickle and deep-copy through ``EzPickle``. Needs the ``kitchen`` extra:
``pip install 'metra-gym[kitchen]'``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.envs.call_checks import check_render_mode, check_reset_options
from metra_gym.envs.dmc import FRAME_SIZE, FRAME_STACK, OBS_TYPES, _stacked, cheapen_rendering
from metra_gym.envs.mujoco_gl import MujocoGLError, _gl_message, close_at_exit, configure_mujoco_gl
from metra_gym.registration import TASK_SUCCESS_KEY

INSTALL_HINT = "install the kitchen extra: pip install 'metra-gym[kitchen]'"
CONTROLS = ("mocap", "end_effector_ik", "joint_velocity")
# Names of earlier releases: what each is called now.
RENAMED_CONTROLS = {"end_effector": "end_effector_ik"}
TASK_CRITERIA = ("lexa", "gymnasium_robotics")
FRAME_SKIP = 40  # sim steps of 2 ms per step (the paper's and the package's)
# The LEXA camera (lexa_envs/kitchen.py), as the free camera of gymnasium's MuJoCo renderer.
LEXA_CAMERA = {"distance": 1.86, "lookat": np.array([-0.3, 0.5, 2.0]), "azimuth": 90.0, "elevation": -60.0}
# End-effector control: the Cartesian and angular speeds of an action of 1, and the damping of the least squares
# (metres; it keeps the joint velocities bounded near singular poses).
EE_SPEED = 1.0
EE_ANGULAR_SPEED = 1.0
IK_DAMPING = 0.05
EE_SITE = "end_effector"
ARM_JOINTS = 7  # the arm's dofs lead qvel; the two fingers follow
ROBOT_DOFS = 9
# LEXA's mocap control (kitchen_multitask_v0.py): the welded hand, the weld's softness, the per-sub-step offsets
# (``_set_action``: pos_ctrl *= 0.05, rot_ctrl *= 0.05) and the gripper's actuators (LEXA's ctrl[7], ctrl[8]).
MOCAP_BODY = "mocap"
WELD_BODY = "panda0_link7"
WELD_SOLREF = (0.02, 1.0)
WELD_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)  # LEXA gives the first three; MuJoCo's defaults complete them
MOCAP_POSITION_SCALE = 0.05
MOCAP_ROTATION_SCALE = 0.05
GRIPPER_ACTUATORS = ("r_gripper_finger_joint", "l_gripper_finger_joint")  # get a[6] and -a[6]


@dataclass(frozen=True)
class KitchenTask:
    """One of the six tasks: LEXA's goal state and success criterion, and gymnasium-robotics' name for it.

    :param name: the paper's name.
    :param package_name: gymnasium-robotics' (its ``OBS_ELEMENT_GOALS`` key).
    :param goal_qpos: LEXA's goal state: these qpos entries set, the rest of the initial state kept.
    :param indices: the qpos entries LEXA's criterion reads.
    :param target: what they are compared with.
    :param tolerance: achieved within this distance (norm) of ``target``; None: achieved below ``target`` (a knob or
        switch turned past a point).
    """

    name: str
    package_name: str
    goal_qpos: dict[int, float]
    indices: tuple[int, ...]
    target: tuple[float, ...]
    tolerance: float | None

    def achieved(self, qpos: np.ndarray) -> bool:
        """LEXA's criterion (``lexa_envs/kitchen.py``, ``compute_success``) on a qpos."""
        values = np.asarray(qpos)[list(self.indices)]
        if self.tolerance is None:
            return bool(np.all(values < np.asarray(self.target)))
        return bool(np.linalg.norm(values - np.asarray(self.target)) < self.tolerance)


# In the paper's order. qpos: 0-8 robot, 9-16 burner knobs and burners (9 = bottom right knob), 17-18 light switch,
# 19 slide cabinet, 20-21 hinge cabinet (left, right door), 22 microwave, 23-29 kettle (x, y, z, quaternion).
KITCHEN_TASKS = (
    KitchenTask("Kettle", "kettle", {23: -0.23, 24: 0.75, 25: 1.62}, (23, 24), (-0.23, 0.75), 0.2),
    KitchenTask("Microwave", "microwave", {22: -0.5}, (22,), (-0.5,), 0.2),
    KitchenTask("Light Switch", "light switch", {17: -0.69, 18: -0.05}, (17,), (-0.25,), None),
    KitchenTask("Hinge Cabinet", "hinge cabinet", {20: 0.0, 21: 0.5}, (21,), (0.5,), 0.2),
    KitchenTask("Slide Cabinet", "slide cabinet", {19: 0.37}, (19,), (0.37,), 0.1),
    KitchenTask("Bottom Burner", "bottom burner", {9: -0.88, 10: -0.01}, (9,), (-0.38,), None),
)
TASKS = tuple(task.name for task in KITCHEN_TASKS)
_TASK_BY_NAME = {task.name: task for task in KITCHEN_TASKS}


class KitchenMissingError(ImportError):
    """gymnasium-robotics is not installed."""


def import_kitchen() -> Any:
    """gymnasium-robotics' ``kitchen_env`` module, with ``MUJOCO_GL`` configured, the MuJoCo fix in place
    (:mod:`metra_gym.envs.robotics_patch`) and one clear error when the package is missing."""
    configure_mujoco_gl()
    try:
        # gymnasium-robotics prints a notice about its Adroit envs' rewards to stderr at import, in every process
        # (each collector worker): it concerns no Kitchen env, so it is dropped; anything else printed is kept.
        printed = io.StringIO()
        try:
            with contextlib.redirect_stderr(printed):
                from gymnasium_robotics.envs.franka_kitchen import kitchen_env
        finally:  # also when the import fails: what it printed may say why
            sys.stderr.write("".join(line for line in printed.getvalue().splitlines(keepends=True)
                                     if not line.startswith("AdroitHandRelocateDense-v1")))
    except ModuleNotFoundError as error:
        raise KitchenMissingError(f"metra/Kitchen-v0 runs on gymnasium-robotics' FrankaKitchen-v1 (cannot import "
                                  f"{error.name!r}); {INSTALL_HINT}") from error
    from metra_gym.envs.robotics_patch import patch_franka_kitchen

    patch_franka_kitchen()
    return kitchen_env


def task_named(name: str) -> KitchenTask:
    """The task of a paper name (``"Kettle"``, ...), or a ValueError listing the six."""
    if name not in _TASK_BY_NAME:
        raise ValueError(f"unknown Kitchen task {name!r}; the tasks are {list(TASKS)}")
    return _TASK_BY_NAME[name]


class KitchenModelError(RuntimeError):
    """The installed gymnasium-robotics' kitchen model lacks what the mocap control is built on."""


def zyz_euler(quat: np.ndarray) -> np.ndarray:
    """z-y-z Euler angles (alpha, beta, gamma) of a unit quaternion (w, x, y, z): numpy-quaternion's
    ``as_euler_angles``, which LEXA calls ``quat_to_rpy``. The quaternion is ``exp(alpha z/2) exp(beta y/2)
    exp(gamma z/2)``."""
    w, x, y, z = np.asarray(quat, dtype=np.float64)
    about_z, about_y = np.arctan2(z, w), np.arctan2(-x, y)
    cos_half_beta = np.sqrt(np.clip((w * w + z * z) / (w * w + x * x + y * y + z * z), 0.0, 1.0))
    return np.array([about_z + about_y, 2.0 * np.arccos(cos_half_beta), about_z - about_y])


def quat_from_zyz(angles: np.ndarray) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of z-y-z Euler angles: numpy-quaternion's ``from_euler_angles`` (LEXA's
    ``rpy_to_quat`` followed by its ``convert_xyzw_to_wxyz``)."""
    alpha, beta, gamma = np.asarray(angles, dtype=np.float64)
    return np.array([np.cos(beta / 2) * np.cos((alpha + gamma) / 2), -np.sin(beta / 2) * np.sin((alpha - gamma) / 2),
                     np.sin(beta / 2) * np.cos((alpha - gamma) / 2), np.cos(beta / 2) * np.sin((alpha + gamma) / 2)])


def add_mocap_weld(model_path: str) -> Any:
    """gymnasium-robotics' kitchen model (the XML at ``model_path``) with LEXA's mocap body welded to the hand, compiled
    with ``mujoco.MjSpec``; the installed files are read, not changed.

    :raises KitchenModelError: when the model lacks the hand body or the gripper's actuators, or already has a body
        named like the mocap body.
    """
    import mujoco

    spec = mujoco.MjSpec.from_file(model_path)
    actuators = {actuator.name for actuator in spec.actuators}
    missing = [f"body {WELD_BODY!r}"] * (spec.body(WELD_BODY) is None) + [
        f"actuator {name!r}" for name in GRIPPER_ACTUATORS if name not in actuators]
    if missing or spec.body(MOCAP_BODY) is not None:
        problem = f"lacks {' and '.join(missing)}" if missing else f"already has a body named {MOCAP_BODY!r}"
        raise KitchenModelError(f"the kitchen model of this gymnasium-robotics ({model_path}) {problem}, which "
                                f"control='mocap' (LEXA's end-effector control) is built on; {INSTALL_HINT} "
                                f"(1.4.x has them), or pass control='joint_velocity'")
    spec.worldbody.add_body(name=MOCAP_BODY, mocap=True)
    weld = spec.add_equality(type=mujoco.mjtEq.mjEQ_WELD, objtype=mujoco.mjtObj.mjOBJ_BODY, name1=MOCAP_BODY,
                             name2=WELD_BODY)
    weld.solref, weld.solimp = list(WELD_SOLREF), list(WELD_SOLIMP)
    # anchor (3), relative position (3), relative orientation (4: the identity), torque scale, unused: LEXA's
    # reset_mocap_welds sets the relative pose to the identity, so the hand follows the mocap body itself.
    weld.data = np.array([0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0], dtype=np.float64)
    return spec.compile()


class MetraKitchenEnv(gym.Env, EzPickle):
    """The Franka kitchen as METRA uses it (see the module docstring for what differs from the paper's).
    Registered as ``metra/Kitchen-v0`` (50 steps; pixels stacked 3 deep).

    :param obs_type: ``"pixels"`` (one ``(frame_size, frame_size, 3)`` uint8 render from the LEXA camera per step)
        or ``"state"`` (float32: end-effector x-y-z, then the robot's and objects' positions and velocities).
    :param control: ``"mocap"`` (LEXA's end-effector control, the paper's: 7-d, a welded mocap body's position and
        orientation offsets and the gripper), ``"end_effector_ik"`` (the same 7-d action through inverse kinematics on
        the package's joint servos; a third of LEXA's speed) or ``"joint_velocity"`` (gymnasium-robotics' 9-d joint
        velocities).
    :param task_criteria: ``"lexa"`` (the paper's task flags) or ``"gymnasium_robotics"`` (the package's).
    :param tasks: the tasks whose first achievement the reward counts (paper names; default all six).
    :param frame_size: width and height of a rendered frame.
    :param cheap_render: shadows, reflections and anti-aliasing off.
    :param render_mode: ``None`` or ``"rgb_array"`` (``render()`` returns the observation camera's frame).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1 / 0.08}

    def __init__(self, obs_type: str = "pixels", control: str = "mocap", task_criteria: str = "lexa",
                 tasks: Sequence[str] | None = None, frame_size: int = FRAME_SIZE, cheap_render: bool = True,
                 render_mode: str | None = None) -> None:
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be 'pixels' ({FRAME_SIZE}x{FRAME_SIZE} renders, the paper's setting) "
                             f"or 'state' (robot and object state), got {obs_type!r}")
        if control in RENAMED_CONTROLS:
            raise ValueError(f"control {control!r} is now called {RENAMED_CONTROLS[control]!r} (inverse kinematics on "
                             f"gymnasium-robotics' joint servos); the paper's control, LEXA's mocap end-effector "
                             f"control, is 'mocap' (the default)")
        for name, value, choices in (("control", control, CONTROLS), ("task_criteria", task_criteria, TASK_CRITERIA)):
            if value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        if isinstance(tasks, str) or not (tasks is None or isinstance(tasks, Sequence)):
            raise ValueError(f"tasks must be a list of task names, e.g. ['Kettle'], got {tasks!r}")
        reward_tasks = tuple(TASKS if tasks is None else tasks)
        for name in reward_tasks:
            task_named(name)
        if isinstance(frame_size, (bool, np.bool_)) or not isinstance(frame_size, (int, np.integer)) \
                or frame_size < 1:
            raise ValueError(f"frame_size must be an integer >= 1, got {frame_size!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        kitchen_env = import_kitchen()
        import mujoco

        self._mujoco = mujoco
        self.obs_type, self.control, self.task_criteria = obs_type, control, task_criteria
        self.reward_tasks, self.frame_size = reward_tasks, int(frame_size)
        self.cheap_render, self.render_mode = bool(cheap_render), render_mode
        renders = obs_type == "pixels" or render_mode == "rgb_array"
        self._kitchen = kitchen_env.KitchenEnv(
            tasks_to_complete=[task.package_name for task in KITCHEN_TASKS], terminate_on_tasks_completed=False,
            remove_task_when_completed=False, object_noise_ratio=0.0, robot_noise_ratio=0.0, frame_skip=FRAME_SKIP,
            render_mode="rgb_array" if renders else None, width=self.frame_size, height=self.frame_size,
            default_camera_config=LEXA_CAMERA)
        if control == "mocap":
            self._use_model(add_mocap_weld(self._kitchen.robot_env.fullpath))
        self._package_goals = {task.name: (kitchen_env.OBS_ELEMENT_INDICES[task.package_name],
                                           kitchen_env.OBS_ELEMENT_GOALS[task.package_name])
                               for task in KITCHEN_TASKS}
        self._package_threshold = float(kitchen_env.BONUS_THRESH)
        self.model, self.data = self._kitchen.model, self._kitchen.data
        # Before the renderer's context exists (made at the first frame). The model asks for a 2560 x 1920 offscreen
        # buffer (8x multisampled) and 4096^2 shadow maps, which a software renderer pays for at every frame.
        self.model.vis.global_.offwidth = self.model.vis.global_.offheight = self.frame_size
        if self.cheap_render:
            cheapen_rendering(self.model)
            self.model.vis.quality.shadowsize = 0
        self._site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, EE_SITE)
        if control == "mocap":
            self._hand = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, WELD_BODY)
            self._mocap = int(self.model.body_mocapid[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY,
                                                                        MOCAP_BODY)])
            self._gripper = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
                             for name in GRIPPER_ACTUATORS]
        if self._site < 0 or self.model.nq != 30 or self.model.nv != 29:
            raise RuntimeError("unexpected FrankaKitchen-v1 model: no end_effector site, or not the kitchen's "
                               f"30 qpos / 29 qvel (got {self.model.nq} / {self.model.nv})")
        self.dt = float(self._kitchen.robot_env.dt)
        self.metadata = {**self.metadata, "render_fps": 1.0 / self.dt}
        # The package reads a joint-velocity action a in [-1, 1] as a * act_rng rad/s (m/s for the fingers).
        self._joint_speed = np.asarray(self._kitchen.robot_env.act_rng, dtype=np.float64)
        action_dim = ROBOT_DOFS if control == "joint_velocity" else 7
        self.action_space = spaces.Box(-1.0, 1.0, (action_dim,), np.float32)
        self.state_dim = 3 + self.model.nq + self.model.nv
        if obs_type == "pixels":
            self.observation_space = spaces.Box(0, 255, (self.frame_size, self.frame_size, 3), np.uint8)
        else:
            self.observation_space = spaces.Box(-np.inf, np.inf, (self.state_dim,), np.float32)
        self._jacobian = np.zeros((6, self.model.nv))
        self._achieved: set[str] = set()
        self._needs_reset = True
        self._closed = False
        if renders:
            self._check_rendering()
        EzPickle.__init__(self, obs_type=obs_type, control=control, task_criteria=task_criteria, tasks=tasks,
                          frame_size=frame_size, cheap_render=cheap_render, render_mode=render_mode)

    # --- the scene -----------------------------------------------------------------------------------------

    def _use_model(self, model: Any) -> None:
        """Put ``model`` (the package's with the mocap weld) in place of the package's own before anything used it:
        in the package's robot env, its kitchen env and its renderer (which makes its viewers at the first frame)."""
        robot_env = self._kitchen.robot_env
        data = self._mujoco.MjData(model)
        model.vis.global_.offwidth, model.vis.global_.offheight = robot_env.model.vis.global_.offwidth, \
            robot_env.model.vis.global_.offheight
        robot_env.model = self._kitchen.model = robot_env.mujoco_renderer.model = model
        robot_env.data = self._kitchen.data = robot_env.mujoco_renderer.data = data
        robot_env.init_qvel = np.zeros(model.nv)

    def _check_rendering(self) -> None:
        """Render once, so that an unusable ``MUJOCO_GL`` fails here, once, with the fix (the package makes its
        OpenGL context at the first frame)."""
        try:
            self._frame()
        except Exception as error:
            raise MujocoGLError(_gl_message(os.environ.get("MUJOCO_GL", ""),
                                            f"cannot render here ({type(error).__name__}: {error})")) from error
        close_at_exit(self)  # the context now exists: closed at exit before EGL is terminated

    def _frame(self) -> np.ndarray:
        return np.array(self._kitchen.render(), dtype=np.uint8, copy=True)

    def end_effector(self) -> np.ndarray:
        """The ``end_effector`` site's x-y-z (m), float64."""
        return self.data.site_xpos[self._site].copy()

    def coordinates(self) -> np.ndarray:
        """The end-effector site's x-y (m), float64: ``info["coordinates"]``."""
        return self.end_effector()[:2]

    def state(self) -> np.ndarray:
        """The state observation: end-effector x-y-z, robot qpos (9), robot qvel (9), object qpos (21), object qvel
        (20), float32. The last 59 are ``FrankaKitchen-v1``'s ``observation`` entry without its noise."""
        qpos, qvel = self.data.qpos, self.data.qvel
        return np.concatenate([self.end_effector(), qpos[:ROBOT_DOFS], qvel[:ROBOT_DOFS], qpos[ROBOT_DOFS:],
                               qvel[ROBOT_DOFS:]]).astype(np.float32)

    @property
    def observation_groups(self) -> dict[str, tuple[int, int]] | None:
        """Where each part of the state observation lies, ``{name: (start, stop)}`` (None for pixels). Training logs
        how much phi depends on each (``phi/sensitivity_<name>``): whether it reads the objects or the arm only."""
        if self.obs_type != "state":
            return None
        sizes = {"end_effector": 3, "robot_qpos": ROBOT_DOFS, "robot_qvel": ROBOT_DOFS,
                 "object_qpos": self.model.nq - ROBOT_DOFS, "object_qvel": self.model.nv - ROBOT_DOFS}
        bounds = np.cumsum([0, *sizes.values()])
        return {name: (int(start), int(stop)) for name, start, stop in zip(sizes, bounds[:-1], bounds[1:])}

    def _get_obs(self) -> np.ndarray:
        return self._frame() if self.obs_type == "pixels" else self.state()

    def task_success(self, qpos: np.ndarray | None = None) -> dict[str, bool]:
        """Whether ``qpos`` (default: the current state) achieves each of the six tasks, by ``task_criteria``."""
        qpos = self.data.qpos if qpos is None else np.asarray(qpos)
        if self.task_criteria == "lexa":
            return {task.name: task.achieved(qpos) for task in KITCHEN_TASKS}
        return {name: bool(np.linalg.norm(qpos[indices] - goal) < self._package_threshold)
                for name, (indices, goal) in self._package_goals.items()}

    def _sync(self) -> None:
        """Positions of bodies and sites for the current qpos (``mj_step`` leaves them one sub-step behind)."""
        self._mujoco.mj_kinematics(self.model, self.data)
        self._mujoco.mj_comPos(self.model, self.data)

    def _info(self) -> dict[str, Any]:
        return {"coordinates": self.coordinates(), TASK_SUCCESS_KEY: self.task_success()}

    def initial_qpos(self) -> np.ndarray:
        """The kitchen's initial state (gymnasium-robotics' and LEXA's)."""
        return np.array(self._kitchen.robot_env.init_qpos, dtype=np.float64)

    def goal_qpos(self, task: str) -> np.ndarray:
        """LEXA's goal state of ``task``: the initial state with the task's objects moved to their goal."""
        qpos = self.initial_qpos()
        for index, value in task_named(task).goal_qpos.items():
            qpos[index] = value
        return qpos

    def observation_at(self, qpos: np.ndarray) -> np.ndarray:
        """The observation (state vector or frame) of the scene at ``qpos`` at rest; the current state is kept."""
        saved_qpos, saved_qvel = self.data.qpos.copy(), self.data.qvel.copy()
        try:
            self.data.qpos[:] = qpos
            self.data.qvel[:] = 0.0
            self._mujoco.mj_forward(self.model, self.data)
            return self._get_obs()
        finally:
            self.data.qpos[:], self.data.qvel[:] = saved_qpos, saved_qvel
            self._mujoco.mj_forward(self.model, self.data)

    def goal_observation(self, task: str) -> np.ndarray:
        """The observation of ``task``'s goal state (:meth:`goal_qpos`): zero-shot goal reaching's goal."""
        return self.observation_at(self.goal_qpos(task))

    # --- control -------------------------------------------------------------------------------------------

    def _step_mocap(self, action: np.ndarray) -> None:
        """One step of LEXA's end-effector control (``KitchenV0.step`` with ``control_mode="end_effector"``): 40
        sub-steps, each putting the mocap body at an offset from the hand's current pose."""
        mujoco, model, data = self._mujoco, self.model, self.data
        target = quat_from_zyz(zyz_euler(data.xquat[self._hand]) - action[3:6])  # fixed for the step, as LEXA's
        data.ctrl[self._gripper] = (action[6], -action[6])
        for _ in range(FRAME_SKIP):
            # The hand's pose as the last sub-step left it (mj_step's kinematics precede its integration, as in LEXA).
            hand_quat = data.xquat[self._hand]
            data.mocap_pos[self._mocap] = data.xpos[self._hand] + MOCAP_POSITION_SCALE * action[:3]
            data.mocap_quat[self._mocap] = hand_quat + MOCAP_ROTATION_SCALE * (target - hand_quat)
            mujoco.mj_step(model, data)

    def joint_action(self, action: np.ndarray) -> np.ndarray:
        """The package's 9-d joint-velocity action for a 7-d end-effector action (damped least squares on the
        end-effector site's Jacobian at the current state), scaled down as a whole if a joint would exceed its
        speed, so that the hand keeps the commanded direction."""
        mujoco = self._mujoco
        twist = np.concatenate([action[:3] * EE_SPEED, action[3:6] * EE_ANGULAR_SPEED])
        mujoco.mj_jacSite(self.model, self.data, self._jacobian[:3], self._jacobian[3:], self._site)
        jacobian = self._jacobian[:, :ARM_JOINTS]
        velocity = jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + IK_DAMPING ** 2 * np.eye(6), twist)
        arm = velocity / self._joint_speed[:ARM_JOINTS]
        arm /= max(1.0, float(np.max(np.abs(arm))))
        return np.concatenate([arm, [action[6], action[6]]])

    # --- gymnasium ------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        super().reset(seed=seed)
        self._kitchen.reset(seed=seed)
        self._sync()
        if self.control == "mocap":  # LEXA's reset_mocap2body_xpos: the weld holds at the reset pose
            self.data.mocap_pos[self._mocap] = self.data.xpos[self._hand]
            self.data.mocap_quat[self._mocap] = self.data.xquat[self._hand]
        self._achieved = {name for name, done in self.task_success().items() if done}
        self._needs_reset = False
        return self._get_obs(), self._info()

    def step(self, action: np.ndarray):
        if self._needs_reset:
            raise gym.error.ResetNeeded("call reset() before step()")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != self.action_space.shape or not np.all(np.isfinite(action)):
            raise ValueError(f"an action of metra/Kitchen-v0 with control={self.control!r} must be "
                             f"{self.action_space.shape[0]} finite numbers, got shape {action.shape}"
                             + ("" if action.shape != self.action_space.shape else f": {action.tolist()}"))
        action = np.clip(action, -1.0, 1.0)
        if self.control == "mocap":
            self._step_mocap(action)
        else:
            self._kitchen.step(self.joint_action(action) if self.control == "end_effector_ik" else action)
        self._sync()
        info = self._info()
        new = {name for name, done in info[TASK_SUCCESS_KEY].items() if done} - self._achieved
        self._achieved |= new
        reward = float(len(new & set(self.reward_tasks)))
        return self._get_obs(), reward, False, False, info

    def render(self) -> np.ndarray:
        check_render_mode(self.render_mode)
        return self._frame()

    def close(self) -> None:
        if not getattr(self, "_closed", True):
            self._closed = True
            self._kitchen.close()


def make_kitchen(frame_stack: int = FRAME_STACK, **kwargs: Any) -> gym.Env:
    """Entry point of ``metra/Kitchen-v0``: :class:`MetraKitchenEnv`, pixel frames stacked ``frame_stack`` deep
    (``(64, 64, 9)`` uint8 by default; ``frame_stack=1`` for single frames). Keyword arguments go to the env."""
    return _stacked(MetraKitchenEnv(**kwargs), frame_stack)


make_kitchen.metadata = MetraKitchenEnv.metadata  # gym.make reads the render modes of an entry point from it
