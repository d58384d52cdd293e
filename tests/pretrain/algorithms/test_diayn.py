"""DIAYN: reward log q(z|s') (the reference's: no - log p(z)) on N(0, I) skills, the discriminator's
maximum-likelihood step, evaluation on the prior's skills, save/load, exact resume, and learning on the point mass."""

import math

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.skills import evaluation_skills
from pretrain.algorithms.diayn import DIAYN, DIAYNLearner
from pretrain.config import load_config
from pretrain.run.coverage import SkillRollouts
from pretrain.run.envs import env_factory, training_env
from pretrain.run.trainer import train
from tests.pretrain.helpers import random_policy_coverage, tiny_model

TINY = ["algo=diayn", "net_width=32", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_every=100",
        "eval_skills=4"]


class Constant(nn.Module):
    """A network whose output is ``value`` for every input row (a hand-set log std)."""

    def __init__(self, value: list[float]) -> None:
        super().__init__()
        self.value = th.tensor(value)

    def forward(self, x):
        return self.value.expand(len(x), -1)


def test_discrete_reward_is_the_negative_cross_entropy_of_the_skill():
    learner = DIAYNLearner(obs_dim=2, skill_dim=2, discrete_skills=True, discriminator_net_arch=[8])
    learner.discriminator.mean_net = nn.Identity()  # logits = s'
    next_obs = th.tensor([[0.0, math.log(3.0)], [0.0, math.log(3.0)]])  # q = (1/4, 3/4)
    z = th.tensor([[0.0, 1.0], [1.0, 0.0]])
    reward = learner.reward(th.zeros(2, 2), next_obs, z)
    # log(3/4) ; log(1/4): the reference's -cross_entropy, without the constant log D
    np.testing.assert_allclose(reward.numpy(), [[math.log(0.75)], [math.log(0.25)]], rtol=1e-6)


def test_continuous_reward_is_the_gaussian_log_likelihood_of_the_skill():
    learner = DIAYNLearner(obs_dim=2, skill_dim=2, discrete_skills=False, discriminator_net_arch=[8])
    learner.discriminator.mean_net = nn.Identity()  # mu(s') = s'
    learner.discriminator.log_std_net = Constant([0.0, math.log(2.0)])  # sigma = (1, 2)
    next_obs = th.tensor([[1.0, 0.0], [0.0, 0.0]])
    z = th.tensor([[1.0, 0.0], [0.6, 0.8]])
    # sum_d -0.5 ((z - mu) / sigma)^2 - log sigma - 0.5 log 2 pi
    expected = [-math.log(2.0) - math.log(2 * math.pi),
                -0.5 * 0.36 - 0.5 * 0.16 - math.log(2.0) - math.log(2 * math.pi)]
    reward = learner.reward(th.zeros(2, 2), next_obs, z)
    np.testing.assert_allclose(reward.numpy(), np.array(expected)[:, None], rtol=1e-6)


def test_a_fixed_std_discriminator_has_no_std_network():
    learner = DIAYNLearner(obs_dim=2, skill_dim=2, discrete_skills=False, discriminator_net_arch=[8], learn_std=False)
    learner.discriminator.mean_net = nn.Identity()
    assert learner.discriminator.log_std_net is None
    reward = learner.reward(th.zeros(1, 2), th.tensor([[1.0, 0.0]]), th.tensor([[0.0, 1.0]]))
    np.testing.assert_allclose(reward.numpy(), [[-1.0 - math.log(2 * math.pi)]], rtol=1e-6)


