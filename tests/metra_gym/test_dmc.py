"""DeepMind Control Quadruped / Humanoid (pixel METRA's setting) through shimmy, their tasks and skill-level ids."""

import copy
import os
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import metra_gym  # noqa: F401
from metra_gym import registration
from metra_gym.envs import dmc
from metra_gym.wrappers import ChannelStackObservation
from tests.metra_gym.helpers import heavy_modules_after, random_skill_policy

pytest.importorskip("dm_control")
pytest.importorskip("shimmy")

DIMS = {"metra/Quadruped-v0": (80, 12), "metra/Humanoid-v0": (69, 21),
        "metra/QuadrupedGoal-v0": (82, 12), "metra/HumanoidGoal-v0": (71, 21)}


def _teleport(env, x, y):
    """Put the torso at (x, y), at rest."""
    physics = env.physics
    physics.data.qpos[:2] = (x, y)
    physics.data.qvel[:] = 0.0
    physics.forward()


def test_registration_says_the_papers_numbers():
    for env_id in DIMS:
        assert gym.spec(env_id).max_episode_steps == 200  # policy steps = 400 control steps
    for base in ("Quadruped", "Humanoid", "QuadrupedGoal", "HumanoidGoal"):
        spec = gym.spec(f"metra/{base}Skills-v0")
        assert spec.entry_point == "metra_gym.skill_env:SkillEnv" and spec.max_episode_steps == 8
        assert spec.kwargs["env"] == f"metra/{base}-v0" and spec.kwargs["env_kwargs"] == {"obs_type": "state"}
        # K = 50 control steps per skill, 8 skills = 400 control steps.
        assert spec.kwargs["skill_steps"] * dmc.ACTION_REPEAT == 50
        assert spec.max_episode_steps * spec.kwargs["skill_steps"] * dmc.ACTION_REPEAT == 400
    ranges = registration.ZERO_SHOT_GOAL_RANGES
    assert (ranges["metra/Quadruped-v0"], ranges["metra/Humanoid-v0"]) == (15.0, 10.0)
    assert {"metra/QuadrupedSkills-v0", "metra/HumanoidGoal-v0"} <= registration.metra_env_ids()


def test_import_metra_gym_and_dmc_module_stay_light():
    assert heavy_modules_after("metra_gym, metra_gym.envs.dmc, metra_gym.wrappers", "metra/Quadruped-v0", ('torch', 'mujoco', 'dm_control', 'shimmy')) == []


@pytest.mark.parametrize("env_id", list(DIMS))
def test_state_ids_pass_the_checker(env_id):
    env = gym.make(env_id, obs_type="state")
    obs_dim, action_dim = DIMS[env_id]
    assert env.observation_space == gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    assert env.action_space.shape == (action_dim,) and env.action_space.dtype == np.float32
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and info["coordinates"].dtype == np.float64
    env.close()


@pytest.mark.parametrize("env_id", ["metra/Quadruped-v0", "metra/Humanoid-v0"])
def test_pixel_ids_pass_the_checker(env_id):
    env = gym.make(env_id)  # pixels are the default
    assert env.observation_space == gym.spaces.Box(0, 255, (64, 64, 9), np.uint8)
    stacked = env.env
    while not isinstance(stacked, ChannelStackObservation):
        stacked = stacked.env
    check_env(stacked, skip_render_check=True)
    env.close()


def test_stack_is_oldest_first_and_newest_last():
    env = gym.make("metra/Quadruped-v0")
    inner = env.unwrapped
    obs0, _ = env.reset(seed=1)
    assert obs0.shape == (64, 64, 9) and obs0.dtype == np.uint8
    first = obs0[..., :3]
    assert np.array_equal(obs0[..., 3:6], first) and np.array_equal(obs0[..., 6:], first)  # reset fills the stack
    assert np.array_equal(first, inner._frame())
    obs1, *_ = env.step(np.full(12, 0.8, np.float32))
    obs2, *_ = env.step(np.full(12, -0.8, np.float32))
    newest = inner._frame()
    assert np.array_equal(obs2[..., 6:], newest)  # newest frame last
    assert np.array_equal(obs2[..., 3:6], obs1[..., 6:]) and np.array_equal(obs2[..., :3], first)  # oldest first
    assert not np.array_equal(newest, first) and not np.array_equal(obs1[..., 6:], newest)


