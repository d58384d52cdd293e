"""A narrowly scoped fix for gymnasium-robotics 1.4.x on MuJoCo >= 3.12, applied when metra/Kitchen-v0 is built.

gymnasium-robotics' ``utils.mujoco_utils.get_joint_qpos`` / ``get_joint_qvel`` check a joint's type with
``model.jnt_type[i] in (mjtJoint.mjJNT_HINGE, mjtJoint.mjJNT_SLIDE)``. From MuJoCo 3.12 on, ``mjtJoint`` members
no longer compare equal to numpy integers through ``in`` (``==`` still holds), so the assertion fails and
``FrankaKitchen-v1`` cannot even be built (1.4.2, the latest release, and the repository's head have the code).

The fix does not edit the installed package: it replaces the one name that the Franka kitchen calls,
``gymnasium_robotics.envs.franka_kitchen.franka_env.robot_get_obs`` (the robot's joint positions and velocities),
with :func:`robot_get_obs`, which reads the same entries by the joints' addresses and compares types as integers.
It is applied only while the installed package has the bug (:func:`joint_type_check_broken` probes it), so a fixed
release is left alone; ``tests/metra_gym/test_kitchen.py`` says when that happens and this module can go.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The smallest model with a hinge joint: what the buggy check refuses.
_PROBE_XML = """
<mujoco><worldbody><body><joint name="probe" type="hinge"/><geom size="0.1"/></body></worldbody></mujoco>
"""
_ROBOT_PREFIX = "robot"  # gymnasium-robotics' robot_get_obs reads the joints whose names start so


class PatchError(RuntimeError):
    """The installed gymnasium-robotics has the bug but not the name the fix replaces."""


def joint_type_check_broken() -> bool:
    """Whether the installed gymnasium-robotics' ``get_joint_qpos`` / ``get_joint_qvel`` refuse a hinge joint."""
    import mujoco
    from gymnasium_robotics.utils import mujoco_utils

    model = mujoco.MjModel.from_xml_string(_PROBE_XML)
    data = mujoco.MjData(model)
    try:
        mujoco_utils.get_joint_qpos(model, data, "probe")
        mujoco_utils.get_joint_qvel(model, data, "probe")
    except AssertionError:
        return True
    return False


def _joint_size(joint_type: int, velocity: bool) -> int:
    """Entries of one joint in qpos (or qvel): free 7 (6), ball 4 (3), hinge and slide 1."""
    import mujoco

    if joint_type == int(mujoco.mjtJoint.mjJNT_FREE):
        return 6 if velocity else 7
    if joint_type == int(mujoco.mjtJoint.mjJNT_BALL):
        return 3 if velocity else 4
    return 1


def robot_get_obs(model: Any, data: Any, joint_names: Any) -> tuple[np.ndarray, np.ndarray]:
    """gymnasium-robotics' ``robot_get_obs`` without the type check that fails on new MuJoCo: the positions and
    velocities of the joints whose names start with ``robot``, in the order of ``joint_names``."""
    import mujoco

    names = [name for name in joint_names or () if name.startswith(_ROBOT_PREFIX)]
    if data.qpos is None or not names:
        return np.zeros(0), np.zeros(0)
    positions, velocities = [], []
    for name in names:
        joint = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if joint < 0:
            raise ValueError(f"joint {name!r} is not part of the model")
        joint_type = int(model.jnt_type[joint])
        start = model.jnt_qposadr[joint]
        positions.append(data.qpos[start:start + _joint_size(joint_type, velocity=False)].copy())
        start = model.jnt_dofadr[joint]
        velocities.append(data.qvel[start:start + _joint_size(joint_type, velocity=True)].copy())
    # As the package returns them: squeezed arrays, (n_joints,) for 1-dof joints.
    return np.squeeze(np.array(positions)), np.squeeze(np.array(velocities))


def patch_franka_kitchen() -> bool:
    """Put :func:`robot_get_obs` in place of the Franka kitchen's while the installed gymnasium-robotics has the
    bug; once per process. Returns whether the fix is in place (False: the package works as installed).

    :raises PatchError: when the package has the bug but its Franka module no longer calls ``robot_get_obs``.
    """
    from gymnasium_robotics.envs.franka_kitchen import franka_env

    if getattr(franka_env, "robot_get_obs", None) is robot_get_obs:
        return True
    if not joint_type_check_broken():
        return False
    if not callable(getattr(franka_env, "robot_get_obs", None)):
        import gymnasium_robotics

        raise PatchError(f"gymnasium-robotics {gymnasium_robotics.__version__} refuses hinge joints on this MuJoCo "
                         "(get_joint_qpos), and metra_gym's fix no longer applies to it (franka_env.robot_get_obs "
                         "is gone); install gymnasium-robotics 1.4.x: pip install 'metra-gym[kitchen]'")
    franka_env.robot_get_obs = robot_get_obs
    return True
