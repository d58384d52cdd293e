"""Kitchen (METRA's manipulation benchmark) on gymnasium-robotics' FrankaKitchen-v1: the env, its six task flags,
the MuJoCo fix for gymnasium-robotics 1.4.x, the skill-level id and bad input."""

import copy
import json
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metra_gym  # noqa: F401
from metra_gym import registration
from metra_gym.registration import TASK_SUCCESS_KEY
from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.wrappers import ChannelStackObservation

pytest.importorskip("gymnasium_robotics")

from metra_gym.envs import kitchen, robotics_patch  # noqa: E402
from tests.metra_gym.helpers import heavy_modules_after, random_skill_policy

STATE_DIM, EE_ACTIONS = 62, 7


@pytest.fixture(scope="module")
def env():
    env = kitchen.MetraKitchenEnv(obs_type="state")
    yield env
    env.close()


def _set_qpos(env, qpos):
    import mujoco

    env.data.qpos[:] = qpos
    env.data.qvel[:] = 0.0
    mujoco.mj_forward(env.model, env.data)


def test_registration_says_the_papers_numbers():
    assert gym.spec("metra/Kitchen-v0").max_episode_steps == 50
    spec = gym.spec("metra/KitchenSkills-v0")
    assert spec.entry_point == "metra_gym.skill_env:SkillEnv" and spec.max_episode_steps == 8
    assert spec.kwargs == {"env": "metra/Kitchen-v0", "checkpoint": "kitchen_state", "env_kwargs": {"obs_type": "state"}}
    assert {"metra/Kitchen-v0", "metra/KitchenSkills-v0"} <= registration.metra_env_ids()
    assert kitchen.TASKS == ("Kettle", "Microwave", "Light Switch", "Hinge Cabinet", "Slide Cabinet", "Bottom Burner")