class _CountingFrames(gym.Env):
    """Frames filled with 10 * episode + step: which episode and step a frame comes from is in its pixels."""

    observation_space = gym.spaces.Box(0, 255, (2, 2, 3), np.uint8)
    action_space = gym.spaces.Discrete(1)

    def __init__(self):
        self.episode, self.t = -1, 0

    def _frame(self):
        return np.full((2, 2, 3), 10 * self.episode + self.t, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return self._frame(), {}

    def step(self, action):
        self.t += 1
        return self._frame(), 0.0, False, False, {}


def test_reset_refills_the_stack_with_no_frame_of_the_previous_episode():
    env = ChannelStackObservation(_CountingFrames(), 3)
    assert env.observation_space.shape == (2, 2, 9)
    env.reset()
    for _ in range(4):
        obs, *_ = env.step(0)
    assert obs[0, 0].tolist() == [2] * 3 + [3] * 3 + [4] * 3
    obs, _ = env.reset()
    assert obs[0, 0].tolist() == [10] * 9
    obs, *_ = env.step(0)
    assert obs[0, 0].tolist() == [10] * 6 + [11] * 3
    with pytest.raises(ValueError, match="num_stack"):
        ChannelStackObservation(_CountingFrames(), 0)


def test_real_stack_after_reset_holds_only_the_new_first_frame():
    env = gym.make("metra/Humanoid-v0")
    env.reset(seed=0)
    for _ in range(3):
        old, *_ = env.step(env.action_space.sample())
    obs, _ = env.reset(seed=5)
    frames = [obs[..., 3 * i:3 * i + 3] for i in range(3)]
    assert all(np.array_equal(f, env.unwrapped._frame()) for f in frames)
    assert not any(np.array_equal(f, old[..., 3 * i:3 * i + 3]) for f in frames for i in range(3))


def test_floor_texture_is_the_position_gradient():
    np.testing.assert_array_equal(dmc.floor_gradient(4, 2)[:, :, 0], [[0, 0], [63, 63], [127, 127], [191, 191]])
    np.testing.assert_array_equal(dmc.floor_gradient(4, 2)[:, :, 1], [[0, 127]] * 4)
    assert np.all(dmc.floor_gradient(4, 2)[:, :, 2] == 128)
    env = gym.make("metra/Quadruped-v0", frame_stack=1).unwrapped
    model = env.physics.model
    floor = model.name2id("floor", "geom")
    texture = model.mat_texid[model.geom_matid[floor], 1]
    h, w, adr = model.tex_height[texture], model.tex_width[texture], model.tex_adr[texture]
    np.testing.assert_array_equal(model.tex_data[adr:adr + h * w * 3].reshape(h, w, 3), dmc.floor_gradient(h, w))
    np.testing.assert_allclose(model.geom_size[floor, :2], [15.0, 15.0])  # 30 x 30 m
    assert model.light_castshadow.sum() == 0 and model.mat_reflectance.sum() == 0  # the cheap renderer


@pytest.mark.parametrize("env_id", ["metra/Quadruped-v0", "metra/Humanoid-v0"])
def test_pixels_show_where_the_torso_is(env_id):
    """The tracking camera sees different floor colours at different places: G grows with x, R falls with y
    (texture row 0 lies at y = +15 m, column 0 at x = -15 m)."""
    env = gym.make(env_id, frame_stack=1).unwrapped
    env.reset(seed=0)

    def floor_colour(x, y):
        _teleport(env, x, y)
        return env._frame()[44:].reshape(-1, 3).astype(float).mean(0)  # the bottom of the frame is floor

    west, east, south, north = (floor_colour(*xy) for xy in ((-10, 0), (10, 0), (0, -10), (0, 10)))
    assert east[1] - west[1] > 100 and abs(east[0] - west[0]) < 10  # x moves G only
    assert south[0] - north[0] > 100 and abs(south[1] - north[1]) < 10  # y moves R only
    # The torso at x = 10 sees the floor column at 25 of 30 m: G close to 255 * 25 / 30 = 212 (lighting aside).
    assert 170 < east[1] < 240 and 10 < west[1] < 80


@pytest.mark.parametrize("env_id", ["metra/Quadruped-v0", "metra/Humanoid-v0"])
def test_coordinates_follow_the_torso(env_id):
    env = gym.make(env_id, obs_type="state")
    inner = env.unwrapped
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(info["coordinates"], inner.physics.named.data.xpos["torso"][:2])
    for _ in range(10):
        obs, _, _, _, info = env.step(env.action_space.sample())
    torso = inner.physics.named.data.xpos["torso"][:2]
    assert info["coordinates"].dtype == np.float64 and np.linalg.norm(torso) > 1e-3
    np.testing.assert_allclose(info["coordinates"], torso, atol=1e-9)
    np.testing.assert_allclose(obs[:2], torso, rtol=1e-6)  # state obs starts with the torso x-y
    _teleport(inner, 4.0, -3.0)
    _, _, _, _, info = env.step(np.zeros(env.action_space.shape, np.float32))
    np.testing.assert_allclose(info["coordinates"], [4.0, -3.0], atol=0.2)


@pytest.mark.parametrize(("env_id", "kwargs"), [("metra/Quadruped-v0", {"obs_type": "state"}),
                                                 ("metra/Humanoid-v0", {"obs_type": "state"}),
                                                 ("metra/Quadruped-v0", {})])
def test_same_seed_same_start_and_trajectory(env_id, kwargs):
    runs = []
    for seed in (3, 3, 4):
        env = gym.make(env_id, **kwargs)
        obs, info = env.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(0)
        for _ in range(3 if kwargs else 1):
            out.append(env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))[0])
        runs.append((np.stack(out), info["coordinates"], env.unwrapped.physics.data.qpos.copy()))
        env.close()
    (a, ca, qa), (b, cb, qb), (c, _, qc) = runs
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(qa, qb)
    assert not np.array_equal(qa, qc)  # another seed, another initial pose


