"""The SB3-shaped classes (METRA, LSD, DIAYN, DADS, CIC): defaults from the training config, plain Gymnasium envs,
save / load / export, and the same model as the CLI builds."""

import json

import gymnasium as gym
import numpy as np
import pytest
import torch as th

import metra_gym
from pretrain.algorithms import algorithm_class
from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.algorithms.metra import METRA
from pretrain.cli import main
from pretrain.config import ALGORITHM_SKILL_SPACES, ALGORITHMS, PretrainConfig, load_config
from pretrain.run.envs import env_factory, training_env
from pretrain.run.model import build_model

SWIMMER_KWARGS = {"exclude_current_positions_from_observation": False}
SMALL = {"learning_starts": 50, "batch_size": 32, "gradient_steps": 2, "train_freq": (50, "step"),
         "buffer_size": 2000, "policy_kwargs": {"net_arch": [16, 16]}}


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_a_class_built_in_python_takes_the_training_configs_defaults(algo):
    config = PretrainConfig(algo=algo, **ALGORITHM_SKILL_SPACES.get(algo, {}))  # CIC: 64 continuous skills
    model = algorithm_class(algo)("MlpPolicy", "metra/PointMass-v0", buffer_size=2000)
    assert type(model).__name__ == algo.upper()
    assert (model.learning_rate, model.learning_starts, model.gradient_steps, model.batch_size) == (
        config.learning_rate, config.learning_starts, config.gradient_steps, config.batch_size)
    assert model.train_freq.frequency == config.episode_steps
    assert [layer.out_features for layer in model.actor.latent_pi if isinstance(layer, th.nn.Linear)] == config.hidden
    assert model.skill_learner_kwargs == algorithm_class(algo).learner_kwargs(config)
    assert (model.skill_dim, model.discrete_skills) == (config.skill_dim, config.discrete_skills)


def test_the_package_exports_every_algorithm_class():
    import pretrain

    assert pretrain.__all__[:len(ALGORITHMS)] == [algo.upper() for algo in ALGORITHMS]
    assert all(getattr(pretrain, algo.upper()) is algorithm_class(algo) for algo in ALGORITHMS)


def test_learner_hyperparameters_are_keywords_of_their_own_and_policy_kwargs_merge():
    model = METRA("MlpPolicy", "metra/PointMass-v0", buffer_size=2000, phi_net_arch=[8], dual_slack=0.01,
                  policy_kwargs={"net_arch": [16]})
    assert model.skill_learner.phi.net[0].out_features == 8 and model.skill_learner.dual_slack == 0.01
    assert model.policy_kwargs["optimizer_kwargs"] == {"fused": True}  # the config's, kept beside net_arch
    with pytest.raises(TypeError, match="banana"):
        METRA("MlpPolicy", "metra/PointMass-v0", banana=1)


def test_on_backbone_gives_the_algorithm_on_crossq_and_tqc():
    crossq = METRA.on_backbone("crossq")
    assert crossq is algorithm_class("metra", "crossq") and crossq.__name__ == "METRACrossQ"
    model = crossq("MlpPolicy", "metra/PointMass-v0", buffer_size=2000)
    assert model.policy_kwargs["optimizer_kwargs"]["betas"] == (0.5, 0.999)
    assert "tau" not in crossq.config_kwargs(PretrainConfig(backbone="crossq"))  # CrossQ has no target networks
    assert type(algorithm_class("lsd", "tqc")("MlpPolicy", "metra/PointMass-v0", buffer_size=2000)).__name__ == "LSDTQC"
    assert METRA.on_backbone("sac") is METRA
    with pytest.raises(ValueError, match="backbone must be one of sac, crossq, tqc, got 'ppo'"):
        METRA.on_backbone("ppo")