def test_making_the_env_prints_nothing_about_other_envs():
    """gymnasium-robotics prints a notice on its Adroit envs at import, once per process (every collector worker)."""
    done = subprocess.run([sys.executable, "-c", "import gymnasium as gym, metra_gym; "
                           "gym.make('metra/Kitchen-v0', obs_type='state').reset(seed=0)"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Adroit" not in done.stderr + done.stdout


def test_import_of_the_kitchen_module_stays_light():
    assert heavy_modules_after("metra_gym, metra_gym.envs.kitchen, metra_gym.envs.robotics_patch", "metra/Kitchen-v0", ('torch', 'mujoco', 'gymnasium_robotics')) == []


@pytest.mark.parametrize(("control", "action_dim"), [("mocap", EE_ACTIONS), ("end_effector_ik", EE_ACTIONS),
                                                     ("joint_velocity", 9)])
def test_state_id_passes_the_checker(control, action_dim):
    env = gym.make("metra/Kitchen-v0", obs_type="state", control=control)
    assert env.observation_space == gym.spaces.Box(-np.inf, np.inf, (STATE_DIM,), np.float32)
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (action_dim,), np.float32)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and info["coordinates"].dtype == np.float64 and info["coordinates"].shape == (2,)
    assert list(info[TASK_SUCCESS_KEY]) == list(kitchen.TASKS) and not any(info[TASK_SUCCESS_KEY].values())
    env.close()


def test_pixel_id_passes_the_checker_and_renders_the_lexa_view():
    env = gym.make("metra/Kitchen-v0")  # pixels are the default
    assert env.observation_space == gym.spaces.Box(0, 255, (64, 64, 9), np.uint8)
    obs, _ = env.reset(seed=0)
    inner = env.unwrapped
    np.testing.assert_array_equal(obs[..., 6:], inner._frame())
    viewer = inner._kitchen.robot_env.mujoco_renderer._get_viewer("rgb_array")
    assert (viewer.cam.distance, viewer.cam.azimuth, viewer.cam.elevation) == (1.86, 90.0, -60.0)
    np.testing.assert_allclose(viewer.cam.lookat, [-0.3, 0.5, 2.0])
    assert obs.std() > 20  # a scene, not a blank frame
    # The frame follows the robot: a moved arm changes it.
    for _ in range(3):
        obs, *_ = env.step(np.array([0.0, 0.0, 1.0, 0, 0, 0, 0], np.float32))
    assert np.abs(obs[..., 6:].astype(int) - obs[..., :3]).sum() > 0
    assert inner.model.light_castshadow.sum() == 0 and inner.model.vis.global_.offwidth == 64  # the cheap renderer
    stacked = env.env
    while not isinstance(stacked, ChannelStackObservation):
        stacked = stacked.env
    check_env(stacked, skip_render_check=True)  # last: it closes the environment


def test_state_is_the_end_effector_then_the_packages_observation(env):
    obs, info = env.reset(seed=0)
    for _ in range(5):
        obs, _, _, _, info = env.step(env.action_space.sample())
    package = env._kitchen._get_obs(env._kitchen.robot_env._get_obs())["observation"]  # noise is off
    np.testing.assert_allclose(obs[3:], package, rtol=1e-6, atol=1e-6)
    site = env.data.site_xpos[env.model.site("end_effector").id]
    np.testing.assert_allclose(obs[:3], site, rtol=1e-6)
    np.testing.assert_array_equal(info["coordinates"], site[:2])


def test_observation_groups_name_each_part_of_the_state(env):
    obs, _ = env.reset(seed=0)
    groups = env.observation_groups
    assert list(groups) == ["end_effector", "robot_qpos", "robot_qvel", "object_qpos", "object_qvel"]
    assert groups["end_effector"] == (0, 3) and groups["object_qvel"][1] == STATE_DIM
    start, stop = groups["object_qpos"]
    np.testing.assert_allclose(obs[start:stop], env.data.qpos[9:], rtol=1e-6)
    assert kitchen.MetraKitchenEnv.observation_groups.fget(type("Pixels", (), {"obs_type": "pixels"})()) is None


def test_mocap_control_welds_a_mocap_body_to_the_hand_as_lexa_does(env):
    import mujoco

    model = env.model
    weld = [i for i in range(model.neq) if model.eq_type[i] == mujoco.mjtEq.mjEQ_WELD]
    assert len(weld) == 1 and model.nmocap == 1
    (i,) = weld
    assert {model.body(model.eq_obj1id[i]).name, model.body(model.eq_obj2id[i]).name} == {"mocap", "panda0_link7"}
    np.testing.assert_allclose(model.eq_solref[i], (0.02, 1.0))
    np.testing.assert_allclose(model.eq_solimp[i][:3], (0.9, 0.95, 0.001))
    env.reset(seed=0)
    hand = model.body("panda0_link7").id
    np.testing.assert_allclose(env.data.mocap_pos[0], env.data.xpos[hand])  # LEXA's reset_mocap2body_xpos
    np.testing.assert_allclose(env.data.mocap_quat[0], env.data.xquat[hand])


def _moved(env, action, steps=5):
    env.reset(seed=0)
    start = env.end_effector()
    for _ in range(steps):
        env.step(action)
    return env.end_effector() - start


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_mocap_moves_the_hand_at_lexas_speed_along_each_axis(env, axis, sign):
    """LEXA's control moves the hand 0.05-0.11 m a step at full command from the reset pose (0.06-0.09 m in LEXA's
    model); the package's servos through inverse kinematics (control="end_effector_ik") 0.02-0.05 m. Fails if the
    control falls back to the slow arm."""
    action = np.zeros(EE_ACTIONS, np.float32)
    action[axis] = sign
    moved = _moved(env, action)
    # 5 steps: 0.33-0.52 m measured (0.10-0.25 m with the servos), mostly along the commanded axis (a zero action
    # lets the hand drift too, as in LEXA: the mocap body follows the hand, and the arm's servos pull toward 0).
    assert np.linalg.norm(moved) > 0.3 and sign * moved[axis] > 0.2
    assert abs(moved[axis]) > 1.1 * np.abs(np.delete(moved, axis)).max()


def test_the_inverse_kinematics_control_is_the_slow_arm_of_earlier_releases():
    slow = kitchen.MetraKitchenEnv(obs_type="state", control="end_effector_ik")
    action = np.zeros(EE_ACTIONS, np.float32)
    action[0] = 1.0
    moved = _moved(slow, action)
    assert 0.05 < moved[0] and np.linalg.norm(moved) < 0.2  # EE_SPEED asks for 0.08 m a step; the servos give 0.02
    assert slow.model.nmocap == 0
    slow.close()


@pytest.mark.parametrize("axis", [3, 4, 5])
def test_rotation_action_turns_the_hand(env, axis):
    """a[3:6] is subtracted from the hand's z-y-z Euler angles; the mocap body turns 5 % of the way to that target at
    each sub-step, from wherever the hand is, so the hand turns slowly (as in LEXA) and drifts under a zero action
    too: +1 and -1 end 0.07-0.16 rad apart after 3 steps (0 if the rotation part were dropped)."""
    hand = env.model.body("panda0_link7").id
    ends = []
    for sign in (1.0, -1.0):
        env.reset(seed=0)
        action = np.zeros(EE_ACTIONS, np.float32)
        action[axis] = sign
        for _ in range(3):
            env.step(action)
        ends.append(env.data.xquat[hand].copy())
    assert 2 * np.arccos(min(1.0, abs(float(ends[0] @ ends[1])))) > 0.05


def test_z_y_z_euler_angles_are_numpy_quaternions():
    """numpy-quaternion's as_euler_angles / from_euler_angles (LEXA's quat_to_rpy / rpy_to_quat), by hand."""
    half = np.pi / 8  # rotations by pi / 4
    np.testing.assert_allclose(kitchen.zyz_euler([1, 0, 0, 0]), [0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(kitchen.zyz_euler([np.cos(half), 0, 0, np.sin(half)]), [half, 0, half], atol=1e-12)
    np.testing.assert_allclose(kitchen.zyz_euler([np.cos(half), 0, np.sin(half), 0]), [0, np.pi / 4, 0], atol=1e-12)
    np.testing.assert_allclose(kitchen.quat_from_zyz([np.pi / 2, 0, 0]), [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    np.testing.assert_allclose(kitchen.quat_from_zyz([0, np.pi / 2, 0]), [np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0])
    rng = np.random.default_rng(0)
    for quat in rng.normal(size=(20, 4)):
        quat /= np.linalg.norm(quat)
        back = kitchen.quat_from_zyz(kitchen.zyz_euler(quat))
        assert abs(abs(float(back @ quat)) - 1.0) < 1e-9  # the same rotation (q or -q)


def test_gripper_action_drives_the_fingers_as_lexa_does(env):
    """LEXA gives the first finger's servo a[6] and the second's -a[6], each clipped to [0, 0.04]: a positive a[6]
    opens the first finger and closes the second."""
    env.reset(seed=0)
    action = np.zeros(EE_ACTIONS, np.float32)
    action[6] = 1.0
    for _ in range(3):
        env.step(action)
    first = env.data.qpos[7:9].copy()
    for _ in range(3):
        env.step(-action)
    second = env.data.qpos[7:9].copy()
    assert first[0] - first[1] > 0.01 and second[1] - second[0] > 0.01
    fingers = [env.model.actuator(name).id for name in ("r_gripper_finger_joint", "l_gripper_finger_joint")]
    np.testing.assert_array_equal(env.data.ctrl[fingers], [-1.0, 1.0])  # a[6], -a[6] of the last step
    np.testing.assert_allclose(env.model.actuator_ctrlrange[fingers], [[0.0, 0.04]] * 2)  # where MuJoCo clips them


def test_gripper_action_opens_and_closes_both_fingers_with_inverse_kinematics():
    slow = kitchen.MetraKitchenEnv(obs_type="state", control="end_effector_ik")
    slow.reset(seed=0)
    close = np.zeros(EE_ACTIONS, np.float32)
    close[6] = -1.0
    for _ in range(3):
        slow.step(close)
    closed = slow.data.qpos[7:9].copy()
    for _ in range(3):
        slow.step(-close)
    opened = slow.data.qpos[7:9].copy()
    assert np.all(closed < 0.02) and np.all(opened - closed > 0.015)  # from 0.04-0.05 at the start
    slow.close()


@pytest.mark.parametrize("task", kitchen.TASKS)
def test_each_task_flag_is_raised_by_its_solved_state_only(env, task):
    env.reset(seed=0)
    _set_qpos(env, env.goal_qpos(task))
    obs, reward, _, _, info = env.step(np.zeros(EE_ACTIONS, np.float32))
    assert [name for name, done in info[TASK_SUCCESS_KEY].items() if done] == [task]
    assert reward == 1.0  # first achieved in this episode
    _, reward, _, _, info = env.step(np.zeros(EE_ACTIONS, np.float32))
    assert info[TASK_SUCCESS_KEY][task] and reward == 0.0  # counted once per episode
    _, info = env.reset(seed=0)
    assert not any(info[TASK_SUCCESS_KEY].values())


@pytest.mark.parametrize("task", kitchen.KITCHEN_TASKS, ids=lambda t: t.name)
def test_lexa_criteria_thresholds(env, task):
    """LEXA's criteria (lexa_envs/kitchen.py): within the tolerance of the target, or below a switch point."""
    qpos = env.initial_qpos()
    index = task.indices[0]
    if task.tolerance is None:
        inside, outside = task.target[0] - 0.01, task.target[0] + 0.01
    else:
        qpos[list(task.indices)] = task.target
        inside, outside = task.target[0] + 0.9 * task.tolerance, task.target[0] + 1.1 * task.tolerance
    qpos[index] = inside
    assert env.task_success(qpos)[task.name]
    qpos[index] = outside
    assert not env.task_success(qpos)[task.name]
    expected = {"Kettle": 0.2, "Microwave": 0.2, "Light Switch": None, "Hinge Cabinet": 0.2, "Slide Cabinet": 0.1,
                "Bottom Burner": None}
    assert task.tolerance == expected[task.name]


def test_package_criteria_use_gymnasium_robotics_goals():
    from gymnasium_robotics.envs.franka_kitchen import kitchen_env as package

    env = kitchen.MetraKitchenEnv(obs_type="state", task_criteria="gymnasium_robotics")
    for task in kitchen.KITCHEN_TASKS:
        qpos = env.initial_qpos()
        qpos[package.OBS_ELEMENT_INDICES[task.package_name]] = package.OBS_ELEMENT_GOALS[task.package_name]
        assert [name for name, done in env.task_success(qpos).items() if done] == [task.name]
    # Where the two disagree: the package's hinge goal (1.45 rad) is past LEXA's window (0.3-0.7 rad).
    qpos = env.initial_qpos()
    qpos[21] = 1.45
    assert env.task_success(qpos)["Hinge Cabinet"]
    env.close()


def test_goal_observation_is_the_goal_state_and_keeps_the_current_one(env):
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.action_space.sample())
    before = env.state()
    goal = env.goal_observation("Microwave")
    np.testing.assert_array_equal(env.state(), before)
    assert goal.shape == (STATE_DIM,) and goal.dtype == np.float32
    microwave = 3 + 9 + 9 + (22 - 9)  # end effector, robot qpos, robot qvel, then object qpos from qpos 9 on
    assert goal[microwave] == pytest.approx(-0.5)
    start, _ = env.reset(seed=0)
    np.testing.assert_allclose(np.delete(goal, microwave), np.delete(start, microwave), atol=1e-6)


def test_same_seed_same_trajectory():
    runs = []
    for _ in range(2):
        env = gym.make("metra/Kitchen-v0", obs_type="state")
        obs, _ = env.reset(seed=3)
        rng = np.random.default_rng(0)
        out = [obs] + [env.step(rng.uniform(-1, 1, EE_ACTIONS).astype(np.float32))[0] for _ in range(5)]
        runs.append(np.stack(out))
        env.close()
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("copier", [lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy], ids=["pickle", "deepcopy"])
def test_round_trip_gives_the_same_environment(copier):
    env = gym.make("metra/Kitchen-v0", obs_type="state", control="joint_velocity", tasks=["Kettle"])
    clone = copier(env)
    assert clone.unwrapped is not env.unwrapped
    assert (clone.unwrapped.control, clone.unwrapped.reward_tasks) == ("joint_velocity", ("Kettle",))
    results = []
    for e in (env, clone):
        obs, _ = e.reset(seed=7)
        results.append((obs, e.step(np.full(9, 0.3, np.float32))[0]))
    np.testing.assert_array_equal(results[0][1], results[1][1])
    env.close()
    clone.close()


# --- the MuJoCo fix --------------------------------------------------------------------------------------------

def test_installed_gymnasium_robotics_still_needs_the_fix():
    import gymnasium_robotics
    import mujoco

    assert robotics_patch.joint_type_check_broken(), (
        f"gymnasium-robotics {gymnasium_robotics.__version__} on MuJoCo {mujoco.__version__} reads hinge joints "
        "again: metra_gym/envs/robotics_patch.py is no longer needed; remove it (and its call in "
        "metra_gym/envs/kitchen.py) and raise the pin of the kitchen extra")


def test_the_fix_is_in_place_once_the_env_is_built(env):
    from gymnasium_robotics.envs.franka_kitchen import franka_env

    assert franka_env.robot_get_obs is robotics_patch.robot_get_obs
    assert robotics_patch.patch_franka_kitchen()  # idempotent
    qpos, qvel = robotics_patch.robot_get_obs(env.model, env.data, env._kitchen.robot_env.model_names.joint_names)
    np.testing.assert_array_equal(qpos, env.data.qpos[:9])
    np.testing.assert_array_equal(qvel, env.data.qvel[:9])


def test_without_the_fix_the_package_fails_and_with_it_builds():
    code = ("import gymnasium as gym, gymnasium_robotics\n"
            "gym.register_envs(gymnasium_robotics)\n"
            "try:\n"
            "    gym.make('FrankaKitchen-v1')\n"
            "    print('UNPATCHED BUILT')\n"
            "except AssertionError:\n"
            "    print('UNPATCHED FAILS')\n"
            "from metra_gym.envs.robotics_patch import patch_franka_kitchen\n"
            "print('PATCHED', patch_franka_kitchen())\n"
            "env = gym.make('FrankaKitchen-v1')\n"
            "obs, _ = env.reset(seed=0)\n"
            "print('BUILT', obs['observation'].shape)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert "UNPATCHED FAILS" in out.stdout and "PATCHED True" in out.stdout, out.stdout + out.stderr
    assert "BUILT (59,)" in out.stdout, out.stderr


def test_a_package_without_the_patched_name_is_one_clear_error(monkeypatch):
    from gymnasium_robotics.envs.franka_kitchen import franka_env

    monkeypatch.delattr(franka_env, "robot_get_obs")
    with pytest.raises(robotics_patch.PatchError, match=r"no longer applies.*pip install 'metra-gym\[kitchen\]'"):
        robotics_patch.patch_franka_kitchen()


# --- the skill-level id ----------------------------------------------------------------------------------------

def _random_policy(obs_type="state", obs_dim=STATE_DIM):
    return random_skill_policy(obs_dim, EE_ACTIONS, 24, True, "metra/Kitchen-v0", {"obs_type": obs_type},
                               source=f"{obs_type} test")


def test_skill_id_runs_24_discrete_skills_of_25_steps():
    env = gym.make("metra/KitchenSkills-v0", checkpoint=_random_policy())
    assert env.action_space == gym.spaces.Discrete(24)
    check_env(env.unwrapped, skip_render_check=True)
    env.reset(seed=0)
    steps = [env.step(i) for i in (0, 5, 23)]
    assert [s[4]["skill_steps"] for s in steps] == [25] * 3
    assert set(steps[-1][4][TASK_SUCCESS_KEY]) == set(kitchen.TASKS)
    env.close()


def test_skill_id_runs_the_bundled_kitchen_state_skills_by_default():
    """The bundled ``kitchen_state`` (state Kitchen under LEXA's control) is the id's default: its skills are the
    action, and its card records the tasks its held-out rollouts achieved."""
    env = gym.make("metra/KitchenSkills-v0")
    policy = env.unwrapped.policy
    assert policy.env_id == "metra/Kitchen-v0" and policy.skill_dim == 24 and policy.discrete
    assert policy.config["env_kwargs"]["control"] == "mocap"
    held_out = policy.config["provenance"]["held_out_coverage"]
    assert held_out["n_tasks"] == 6 and held_out["tasks_achieved"] == len(held_out["tasks"]) > 0
    env.reset(seed=0)
    _, _, _, _, info = env.step(5)
    assert info["skill_steps"] == 25 and set(info[TASK_SUCCESS_KEY]) == set(kitchen.TASKS)
    env.close()


# --- bad input -------------------------------------------------------------------------------------------------

def test_missing_gymnasium_robotics_names_the_install_command(monkeypatch):
    for name in [m for m in sys.modules if m == "gymnasium_robotics" or m.startswith("gymnasium_robotics.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if never installed: no import of it succeeds
    monkeypatch.setitem(sys.modules, "gymnasium_robotics", None)
    with pytest.raises(ImportError, match=r"pip install 'metra-gym\[kitchen\]'") as error:
        gym.make("metra/Kitchen-v0", obs_type="state")
    assert isinstance(error.value, kitchen.KitchenMissingError) and "gymnasium_robotics" in str(error.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tasks": ["Kettle", "Toaster"]}, r"unknown Kitchen task 'Toaster'; the tasks are \['Kettle', 'Microwave'"),
    ({"tasks": "Kettle"}, r"tasks must be a list of task names, e\.g\. \['Kettle'\]"),
    ({"tasks": 3}, r"tasks must be a list of task names, e\.g\. \['Kettle'\], got 3"),
    ({"obs_type": "rgb"}, "obs_type must be 'pixels'.*or 'state'.*got 'rgb'"),
    ({"control": "servo"}, "control must be one of 'mocap', 'end_effector_ik', 'joint_velocity', got 'servo'"),
    ({"control": "end_effector"}, "control 'end_effector' is now called 'end_effector_ik'.*the paper's control.*"
                                  "is 'mocap' \\(the default\\)"),
    ({"task_criteria": "d4rl"}, "task_criteria must be one of 'lexa', 'gymnasium_robotics', got 'd4rl'"),
])
def test_bad_arguments_are_one_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("metra/Kitchen-v0", **kwargs)


@pytest.mark.parametrize("action", [np.zeros(6), np.zeros(9), np.zeros((1, 7)), np.array([np.nan] + [0.0] * 6),
                                    np.array([0.0] * 6 + [np.inf])],
                         ids=["short", "long", "batched", "nan", "inf"])
def test_an_action_of_the_wrong_size_or_not_finite_is_one_clear_error(env, action):
    env.reset(seed=0)
    before = env.data.qpos.copy()
    with pytest.raises(ValueError, match=r"an action of metra/Kitchen-v0 with control='mocap' must be 7 finite numbers"):
        env.step(action)
    np.testing.assert_array_equal(env.data.qpos, before)  # nothing was simulated


def test_a_model_without_the_hand_is_one_clear_error(tmp_path):
    model = tmp_path / "kitchen.xml"
    model.write_text("<mujoco><worldbody><body name='panda0_link6'><geom size='0.1'/></body></worldbody></mujoco>")
    with pytest.raises(kitchen.KitchenModelError, match=r"lacks body 'panda0_link7' and actuator "
                                                        r"'r_gripper_finger_joint'.*control='mocap'.*1\.4\.x"):
        kitchen.add_mocap_weld(str(model))


def test_unknown_goal_task_is_one_clear_error(env):
    with pytest.raises(ValueError, match=r"unknown Kitchen task 'kettle'; the tasks are \['Kettle'"):
        env.goal_observation("kettle")


def test_pixel_checkpoint_on_the_state_env_is_refused():
    with pytest.raises(CheckpointError, match=r"trained on metra/Kitchen-v0 with obs_type='pixels'.*this "
                                              r"environment's obs_type is 'state'.*\{'obs_type': 'state'\}"):
        gym.make("metra/KitchenSkills-v0", checkpoint=_random_policy("pixels", 64 * 64 * 9))


def test_pixel_config_exports_a_pixel_skill_checkpoint(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pretrain", "export", "--untrained", "--config", "kitchen",
                          str(tmp_path / "skills")], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    written = json.loads((tmp_path / "skills" / "config.json").read_text())
    assert written["pixels"] is not None and written["format_version"] == 4
    assert written["env_id"] == "metra/Kitchen-v0" and written["skill_dim"] == 24 and written["discrete_skills"]