@pytest.mark.parametrize("copier", [lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy], ids=["pickle", "deepcopy"])
@pytest.mark.parametrize(("env_id", "kwargs"), [("metra/Quadruped-v0", {"obs_type": "state", "action_repeat": 3}),
                                                 ("metra/HumanoidGoal-v0", {"goal_radius": 2.0}),
                                                 ("metra/Humanoid-v0", {"frame_size": 32})])
def test_round_trip_gives_the_same_environment(env_id, kwargs, copier):
    env = gym.make(env_id, **kwargs)
    clone = copier(env)
    assert clone.unwrapped is not env.unwrapped and type(clone.unwrapped) is type(env.unwrapped)
    for name, value in kwargs.items():
        assert getattr(clone.unwrapped, name) == value
    results = []
    for e in (env, clone):
        obs, _ = e.reset(seed=7)
        step = e.step(np.full(e.action_space.shape, 0.3, np.float32))
        results.append((obs, step[0], step[1]))
    for expected, got in zip(*results):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("env_id", "goal_range", "dim"), [("metra/QuadrupedGoal-v0", 7.5, 80),
                                                           ("metra/HumanoidGoal-v0", 5.0, 69)])
def test_goal_pays_10_and_ends_within_3_m(env_id, goal_range, dim):
    env = gym.make(env_id)
    inner = env.unwrapped
    obs, _ = env.reset(seed=2)
    assert inner.pretraining_obs_dim == dim and obs.shape == (dim + 2,)
    assert np.all(np.abs(inner.goal) <= goal_range) and inner.goal_range == goal_range
    np.testing.assert_allclose(obs[dim:], inner.goal - inner.coordinates(), rtol=1e-5)
    goals = {tuple(env.reset(seed=s)[0][dim:]) for s in range(5)}
    assert len(goals) == 5
    zero = np.zeros(env.action_space.shape, np.float32)
    _teleport(inner, inner.goal[0] + 4.0, inner.goal[1])  # 4 m away
    obs, reward, terminated, _, info = env.step(zero)
    assert (reward, terminated, info["goal_reached"]) == (0.0, False, False)
    np.testing.assert_allclose(obs[dim:], inner.goal - inner.coordinates(), rtol=1e-5)
    _teleport(inner, inner.goal[0] + 2.0, inner.goal[1] - 1.5)  # 2.5 m away
    _, reward, terminated, _, info = env.step(zero)
    assert (reward, terminated, info["goal_reached"]) == (10.0, True, True)


