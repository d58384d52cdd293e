"""The registry of algorithms (pretrain.config.registry.REGISTRY): one row per algorithm that the config, the CLI and
the classes all read, and light enough for the config and the CLI's start."""

import dataclasses
import inspect

import pytest

from pretrain.algorithms import algorithm_class
from pretrain.config import ALGORITHM_KEYS, REGISTRY, PretrainConfig
from tests.metra_gym.helpers import heavy_modules_after


def test_the_registry_and_the_config_load_without_torch():
    heavy = ("torch", "stable_baselines3", "sb3_contrib")
    # (pretrain.config loads its modules on first use: config.files is the configuration, files and checks)
    assert heavy_modules_after("pretrain, pretrain.algorithms, pretrain.config.files", "metra/Ant-v0", heavy) == []


@pytest.mark.parametrize("algo", list(REGISTRY))
def test_each_row_names_keywords_its_learner_takes_and_keys_only_it_owns(algo):
    entry = REGISTRY[algo]
    cls = algorithm_class(algo)
    learner, kwargs = cls.learner_class, cls.learner_kwargs(PretrainConfig(algo=algo, **entry.skill_space))
    parameters = inspect.signature(learner.__init__).parameters
    assert set(kwargs) <= set(parameters) and {*entry.networks, *entry.own_keys} <= set(kwargs)
    fields = {f.name for f in dataclasses.fields(PretrainConfig)}
    assert set(entry.config_keys) <= fields and set(entry.choices) <= set(entry.config_keys)
    others = {key for other, keys in ALGORITHM_KEYS.items() if other != algo for key in keys}
    assert not set(entry.config_keys) & others