def test_the_cli_builds_the_model_a_script_builds(tmp_path):
    config = load_config("point_mass", ["net_width=16", "n_envs=2", "buffer_size=1000"])
    trained_by_cli = build_model(config, training_env(config, env_factory(config)), tmp_path)
    by_script = METRA("MlpPolicy", training_env(config, env_factory(config)), **METRA.config_kwargs(config))
    assert type(trained_by_cli) is METRA
    for key in ("learning_rate", "gradient_steps", "batch_size", "learning_starts", "skill_learner_kwargs",
                "policy_kwargs", "target_entropy", "tau", "gamma"):
        assert getattr(trained_by_cli, key) == getattr(by_script, key), key
    for a, b in zip(trained_by_cli.policy.state_dict().values(), by_script.policy.state_dict().values()):
        assert th.equal(a, b)  # same seed, same networks


def test_a_plain_env_trains_saves_loads_and_exports_skills_that_skill_env_runs(tmp_path):
    model = METRA("MlpPolicy", gym.make("Swimmer-v5", **SWIMMER_KWARGS), phi_net_arch=[16], seed=0,
                  **{**SMALL, "policy_kwargs": {"net_arch": [16, 8]}})  # any MLP exports as it is
    assert isinstance(model.get_env().envs[0], gym.Wrapper) and model.observation_space.shape == (12,)
    model.learn(100)
    model.save(tmp_path / "model.zip")
    loaded = METRA.load(tmp_path / "model.zip", env=gym.make("Swimmer-v5", **SWIMMER_KWARGS))
    assert loaded.num_timesteps == 100 and loaded.get_env().env_is_wrapped(SkillConditioned)[0]
    loaded.export_skills(tmp_path / "skills")
    config = json.loads((tmp_path / "skills" / "config.json").read_text())
    assert (config["env_id"], config["env_kwargs"], config["skill_env_id"]) == ("Swimmer-v5", SWIMMER_KWARGS, None)
    assert config["actor_hidden"] == [16, 8] and config["phi_hidden"] == [16]
    assert config["provenance"]["config"]["algo"] == "metra" and config["provenance"]["env_steps"] == 100
    card = (tmp_path / "skills" / "README.md").read_text()
    assert ('metra_gym.SkillEnv(gym.make("Swimmer-v5", exclude_current_positions_from_observation=False), '
            'checkpoint=') in card and "AntSkills" not in card

    policy = metra_gym.SkillPolicy.from_pretrained(tmp_path / "skills")
    obs = np.random.default_rng(0).standard_normal((4, 10)).astype(np.float32)
    z = np.array([[1.0, 0.0]] * 4, dtype=np.float32)
    with th.no_grad():
        expected = loaded.actor(th.as_tensor(np.concatenate([obs, z], 1), device=loaded.device),
                                deterministic=True).cpu().numpy()
    np.testing.assert_allclose(policy.act(obs, z), expected, rtol=1e-5, atol=1e-6)
    env = metra_gym.SkillEnv(gym.make("Swimmer-v5", **SWIMMER_KWARGS), tmp_path / "skills", skill_steps=5)
    env.reset(seed=0)
    assert env.step(np.array([0.0, 1.0]))[4]["skill_steps"] == 5


def test_a_model_loaded_without_an_env_cannot_export_and_says_how(tmp_path):
    from pretrain.config import ConfigError

    model = METRA("MlpPolicy", "metra/PointMass-v0", **SMALL)
    model.save(tmp_path / "model.zip")
    with pytest.raises(ConfigError, match=r"load it with its environment: METRA.load\(path, env=...\)"):
        METRA.load(tmp_path / "model.zip").export_skills(tmp_path / "skills")
    assert not (tmp_path / "skills").exists()