@pytest.mark.parametrize(("env_id", "base_id"), [("metra/QuadrupedGoal-v0", "metra/Quadruped-v0"),
                                                ("metra/HumanoidGoal-v0", "metra/Humanoid-v0")])
def test_a_goal_task_moves_as_its_robot_without_computing_dm_controls_reward(env_id, base_id, monkeypatch):
    goal, base = gym.make(env_id), gym.make(base_id, obs_type="state")
    # The goal task must not ask dm_control for its run reward (it pays its own), and the base env still does.
    calls = []
    for task_type in {type(goal.unwrapped._task), type(base.unwrapped._task)}:  # the Quadruped's: two classes
        monkeypatch.setattr(task_type, "get_reward", lambda self, physics, original=task_type.get_reward:
                            calls.append(self) or original(self, physics))
    actions = np.random.default_rng(0).uniform(-1, 1, (30, *goal.action_space.shape)).astype(np.float32)
    for env in (goal, base):
        env.reset(seed=5)
    dim = goal.unwrapped.pretraining_obs_dim
    for action in actions:
        obs, *_ = goal.step(action)
        base_obs, base_reward, *_ = base.step(action)
        np.testing.assert_array_equal(obs[:dim], base_obs)
    assert calls and all(task is base.unwrapped._task for task in calls) and base_reward != 0.0


def _random_policy(obs_dim, action_dim, env_id):
    return random_skill_policy(obs_dim, action_dim, 2, False, env_id, {"obs_type": "state"})


@pytest.mark.parametrize("env_id", ["metra/HumanoidSkills-v0", "metra/HumanoidGoalSkills-v0"])
def test_humanoid_skill_ids_take_the_bundled_state_skills(env_id):
    env = gym.make(env_id)  # the default checkpoint: the bundled humanoid_state
    assert env.unwrapped.policy.config["env_id"] == "metra/Humanoid-v0"
    check_env(env.unwrapped, skip_render_check=True)


def test_the_bundled_humanoid_skills_travel():
    env = gym.make("metra/HumanoidSkills-v0")
    env.reset(seed=3)
    start = env.unwrapped.env.unwrapped.coordinates().copy()
    for _ in range(4):  # 100 policy steps of one skill
        *_, info = env.step(np.array([0.5, 0.866], np.float32))
    # A trained skill crawls several metres in 100 steps; random actions and untrained skills fall and stay within
    # about a metre (benchmarks/results/humanoid_screens/falls.json).
    assert np.linalg.norm(info["coordinates"] - start) > 3.0


