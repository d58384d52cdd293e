"""METRA learns for real: on the 2-D point mass, its skills must cover several times what random actions do."""

import numpy as np

from pretrain.evaluation.coverage import SkillRollouts, coverage
from pretrain.run.config import load_config
from pretrain.run.trainer import env_factory, train


def test_metra_point_mass_coverage_is_several_times_a_random_policy(tmp_path):
    config = load_config("point_mass", ["epochs=60", "eval_every=60", "save_every=60", "torch_threads=1",
                                        "save_replay_buffer=false", "seed=0"])
    history = train(config, tmp_path / "run", verbose=0)
    trained = history[-1]["policy_coverage"]

    # Baseline: 48 rollouts of uniformly random actions in the same environment, same length, seeded.
    rng = np.random.default_rng(0)
    rollouts = SkillRollouts(env_factory(config), 48, config.episode_steps)
    positions = rollouts.run(lambda obs, z: rng.uniform(-1, 1, (len(obs), 2)), np.zeros((48, 2)), seed=0)
    random_coverage = coverage(positions)

    assert history[0]["policy_coverage"] < random_coverage  # the untrained deterministic policy barely moves
    assert trained >= 3 * random_coverage, (trained, random_coverage)
