"""APS (URLB's): the reward r_ent + r_sf (the particle entropy of phi(s') divided by the running mean of its k-NN
distances, plus w^T phi(s') / ||phi(s')||), phi's von Mises-Fisher loss, and the successor-feature critic
Q = psi(s, w, a)^T w, on hand-computed values."""

import math

import numpy as np
import pytest
import torch as th
from torch import nn

from pretrain.algorithms.aps import APS, APSLearner, SuccessorFeatureCritic

NEXT_OBS = th.tensor([[0.0, 2.0], [3.0, 4.0], [0.0, 1.0]])
W = th.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, -1.0]])  # the tasks (skills), unit vectors


def _learner(**kwargs) -> APSLearner:
    th.manual_seed(0)
    learner = APSLearner(obs_dim=2, skill_dim=2, discrete_skills=False, aps_net_arch=[8], knn_k=2, **kwargs)
    learner.features = nn.Identity()  # phi(s') = s'
    return learner


def test_the_reward_is_the_normalised_particle_entropy_plus_the_successor_feature_reward():
    learner = _learner()
    learner.entropy.moments.mean.fill_(2.0)  # M, the running mean of the k-NN distances
    # k = 2 nearest phi(s'): (0, 1) ; (0, sqrt(13)) ; (0, 1), divided by M = 2 and clipped at c = 1e-4
    entropy = [math.log1p((0.5 - 1e-4) / 2), math.log1p((math.sqrt(13) / 2 - 1e-4) / 2), math.log1p((0.5 - 1e-4) / 2)]
    # w^T phi(s') / ||phi(s')||: (1, 0).(0, 1) = 0 ; (0.6, 0.8).(0.6, 0.8) = 1 ; (0, -1).(0, 1) = -1
    successor = [0.0, 1.0, -1.0]
    reward = learner.reward(th.zeros(3, 2), NEXT_OBS, W)
    np.testing.assert_allclose(reward.numpy(), (np.array(entropy) + successor)[:, None], rtol=1e-5, atol=1e-7)


def test_phis_loss_is_minus_the_mean_cosine_of_w_and_phi_of_the_next_state():
    learner = _learner()
    learner.features = nn.Linear(2, 2)
    with th.no_grad():
        learner.features.weight.copy_(th.eye(2))
        learner.features.bias.zero_()
    learner.aps_optimizer = th.optim.Adam(learner.features.parameters(), lr=1e-2)
    tasks = th.tensor([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0]])  # cosines with phi(s') = s': 1, 1, 0
    stats = learner.update(th.zeros(3, 2), NEXT_OBS, tasks)
    assert stats["aps/loss"].item() == pytest.approx(-2 / 3, rel=1e-6)
    for _ in range(5):
        learner.update(th.zeros(3, 2), NEXT_OBS, tasks)
    with th.no_grad():  # phi(s') turned towards the tasks: their mean cosine grew
        assert learner.successor_feature_reward(learner.features(NEXT_OBS), tasks).mean().item() > 2 / 3 + 1e-3
    # the k-NN distances of phi(s') joined the running mean (6 steps, 6 distances each)
    assert learner.entropy.moments.count.item() == pytest.approx(36.0001)


def test_the_defaults_are_urlbs():
    learner = APSLearner(obs_dim=3, skill_dim=10, discrete_skills=False)
    entropy = learner.entropy
    assert (entropy.knn_k, entropy.knn_clip, entropy.knn_rms, learner.skill_prior) == (12, 1e-4, True, "unit")
    assert learner.features[-1].out_features == 10


def test_the_critic_is_the_successor_features_of_the_task_times_the_task():
    model = APS("MlpPolicy", "metra/PointMass-v0", buffer_size=2000, policy_kwargs={"net_arch": [16]},
                device="cpu")  # the CPU tensors below; SB3's default "auto" is CUDA where there is one
    critic = model.critic
    assert isinstance(critic, SuccessorFeatureCritic) and isinstance(model.critic_target, SuccessorFeatureCritic)
    assert model.skill_dim == critic.sf_dim == 10 and critic.q_networks[0][-1].out_features == 10
    obs = th.cat([th.randn(5, 2), nn.functional.normalize(th.randn(5, 10), dim=1)], dim=1)
    actions = th.rand(5, 2) * 2 - 1
    with th.no_grad():
        q = critic(obs, actions)
        for head, psi in zip(q, critic.successor_features(obs, actions)):
            th.testing.assert_close(head, (psi * obs[:, 2:]).sum(dim=1, keepdim=True))
        th.testing.assert_close(critic.q1_forward(obs, actions), q[0])