@pytest.mark.parametrize("env_id", ["metra/QuadrupedSkills-v0", "metra/QuadrupedGoalSkills-v0"])
def test_quadruped_skill_ids_take_the_bundled_state_skills_and_walk(env_id):
    env = gym.make(env_id)  # the default checkpoint: the bundled quadruped_state
    assert env.unwrapped.policy.config["env_id"] == "metra/Quadruped-v0"
    check_env(env.unwrapped, skip_render_check=True)
    env.reset(seed=3)
    start = env.unwrapped.env.unwrapped.coordinates().copy()
    for _ in range(4):  # 100 policy steps of one skill
        *_, info = env.step(np.array([1.0, 0.0, 0.0, 0.0], np.float32))
    # Trained skills walk several metres in 100 steps (8 s); random actions and untrained skills stay within about 1 m.
    assert np.linalg.norm(info["coordinates"] - start) > 2.0


@pytest.mark.parametrize(("env_id", "obs_dim", "action_dim"), [("metra/QuadrupedSkills-v0", 80, 12),
                                                               ("metra/HumanoidGoalSkills-v0", 69, 21)])
def test_skill_ids_run_k_25_policy_steps_per_skill(env_id, obs_dim, action_dim):
    policy = _random_policy(obs_dim, action_dim, env_id.replace("Skills", ""))
    env = gym.make(env_id, checkpoint=policy)
    check_env(env.unwrapped, skip_render_check=True)
    for seed in range(20):  # a start more than 4 m from any goal: no skill ends the episode early
        env.reset(seed=seed)
        if np.linalg.norm(getattr(env.unwrapped.env.unwrapped, "goal", np.full(2, 9.0))) > 4:
            break
    steps = [env.step(np.array([1.0, 0.0], np.float32)) for _ in range(8)]
    assert [s[4]["skill_steps"] for s in steps] == [25] * 8
    assert [s[3] for s in steps] == [False] * 7 + [True]  # 8 skills = 200 policy steps = 400 control steps
    assert not any(s[2] for s in steps)
    assert steps[-1][4]["coordinates"].shape == (2,)


def test_missing_dm_control_or_shimmy_names_the_extra(monkeypatch):
    for module in ("dm_control", "shimmy"):
        with monkeypatch.context() as patch:
            for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
                patch.setitem(sys.modules, name, None)  # as if never installed: no import of it succeeds
            with pytest.raises(ImportError, match=r"pip install 'metra-gym\[dmc\]'") as error:
                dmc.MetraQuadrupedEnv(obs_type="state")
            assert isinstance(error.value, dmc.DmControlMissingError) and module in str(error.value)


def test_unknown_obs_type_is_refused():
    with pytest.raises(ValueError, match="obs_type must be 'pixels'.*or 'state'.*got 'rgb'"):
        gym.make("metra/Quadruped-v0", obs_type="rgb")
    with pytest.raises(ValueError, match="obs_type='state' only"):
        gym.make("metra/HumanoidGoal-v0", obs_type="pixels")