def test_a_cli_run_continues_in_python(tmp_path, capsys):
    settings = ["epochs=1", "learning_starts=100", "net_width=16", "n_envs=2", "torch_threads=1", "eval_skills=4"]
    run = tmp_path / "run"
    assert main(["train", "--no-progress", "--config", "point_mass", "--run-dir", str(run),
                 *(f"--set={s}" for s in settings)]) == 0
    config = load_config("point_mass", settings)
    state = run / "run_state" / "latest"
    model = METRA.load(state / "model.zip", env=training_env(config, env_factory(config)))
    model.load_replay_buffer(state / "replay_buffer.pkl")
    assert type(model) is METRA and model.replay_buffer.size() * model.n_envs == config.steps_per_epoch
    model.learn(config.steps_per_epoch, reset_num_timesteps=False)
    assert model.num_timesteps == 2 * config.steps_per_epoch
    assert model.replay_buffer.size() * model.n_envs == 2 * config.steps_per_epoch


def test_load_conditions_a_plain_env_with_the_saved_skill_space_from_a_path_or_a_file_object(tmp_path):
    import io

    METRA("MlpPolicy", "metra/PointMass-v0", skill_dim=3, discrete_skills=True, **SMALL).save(tmp_path / "model.zip")
    from_file = METRA.load(io.BytesIO((tmp_path / "model.zip").read_bytes()), env=gym.make("metra/PointMass-v0"))
    from_stem = METRA.load(tmp_path / "model", env="metra/PointMass-v0")  # SB3 adds .zip, and so does the check
    for model in (from_file, from_stem):
        env = model.get_env().envs[0]
        assert model.observation_space.shape == (5,) and env.get_wrapper_attr("discrete")


def test_a_model_built_in_python_trains_what_the_cli_trains_from_the_default_config(tmp_path):
    """``METRA("MlpPolicy", env_id)`` and ``metra-pretrain train`` on a config that names only the environment, with
    the same seed and the same few changes (given in each one's words): the same environments (8 copies of episodes
    of the length asked, not the id's own 200 steps; the environment's preset normaliser), the same transitions and
    the same updates, epoch after epoch."""
    (tmp_path / "cheetah.yaml").write_text("env_id: metra/HalfCheetah-v0\n")
    run = tmp_path / "run"
    epochs, steps = 3, 8 * 100  # updates in epochs 2 and 3
    assert main(["train", "--no-progress", "--config", str(tmp_path / "cheetah.yaml"), "--run-dir", str(run),
                 "--set", f"epochs={epochs}", "--set", "episode_steps=100", "--set", f"learning_starts={steps}",
                 "--set", "gradient_steps=4",
                 "--set", "net_width=32", "--set", "torch_threads=1", "--set", "eval_skills=2",
                 "--set", "save_every=1"]) == 0
    # device="cpu": the config's default; the Python API keeps SB3's "auto" (CUDA where there is one)
    by_cli = METRA.load(run / "run_state" / "latest" / "model.zip", device="cpu")
    by_cli.load_replay_buffer(run / "run_state" / "latest")

    in_python = METRA("MlpPolicy", "metra/HalfCheetah-v0", seed=0, episode_steps=100, learning_starts=steps,
                      gradient_steps=4, policy_kwargs={"net_arch": [32, 32]}, device="cpu")
    venv = in_python.get_env()
    assert (venv.num_envs, venv.get_attr("normalizer_name")[0], in_python.normalizer) == (8, "half_cheetah",
                                                                                          "half_cheetah")
    assert venv.get_attr("spec")[0].max_episode_steps == 100 and venv.get_attr("skill_prior")[0] == "unit"
    in_python.learn(epochs * steps)

    assert by_cli.num_timesteps == in_python.num_timesteps == epochs * steps
    for name in ("observations", "next_observations", "actions", "dones"):
        np.testing.assert_array_equal(getattr(by_cli.replay_buffer, name), getattr(in_python.replay_buffer, name),
                                      err_msg=name)
    for network in ("actor", "critic", "skill_learner"):
        for (key, a), b in zip(getattr(by_cli, network).state_dict().items(),
                               getattr(in_python, network).state_dict().values()):
            assert th.equal(a, b), f"{network}.{key}"
    assert by_cli._n_updates == in_python._n_updates == 2 * 4
