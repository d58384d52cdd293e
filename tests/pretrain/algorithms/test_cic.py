"""CIC (URLB's): the k-NN entropy reward and its running statistics, the contrastive loss with the positive out of
the denominator and its step, 64 skills uniform in [0, 1], save/load, exact resume, and learning on the point mass."""

import math

import numpy as np
import pytest
import torch as th
import torch.nn.functional as F
from torch import nn

from pretrain.algorithms.cic import CIC, CICLearner
from pretrain.config import load_config
from pretrain.run.coverage import SkillRollouts, coverage
from pretrain.run.envs import env_factory, training_env
from pretrain.run.trainer import train
from tests.pretrain.helpers import random_policy_coverage, skill_step_batch, tiny_model

TINY = ["algo=cic", "net_width=32", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_every=100",
        "eval_skills=4"]


def _learner(**kwargs) -> CICLearner:
    th.manual_seed(0)
    return CICLearner(obs_dim=2, skill_dim=2, discrete_skills=False, cic_net_arch=[32, 32], **kwargs)


def test_reward_is_the_log_mean_distance_to_the_k_nearest_next_states():
    learner = _learner(knn_k=2, knn_clip=0.0)
    learner.state_net = nn.Identity()  # g(s') = s'
    next_obs = th.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    # k = 2 nearest, itself included: (0, 1) ; (0, sqrt(18)) ; (0, 1); running variance 1 at the start
    expected = [math.log1p(0.5), math.log1p(math.sqrt(18) / 2), math.log1p(0.5)]
    reward = learner.reward(th.zeros(3, 2), next_obs, th.zeros(3, 2))
    np.testing.assert_allclose(reward.numpy(), np.array(expected)[:, None], rtol=1e-6)
    # Distances divided by the running variance S, then the clip c: log(1 + mean(max(d / S - c, 0)))
    learner.knn_clip = 0.1
    learner.knn_var.fill_(4.0)
    expected = [math.log1p((0 + 0.25 - 0.1) / 2), math.log1p((0 + math.sqrt(18) / 4 - 0.1) / 2),
                math.log1p((0 + 0.25 - 0.1) / 2)]
    reward = learner.reward(th.zeros(3, 2), next_obs, th.zeros(3, 2))
    np.testing.assert_allclose(reward.numpy(), np.array(expected)[:, None], rtol=1e-6)


def test_running_statistics_merge_each_batch_as_the_reference_code_does():
    learner = _learner()
    learner.update_knn_statistics(th.tensor([[1.0, 2.0], [3.0, 4.0]]))
    # From 1e-4 pseudo-samples of mean 0 and variance 1, merge n = 4 samples of mean 2.5 and (unbiased) variance 5/3:
    # M' = M + delta n / (c + n) ; S' = (S c + var n + delta^2 c n / (c + n)) / (c + n)
    c, n, delta = 1e-4, 4, 2.5
    assert learner.knn_mean.item() == pytest.approx(delta * n / (c + n), rel=1e-12)
    assert learner.knn_var.item() == pytest.approx((c + 5 / 3 * n + delta**2 * c * n / (c + n)) / (c + n), rel=1e-12)
    learner.update_knn_statistics(th.tensor([[5.0, 6.0]]))
    assert learner.knn_count.item() == pytest.approx(6.0001)
    assert learner.knn_mean.item() == pytest.approx(3.5, rel=1e-4)  # the mean of 1..6