def _batch(n: int = 256):
    """Next states that point along their unit skill: a discriminator can learn to read z off s'."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((n, 2))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    next_obs = 3 * z + rng.normal(0, 0.1, (n, 2))
    return (th.zeros(n, 2), th.as_tensor(next_obs, dtype=th.float32), th.as_tensor(z, dtype=th.float32))


@pytest.mark.parametrize("discrete", [False, True])
def test_one_discriminator_step_raises_the_likelihood_of_the_true_skill(discrete):
    th.manual_seed(0)
    learner = DIAYNLearner(obs_dim=2, skill_dim=2, discrete_skills=discrete, discriminator_net_arch=[32, 32],
                           discriminator_learning_rate=1e-3)
    obs, next_obs, z = _batch()
    if discrete:
        z = th.eye(2)[(next_obs[:, 0] > 0).long()]
    before = learner.reward(obs, next_obs, z).mean()
    stats = learner.update(obs, next_obs, z)
    assert stats["diayn/discriminator_loss"].item() == pytest.approx(-before.item(), rel=1e-5)
    assert learner.reward(obs, next_obs, z).mean() > before + 1e-4


def test_the_sb3_class_has_the_papers_defaults(tmp_path):
    _, config = tiny_model(tmp_path, algo="diayn")
    model = DIAYN("MlpPolicy", training_env(config, env_factory(config)), discriminator_net_arch=[8],
                  policy_kwargs={"net_arch": [8]})
    assert (model.learning_rate, model.learning_starts, model.gradient_steps) == (1e-4, 10_000, 50)
    assert isinstance(model.skill_learner, DIAYNLearner) and model.skill_learner.discriminator.log_std_net is not None
    assert model.env.get_attr("skill_prior") == ["gaussian", "gaussian"]  # the training environment's skills


def test_training_evaluates_skills_drawn_from_the_n01_prior(tmp_path, monkeypatch):
    """The coverage evaluation of a DIAYN run rolls out N(0, I) skills (the official evaluation draws from the
    training prior), not unit vectors."""
    evaluated = []
    run = SkillRollouts.run

    def recording_run(self, act, skills, **kwargs):
        evaluated.append(skills)
        return run(self, act, skills, **kwargs)

    monkeypatch.setattr(SkillRollouts, "run", recording_run)
    train(load_config("point_mass", [*TINY, "epochs=1", "eval_skills=48", "save_replay_buffer=false"]),
          tmp_path / "run", verbose=0)
    norms = np.linalg.norm(evaluated[-1], axis=1)
    assert len(norms) == 48 and norms.std() > 0.3 and norms.max() > 1.5


def test_diayn_point_mass_skills_end_where_the_discriminator_recognises_them(tmp_path):
    """DIAYN's objective on the evaluation rollouts: q(z | s_T) picks the true skill over the others. Its skills
    stop once they are told apart, so its coverage stays near a random policy's (measured 1-2x at 30-60 epochs,
    seeds 0 and 1: 120-440 bins against 209), but far above the untrained policy's."""
    config = load_config("point_mass", ["algo=diayn", "epochs=30", "eval_every=30", "save_every=30",
                                        "torch_threads=1", "save_replay_buffer=false"])
    history = train(config, tmp_path / "run", verbose=0).history
    model = SkillSAC.load(tmp_path / "run" / "run_state" / "latest" / "model.zip", device="cpu")
    skills = evaluation_skills(48, 2, discrete=False, prior="gaussian")
    observations: list[np.ndarray] = []
    rollouts = SkillRollouts(env_factory(config), 48, config.episode_steps)
    rollouts.run(lambda obs, z: model.predict(np.concatenate([obs, z], 1), deterministic=True)[0], skills,
                 observations=observations)
    rollouts.close()
    final, z = th.as_tensor(observations[-1]), th.as_tensor(skills)
    with th.no_grad():
        true = model.skill_learner.log_likelihood(final, z).mean().item()
        others = np.mean([model.skill_learner.log_likelihood(final, z.roll(k, 0)).mean().item() for k in (12, 24, 36)])
    print(f"DIAYN: coverage {history[-1]['policy_coverage']} (random {random_policy_coverage(config)}), "
          f"log q(z|s_T) true {true:.2f} vs others {others:.2f}")
    assert true > others + 1.0
    assert history[-1]["policy_coverage"] >= 5 * history[0]["policy_coverage"]