def test_mujoco_gl_defaults_to_egl_and_nonsense_is_refused(monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert dmc.configure_mujoco_gl() == "egl" and os.environ["MUJOCO_GL"] == "egl"
    monkeypatch.setenv("MUJOCO_GL", "opengl")
    with pytest.raises(dmc.MujocoGLError, match="MUJOCO_GL='opengl'.*MUJOCO_GL=egl.*MUJOCO_GL=osmesa"):
        gym.make("metra/Humanoid-v0", obs_type="state")


def test_glfw_without_a_display_fails_once_with_the_fix():
    code = ("from metra_gym.envs import dmc\n"
            "dmc.MetraQuadrupedEnv(obs_type='state').reset(seed=0)\n"
            "print('state ok')\n"
            "try:\n"
            "    dmc.MetraQuadrupedEnv()\n"
            "except dmc.MujocoGLError as error:\n"
            "    print('ERROR', error)\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "PYOPENGL_PLATFORM")}
    environ["MUJOCO_GL"] = "glfw"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ)
    assert "state ok" in out.stdout, out.stderr
    assert "ERROR MUJOCO_GL='glfw' cannot render here" in out.stdout and "MUJOCO_GL=egl" in out.stdout, out.stderr


def test_a_backend_that_fails_to_load_names_the_fix():
    # dm_control refuses osmesa at import when PyOpenGL is told to use another platform (with or without libosmesa6).
    code = ("from metra_gym.envs import dmc\n"
            "try:\n"
            "    dmc.MetraHumanoidEnv(obs_type='state')\n"
            "except dmc.MujocoGLError as error:\n"
            "    print('ERROR', error)\n")
    environ = {**os.environ, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "egl"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ)
    assert "ERROR MUJOCO_GL='osmesa' could not be loaded" in out.stdout and "MUJOCO_GL=egl" in out.stdout, out.stderr


def _torso_up(env) -> float:
    """The z component of the torso's z-axis: 1 upright, -1 on its back."""
    return float(env.unwrapped.physics.named.data.xmat["torso", "zz"])


@pytest.mark.parametrize("env_id", ["metra/Quadruped-v0", "metra/QuadrupedGoal-v0"])
def test_quadruped_starts_upright_on_the_floor_as_the_official_task(env_id):
    kwargs = {"obs_type": "state"} if env_id == "metra/Quadruped-v0" else {}
    env = gym.make(env_id, **kwargs)
    ups, heights = [], []
    for seed in range(40):
        env.reset(seed=seed)
        physics = env.unwrapped.physics
        ups.append(_torso_up(env))
        heights.append(physics.data.qpos[2])
        assert physics.data.ncon == 0  # lowered to the first height without contacts
        quaternion = physics.data.qpos[3:7]
        np.testing.assert_allclose(np.linalg.norm(quaternion), 1.0, atol=1e-9)
    env.close()
    # (1, 0, 0, 0) + 0.02 N(0, 1), normalised: tilts of a few degrees at most; the stock task is upside down half the time
    assert min(ups) > np.cos(np.deg2rad(10)), ups
    assert len(set(np.round(ups, 12))) == len(ups)  # the noise is there, drawn per seed
    assert 0.4 < min(heights) and max(heights) < 0.7  # standing height, not dropped from above


def test_quadruped_upright_orientation_is_the_noisy_identity():
    orientation = dmc.upright_orientation(np.random.RandomState(0))
    expected = np.array([1.0, 0, 0, 0]) + dmc.UPRIGHT_NOISE * np.random.RandomState(0).randn(4)
    np.testing.assert_allclose(orientation, expected / np.linalg.norm(expected))


def test_humanoid_starts_as_dm_controls_stock_task():
    """The official humanoid task keeps dm_control's initial state (random limited and rotational joints, no
    penetration): same seed, same pose as the stock ``humanoid-run``."""
    from dm_control import suite

    env = gym.make("metra/Humanoid-v0", obs_type="state")
    stock = suite.load("humanoid", "run", task_kwargs={"random": 5})
    stock.reset()
    env.reset(seed=5)
    np.testing.assert_array_equal(env.unwrapped.physics.data.qpos, stock.physics.data.qpos)
    assert env.unwrapped.physics.data.ncon == 0
    ups = []
    for seed in range(10):
        env.reset(seed=seed)
        ups.append(_torso_up(env))
    assert min(ups) < 0.5  # random orientations, often lying: not the Quadruped's upright start
    env.close()


@pytest.mark.parametrize("action", [np.nan, np.inf], ids=["nan", "inf"])
def test_a_non_finite_action_is_one_clear_error_not_a_physics_error(action):
    """dm_control would step, then raise its PhysicsError (mjWARN_BADCTRL); the env says what was wrong first."""
    env = gym.make("metra/Quadruped-v0", obs_type="state")
    env.reset(seed=0)
    bad = np.zeros(12, dtype=np.float32)
    bad[3] = action
    with pytest.raises(ValueError, match=r"an action of quadruped must be 12 finite numbers, got \[0\. +0\. +0\. "):
        env.step(bad)
    assert np.all(np.isfinite(env.step(np.zeros(12, dtype=np.float32))[0]))  # the physics was not touched