def test_contrastive_logits_compare_every_skill_with_every_transition():
    learner = _learner(project_skill=False, temperature=0.5)
    learner.state_net = nn.Identity()
    learner.pred_net = nn.Linear(4, 2, bias=False)  # the key: g(s') = s'
    with th.no_grad():
        learner.pred_net.weight.copy_(th.tensor([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
    next_obs = th.tensor([[2.0, 0.0], [0.0, -3.0]])
    z = th.tensor([[1.0, 0.0], [0.6, -0.8]])
    # cosines: z0.(1,0) = 1, z0.(0,-1) = 0, z1.(1,0) = 0.6, z1.(0,-1) = 0.8 ; divided by T = 0.5
    logits = learner.contrastive_logits(th.zeros(2, 2), next_obs, z)
    th.testing.assert_close(logits, th.tensor([[2.0, 0.0], [1.2, 1.6]]))
    loss = learner.contrastive_loss(th.zeros(2, 2), next_obs, z)
    # The references' formula: -log(e^l_ii / (max(sum_j e^l_ij - e^(1/T), 1e-6) + 1e-6)); 1/T = 2
    rows = [(2.0, [2.0, 0.0]), (1.6, [1.2, 1.6])]
    expected = np.mean([math.log(max(sum(math.exp(v) for v in row) - math.exp(2.0), 1e-6) + 1e-6) - positive
                        for positive, row in rows])
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # ... not the usual cross-entropy, whose denominator keeps the positive
    usual = (F.cross_entropy(logits, th.arange(2))).item()
    assert abs(loss.item() - usual) > 1.0


def test_the_contrastive_loss_stays_finite_at_a_small_temperature():
    learner = _learner(temperature=0.01)  # e^(1/T) = e^100 overflows float32
    obs, next_obs, z = skill_step_batch(1.0, n=32)
    loss = learner.contrastive_loss(obs, next_obs, z)
    assert th.isfinite(loss)
    loss.backward()
    assert all(th.isfinite(p.grad).all() for p in learner.parameters() if p.grad is not None)


def test_knn_distances_are_from_the_next_states_or_with_the_csf_fork_from_the_states():
    learner = _learner(knn_k=2, knn_clip=0.0)
    learner.state_net = nn.Identity()
    obs = th.tensor([[0.0, 0.0], [10.0, 0.0]])
    next_obs = th.tensor([[1.0, 0.0], [10.0, 2.0]])
    # URLB: g(s'_i) to every g(s'_j): (0, sqrt(81 + 4)) for both rows
    th.testing.assert_close(learner.knn_distances(obs, next_obs), th.tensor([[0.0, 85**0.5], [0.0, 85**0.5]]))
    learner.knn_query = "state"  # the CSF fork: g(s_i) to every g(s'_j): (1, sqrt(100 + 4)) ; (2, 9)
    th.testing.assert_close(learner.knn_distances(obs, next_obs), th.tensor([[1.0, 104**0.5], [2.0, 9.0]]))
    with pytest.raises(ValueError, match="knn_query must be one of next_state, state, got 'obs'"):
        _learner(knn_query="obs")


def test_one_step_lowers_the_contrastive_loss_and_updates_the_statistics():
    learner = _learner(cic_learning_rate=1e-3)
    obs, next_obs, z = skill_step_batch(1.0)
    before = learner.contrastive_loss(obs, next_obs, z).item()
    stats = learner.update(obs, next_obs, z)
    assert stats["cic/contrastive_loss"].item() == pytest.approx(before, rel=1e-6)
    assert learner.contrastive_loss(obs, next_obs, z).item() < before - 1e-4
    assert learner.knn_count.item() == pytest.approx(256 * 16 + 1e-4)
    with th.no_grad():  # the statistics are those of the distances under the updated encoder
        distances = learner.knn_distances(obs, next_obs).double()
    assert learner.knn_mean.item() == pytest.approx(distances.mean().item(), rel=1e-6)


def test_the_sb3_class_has_the_papers_defaults(tmp_path):
    _, config = tiny_model(tmp_path, algo="cic")
    model = CIC("MlpPolicy", training_env(config, env_factory(config)), cic_net_arch=[8],
                policy_kwargs={"net_arch": [8]})
    learner = model.skill_learner
    assert (model.learning_rate, model.learning_starts, model.gradient_steps) == (1e-4, 10_000, 50)
    assert (learner.temperature, learner.knn_k, learner.knn_clip, learner.knn_query) == (0.5, 16, 5e-4, "next_state")
    assert isinstance(learner.skill_net, nn.Sequential)
    # URLB's skill space: 64 dimensions, uniform in [0, 1]^64 (a config switched to CIC takes it too)
    assert model.skill_dim == config.skill_dim == 64 and learner.skill_prior == "uniform"
    assert model.env.get_attr("skill_prior") == ["uniform", "uniform"]
    skills = learner.sample_skills(10_000).numpy()
    assert skills.min() >= 0.0 and skills.max() <= 1.0
    np.testing.assert_allclose(skills.mean(0), 0.5, atol=0.02)
    np.testing.assert_allclose(skills.var(0), 1 / 12, rtol=0.1)


def test_cic_point_mass_training_visits_several_times_what_random_actions_do(tmp_path):
    """CIC's reward is the entropy of the visited states, which shows in the training transitions' coverage; its
    deterministic skills (64-D, uniform in [0, 1]^64) must at least move far beyond the untrained policy."""
    config = load_config("point_mass", ["algo=cic", "epochs=30", "eval_every=30", "save_every=30",
                                        "torch_threads=1", "save_replay_buffer=false"])
    history = train(config, tmp_path / "run", verbose=0).history
    episodes = config.epochs * config.n_envs
    rng = np.random.default_rng(0)
    rollouts = SkillRollouts(env_factory(config), episodes, config.episode_steps)
    random_total = coverage(rollouts.run(lambda obs, z: rng.uniform(-1, 1, (len(obs), 2)), np.zeros((episodes, 2))))
    rollouts.close()
    print(f"CIC: training coverage {history[-1]['total_coverage']} (random actions {random_total}), policy coverage "
          f"{history[-1]['policy_coverage']} (random {random_policy_coverage(config)})")
    assert history[-1]["total_coverage"] >= 2 * random_total
    assert history[-1]["policy_coverage"] >= 5 * history[0]["policy_coverage"]
