"""The Python API refuses what ``metra-pretrain train`` refuses, with the same message (one validation path), and a
saved model loads only with the class of its algorithm and backbone."""

import gymnasium as gym
import pytest
from stable_baselines3 import SAC

import pretrain
from pretrain.algorithms.lsd import LSD
from pretrain.algorithms.metra import METRA
from pretrain.cli import main
from pretrain.config import ConfigError

SMALL = {"learning_starts": 50, "batch_size": 32, "buffer_size": 2000, "policy_kwargs": {"net_arch": [8]}}


def _cli_error(capsys, tmp_path, config_text: str, *overrides: str) -> str:
    config = tmp_path / "bad.yaml"
    config.write_text("env_id: metra/PointMass-v0\n" + config_text)
    code = main(["train", "--no-progress", "--config", str(config), "--run-dir", str(tmp_path / "run"),
                 *(f"--set={item}" for item in overrides)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1 and not (tmp_path / "run").exists(), err
    return err.strip().removeprefix("metra-pretrain: error: ")


@pytest.mark.parametrize(("keywords", "config_text", "overrides"), [
    ({"dual_slack": -1}, "", ["dual_slack=-1"]),
    ({"discrete_skills": "no"}, 'discrete_skills: "no"\n', []),
    ({"batch_size": 0}, "", ["batch_size=0"]),
    ({"learning_rate": float("nan")}, "", ["learning_rate=.nan"]),
    ({"buffer_size": 10**12}, "", ["buffer_size=1000000000000"]),
    ({"tau": 0.1, "backbone": "crossq"}, "", ["tau=0.1", "backbone=crossq"]),
    ({"device": "cuda:99"}, "", ["device=cuda:99"]),
])
def test_the_python_api_refuses_what_the_cli_refuses_with_the_same_message(tmp_path, capsys, keywords, config_text,
                                                                              overrides):
    keywords = dict(keywords)
    cls = METRA.on_backbone(keywords.pop("backbone", "sac"))
    with pytest.raises(ConfigError) as error:
        # on the CLI's default device (the config's "cpu"; the Python API's SB3 "auto" is CUDA where there is one,
        # and the memory check then counts the networks on the GPU too)
        cls("MlpPolicy", "metra/PointMass-v0", **{"device": "cpu", **keywords})
    assert str(error.value) == _cli_error(capsys, tmp_path, config_text, *overrides)


@pytest.mark.parametrize(("keywords", "message"), [
    ({"policy_kwargs": {"net_arch": [0]}}, r"policy_kwargs net_arch must be a list of hidden widths, each an integer "
                                           r">= 1, got \[0\]"),
    ({"phi_net_arch": [16, -2]}, r"phi_net_arch must be a list of hidden widths, each an integer >= 1, got \[16, -2\]"),
])
def test_networks_only_python_can_shape_are_checked_too(keywords, message):
    with pytest.raises(ConfigError, match=message):
        METRA("MlpPolicy", "metra/PointMass-v0", **{**SMALL, **keywords})


@pytest.mark.parametrize("env", [42, None, [1, 2]])
def test_an_env_that_is_no_environment_is_one_clear_error(env):
    with pytest.raises(ConfigError, match=r"env must be a Gymnasium environment id, a Gymnasium environment or a "
                                          r"VecEnv, got "):
        METRA("MlpPolicy", env)


def test_an_unknown_id_and_discrete_actions_are_the_clis_errors():
    with pytest.raises(ConfigError, match=r"unknown environment id 'metra/Nope-v0'; metra-gym registers"):
        METRA("MlpPolicy", "metra/Nope-v0")
    with pytest.raises(ConfigError, match=r"CartPole-v1 has Discrete\(2\) actions"):
        METRA("MlpPolicy", gym.make("CartPole-v1"))


def test_load_refuses_a_plain_sb3_zip_another_algorithms_and_another_backbones(tmp_path):
    SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}).save(tmp_path / "sac.zip")
    with pytest.raises(ConfigError, match=r"sac.zip is not a skill-discovery model of metra-gym \(it has no skill "
                                          r"learner\); a plain SB3 model loads with its own class"):
        METRA.load(tmp_path / "sac.zip")
    METRA("MlpPolicy", "metra/PointMass-v0", **SMALL).save(tmp_path / "metra.zip")
    with pytest.raises(ConfigError, match=r"metra.zip is a model of METRA \(skill learner METRALearner\), not of LSD; "
                                          r"load it with METRA.load"):
        LSD.load(tmp_path / "metra.zip")
    with pytest.raises(ConfigError, match=r"metra.zip was saved on backbone sac, and METRACrossQ runs on crossq; load "
                                          r"it with METRA.on_backbone\('sac'\).load"):
        METRA.on_backbone("crossq").load(tmp_path / "metra.zip")
    assert type(METRA.load(tmp_path / "metra.zip")) is METRA
    assert "trusted input" in METRA.load.__doc__ and "unpickles" in METRA.load.__doc__


def test_the_signature_shows_the_configurations_defaults_and_builds_what_it_shows():
    """One source of defaults: the signature is derived from the configuration (``config_kwargs`` of the default
    config), and a model built with nothing given has those values."""
    for algo in pretrain.ALGORITHMS:
        for backbone in ("sac", "crossq"):
            cls = pretrain.algorithm_class(algo, backbone)
            config = cls.default_config()
            shown = {name: p.default for name, p in cls.__signature__.parameters.items() if name not in (
                "policy", "env", "kwargs")}
            derived = cls.config_kwargs(config)
            for name, default in shown.items():
                if default is not None and name in derived and name != "normalizer":
                    assert default == derived[name], (algo, backbone, name)
            assert shown["normalizer"] == "auto" and ":param dual_slack:" in pretrain.METRA.__doc__
    model = METRA("MlpPolicy", "metra/PointMass-v0", buffer_size=2000)
    derived = METRA.config_kwargs(METRA.default_config("metra/PointMass-v0"))
    assert model.learning_rate == derived["learning_rate"] and model.train_freq.frequency == 200
    assert model.skill_learner_kwargs["phi_net_arch"] == derived["phi_net_arch"] == [256, 256]
    assert model.policy_kwargs["net_arch"] == derived["policy_kwargs"]["net_arch"]
