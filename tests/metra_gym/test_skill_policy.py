import shutil
import subprocess
import sys

import numpy as np
import pytest

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_checkpoint.hub import resolve_checkpoint
from metra_gym.skill_policy import SkillPolicy
from tests.metra_gym.helpers import ant_with_prior, broken_checkpoint, set_key

ANT = resolve_checkpoint("ant")


@pytest.fixture(scope="module")
def ant():
    return SkillPolicy.from_pretrained("ant")


def test_act_is_batched_deterministic_and_in_bounds(ant):
    obs = np.random.default_rng(0).standard_normal((5, 29)).astype(np.float32)
    z = np.array([[1.0, 0.0]] * 5, dtype=np.float32)
    batch = ant.act(obs, z)
    assert batch.shape == (5, 8) and np.all(np.abs(batch) <= 1.0)
    np.testing.assert_allclose(ant.act(obs[2], z[2]), batch[2], rtol=1e-5, atol=1e-6)
    sampled = ant.act(obs, z, deterministic=False, rng=np.random.default_rng(1))
    assert not np.allclose(sampled, batch)
    np.testing.assert_array_equal(sampled, ant.act(obs, z, deterministic=False, rng=np.random.default_rng(1)))


def test_goal_skill_continuous_is_the_unit_phi_direction(ant):
    obs = np.zeros((3, 29), dtype=np.float32)
    goal = obs.copy()
    goal[:, 0] = [5.0, -5.0, 0.0]
    goal[:, 1] = [0.0, 3.0, 7.0]
    z = ant.goal_skill(obs, goal)
    direction = ant.phi(goal) - ant.phi(obs)
    np.testing.assert_allclose(z, direction / np.linalg.norm(direction, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)


def test_goal_skill_discrete_is_the_one_hot_of_the_argmax():
    cheetah = SkillPolicy.from_pretrained("half_cheetah")
    obs = np.zeros((2, 18), dtype=np.float32)
    goal = obs.copy()
    goal[:, 0] = [30.0, -30.0]
    z = cheetah.goal_skill(obs, goal)
    expected = np.argmax(cheetah.phi(goal) - cheetah.phi(obs), axis=1)
    np.testing.assert_array_equal(np.argmax(z, axis=1), expected)
    np.testing.assert_array_equal(z.sum(axis=1), 1.0)


@pytest.mark.parametrize(("obs", "z", "message"), [
    (np.zeros(18), [1.0, 0.0], "observations must have 29 entries"),
    (np.zeros(29), [1.0, 0.0, 0.0], r"skills must have shape \(2,\)"),
    (np.zeros(29), [np.nan, 1.0], "skills must be finite"),
])
def test_bad_policy_inputs(ant, obs, z, message):
    with pytest.raises(ValueError, match=message):
        ant.act(obs, z)


def _broken_copy(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(ANT, folder)
    return folder


def test_missing_truncated_corrupted_and_mismatched_weights(tmp_path):
    missing = _broken_copy(tmp_path, "missing")
    (missing / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors is missing"):
        SkillPolicy.from_pretrained(missing)

    truncated = _broken_copy(tmp_path, "truncated")
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        SkillPolicy.from_pretrained(truncated)

    corrupted = _broken_copy(tmp_path, "corrupted")
    (corrupted / "model.safetensors").write_bytes(b"\xff" * 64 + data[64:])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        SkillPolicy.from_pretrained(corrupted)

    mismatched = broken_checkpoint(tmp_path / "mismatched", edit_config=set_key("obs_dim", 30))  # (re-hashed)
    # The message names the tensor and both sizes (checked before any network is built).
    with pytest.raises(CheckpointError, match=r"model.safetensors\) and its config.json do not fit together: "
                                              r"size mismatch for actor.latent.0.weight: the weights hold \[256, 31\], "
                                              r"config.json describes \[256, 32\]"):
        SkillPolicy.from_pretrained(mismatched)


def test_bad_config_json_and_unknown_names(tmp_path):
    bad = _broken_copy(tmp_path, "badjson")
    (bad / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json is not valid JSON"):
        SkillPolicy.from_pretrained(bad)
    with pytest.raises(CheckpointError, match=r"unknown checkpoint 'antt': bundled names are \['ant', .*'half_cheetah'.*\]"):
        SkillPolicy.from_pretrained("antt")
    with pytest.raises(CheckpointError, match="config.json is missing"):
        SkillPolicy.from_pretrained(tmp_path)


def test_importing_metra_gym_imports_no_torch_mujoco_or_pretrain():
    code = ("import sys, metra_gym, gymnasium as gym; gym.spec('metra/AntSkills-v0');"
            "print(sorted(m for m in ('torch', 'mujoco', 'pretrain', 'stable_baselines3') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_goal_skill_needs_a_goal_with_another_phi(ant):
    obs = np.zeros((2, 29), dtype=np.float32)
    goal = obs.copy()
    goal[0, 0] = 5.0
    with pytest.raises(ValueError, match=r"phi\(goal_obs\) equals phi\(obs\) \(row\(s\) \[1\]\)"):
        ant.goal_skill(obs, goal)
    with pytest.raises(ValueError, match=r"phi\(goal_obs\) equals phi\(obs\)"):
        ant.goal_skill(obs[0], obs[0])


@pytest.mark.parametrize(("z", "message"), [
    ([0.0, 0.0], r"skills are unit vectors; normalise z: row\(s\) \[0\] are zero"),
    ([3.0, 4.0], r"skills are unit vectors; normalise z \(z / \|\|z\|\|\): row\(s\) \[0\] have norm \[5.0\]"),
    ([[1.0, 0.0], [0.99, 0.0]], r"row\(s\) \[1\] have norm \[0.99\]"),
])
def test_act_takes_unit_continuous_skills(ant, z, message):
    obs = np.zeros((2, 29), dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        ant.act(obs, z)
    ant.act(obs, [1.0005, 0.0])  # within the 1e-3 tolerance


def test_act_takes_one_hot_discrete_skills():
    cheetah = SkillPolicy.from_pretrained("half_cheetah")
    obs = np.zeros(18, dtype=np.float32)
    for z in (np.full(16, 1 / 16), np.zeros(16), 2 * np.eye(16)[3], np.eye(16)[3] - np.eye(16)[4]):
        with pytest.raises(ValueError, match=r"discrete skills are one-hot vectors of length 16 \(np.eye\(16\)"):
            cheetah.act(obs, z)
    assert cheetah.act(obs, np.eye(16)[3]).shape == (6,)
    # For discrete skills the argmax is defined even without a direction: skill 0.
    np.testing.assert_array_equal(cheetah.goal_skill(obs, obs), np.eye(16)[0])


def test_make_env_builds_only_metra_ids_unless_allowed(ant, monkeypatch):
    assert ant.make_env(max_episode_steps=5).spec.id == "metra/Ant-v0"
    monkeypatch.setitem(ant.config, "env_id", "tests.metra_gym.not_a_module:Evil-v0")
    with pytest.raises(CheckpointError, match="names env id 'tests.metra_gym.not_a_module:Evil-v0'; gym.make would "
                                              "import the Python module 'tests.metra_gym.not_a_module'. If you trust "
                                              "this checkpoint, pass allowed_env_ids="):
        ant.make_env()
    assert "tests.metra_gym.not_a_module" not in sys.modules
    monkeypatch.setitem(ant.config, "env_id", "CartPole-v1")
    with pytest.raises(CheckpointError, match="'CartPole-v1'; gym.make would build an environment metra_gym did not "
                                              r"register. If you trust this checkpoint, pass allowed_env_ids=\['CartPole-v1'\]"):
        ant.make_env()
    with pytest.raises(TypeError, match="allowed_env_ids must be a list of env id strings"):
        ant.make_env(allowed_env_ids="CartPole-v1")
    monkeypatch.setitem(ant.config, "env_id", "metra_gym.envs.locomotion:metra/Ant-v0")
    with pytest.raises(CheckpointError, match="import the Python module 'metra_gym.envs.locomotion'"):
        ant.make_env(allowed_env_ids=["metra/Ant-v0"])  # a module:id id only when listed as such
    assert ant.make_env(allowed_env_ids=["metra_gym.envs.locomotion:metra/Ant-v0"]).spec.id == "metra/Ant-v0"


@pytest.mark.parametrize(("env_id", "allowed"), [("metra/HalfCheetah-v0", []), ("CartPole-v1", ["CartPole-v1"])])
def test_make_env_refuses_a_checkpoint_naming_another_envs_id(ant, monkeypatch, env_id, allowed):
    """The env id is text in config.json; the networks' sizes say which env the policy was made for."""
    monkeypatch.setitem(ant.config, "env_id", env_id)
    with pytest.raises(CheckpointError, match=f"names env id '{env_id}', but its networks take 29-d observations and "
                                              f"8-d actions, and {env_id} has .* its config.json names another env's"):
        ant.make_env(allowed_env_ids=allowed)


def test_non_finite_observations_are_refused(ant):
    with pytest.raises(ValueError, match="observations must be finite float32 numbers"):
        ant.act(np.full(29, np.nan), [1.0, 0.0])
    with pytest.raises(ValueError, match="observations must be finite float32 numbers"):
        ant.phi(np.full(29, 1e300))


@pytest.mark.parametrize("rng", [123, np.int64(7), np.random.default_rng(0)])
def test_sampled_actions_take_a_seed_or_a_generator(ant, rng):
    obs = np.zeros((2, 29), dtype=np.float32)
    action = ant.act(obs, [1.0, 0.0], deterministic=False, rng=rng)
    assert action.shape == (2, 8) and np.all(np.isfinite(action))
    if isinstance(rng, int):  # the same seed, the same sample
        np.testing.assert_array_equal(action, ant.act(obs, [1.0, 0.0], deterministic=False, rng=rng))


@pytest.mark.parametrize("rng", ["123", 1.5, -1, True])
def test_a_bad_rng_is_one_clear_type_error(ant, rng):
    with pytest.raises(TypeError, match="rng must be a np.random.Generator or a seed"):
        ant.act(np.zeros(29, dtype=np.float32), [1.0, 0.0], deterministic=False, rng=rng)


def test_the_constructor_with_an_empty_config_points_to_from_pretrained():
    with pytest.raises(CheckpointError, match="the config given to SkillPolicy lacks env_id, obs_dim, .*"
                                              r"SkillPolicy.from_pretrained\(name_or_folder\)"):
        SkillPolicy({}, {})
    with pytest.raises(TypeError, match="takes a checkpoint's config.json contents and its tensors as dicts"):
        SkillPolicy("ant", {})


def test_a_missing_local_folder_says_no_such_folder(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for missing in ["runs/my_ckpt", "./my_ckpt", "../nowhere/my_ckpt", str(tmp_path / "abs" / "missing"),
                    Path("my_ckpt"), "~/surely-not-a-checkpoint-folder-here"]:
        with pytest.raises(CheckpointError, match="no such folder: .*my_ckpt|no such folder: .*missing|"
                                                  "no such folder: .*surely-not") as error:
            SkillPolicy.from_pretrained(missing)
        assert "Hub" not in str(error.value) and "is a file" not in str(error.value)
    with pytest.raises(CheckpointError, match="the checkpoint name is empty"):
        SkillPolicy.from_pretrained("")
    (tmp_path / "runs" / "file.txt").write_text("x")
    with pytest.raises(CheckpointError, match="is a file; a skill checkpoint is a folder"):
        SkillPolicy.from_pretrained("runs/file.txt")


def test_a_revision_of_a_bundled_name_or_a_folder_is_refused_not_ignored(tmp_path):
    with pytest.raises(CheckpointError, match="'ant' is a checkpoint bundled with metra-gym, which has no revisions"):
        SkillPolicy.from_pretrained("ant", revision="v9")
    folder = resolve_checkpoint("ant")
    with pytest.raises(CheckpointError, match="is a local folder, which has no revisions"):
        SkillPolicy.from_pretrained(folder, revision="v9")


def _with_prior(tmp_path, prior):
    return ant_with_prior(tmp_path / f"prior-{prior}", prior)


def test_act_takes_the_skills_of_the_checkpoints_prior(tmp_path, ant):
    """DIAYN and DADS skills are N(0, I) draws: any finite vector, its length included, reaches the actor; CIC's are
    uniform in [0, 1]^D. Checkpoints without skill_prior are unit vectors (METRA, LSD)."""
    obs = np.zeros(29, dtype=np.float32)
    assert ant.skill_prior == "unit"
    gaussian = SkillPolicy.from_pretrained(_with_prior(tmp_path, "gaussian"))
    assert gaussian.skill_prior == "gaussian"
    long, unit = gaussian.act(obs, [3.0, 4.0]), gaussian.act(obs, [0.6, 0.8])
    assert not np.allclose(long, unit)  # not normalised on the way
    uniform = SkillPolicy.from_pretrained(_with_prior(tmp_path, "uniform"))
    assert uniform.act(obs, [0.2, 0.9]).shape == (8,)
    with pytest.raises(ValueError, match=r"skills of this checkpoint lie in \[0, 1\]\^D \(uniform prior\); row\(s\) "
                                         r"\[1\] have entries outside it"):
        uniform.act(np.zeros((2, 29)), [[0.2, 0.9], [1.5, 0.0]])
    with pytest.raises(CheckpointError, match=r"'skill_prior' must be one of \['unit', 'gaussian', 'uniform'\]"):
        SkillPolicy.from_pretrained(_with_prior(tmp_path, "laplace"))


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_the_numpy_forward_gives_the_torch_actions(ant, activation):
    """Single observations run in NumPy (NumpySkillActor), batches in torch: the same actions to 3e-5, on states of
    a real rollout and on draws within 3 normaliser standard deviations. Not bit for bit: the float32 sums run in
    another order. Measured: at most 3e-6 with the trained tanh actor; 1.3e-5 with its weights read as a ReLU actor,
    whose unbounded hidden units reach larger values than a trained ReLU actor's."""
    import gymnasium as gym

    from metra_gym.skill_policy import SkillPolicy as Policy

    policy = ant
    if activation == "relu":  # CrossQ's actors: the same weights read with ReLU hidden layers
        weights = {f"{prefix}{k}": v for prefix, module in ant._modules() for k, v in module.state_dict().items()}
        policy = Policy({**ant.config, "actor_activation": "relu"}, weights)
    env = gym.make("metra/Ant-v0")
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    states = [obs]
    for _ in range(60):
        obs, *_ = env.step(policy.act(obs, [0.6, 0.8]))
        states.append(obs)
    env.close()
    draws = policy.normalizer.mean + 3 * policy.normalizer.std * rng.standard_normal((60, 29))
    observations = np.concatenate([np.stack(states), draws])
    skills = rng.standard_normal((len(observations), 2))
    skills /= np.linalg.norm(skills, axis=1, keepdims=True)
    batch = policy.act(observations, skills)  # torch
    single = np.stack([policy.act(o, z) for o, z in zip(observations, skills)])  # NumPy
    fixed = np.stack([policy.fixed_skill_actor(skills[0])(o) for o in observations])  # NumPy, the skill env's path
    np.testing.assert_allclose(single, batch, rtol=0, atol=3e-5)
    np.testing.assert_allclose(fixed, policy.act(observations, skills[0]), rtol=0, atol=3e-5)
    assert np.abs(batch).max() > 0.5  # actions that vary, not a saturated or zero output


def test_the_numpy_forward_refuses_what_the_torch_one_refuses(ant):
    act = ant.fixed_skill_actor([1.0, 0.0])
    with pytest.raises(ValueError, match="observations must have 29 entries"):
        act(np.zeros(18))
    with pytest.raises(ValueError, match="observations must be finite"):
        act(np.full(29, np.nan))
    with pytest.raises(TypeError, match="observations must be arrays of numbers"):
        act(["a"] * 29)
    with pytest.raises(ValueError, match="skills must be finite"):
        ant.fixed_skill_actor([np.nan, 1.0])
