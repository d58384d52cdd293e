"""APT (URLB's icm_apt): the particle entropy of the embedded states s of a minibatch, the embedding trained by ICM's
losses, on hand-computed values."""

import math

import numpy as np
import torch as th
from torch import nn

from pretrain.algorithms.apt import APTLearner

OBS = th.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])


def _learner(**kwargs) -> APTLearner:
    th.manual_seed(0)
    return APTLearner(obs_dim=2, skill_dim=0, discrete_skills=False, action_dim=2, icm_net_arch=[8], embedding_dim=4,
                      knn_k=2, **kwargs)


def test_the_reward_is_the_particle_entropy_of_the_embedded_states_not_the_next_states():
    learner = _learner()
    learner.model.embedding = nn.Identity()  # e(s) = s
    next_obs, actions = th.tensor([[9.0, 9.0], [-9.0, 0.0], [0.0, 50.0]]), th.zeros(3, 2)
    expected = [math.log1p(0.5), math.log1p(math.sqrt(18) / 2), math.log1p(0.5)]  # k = 2, itself included
    reward = learner.reward(OBS, next_obs, th.zeros(3, 0), actions=actions)
    np.testing.assert_allclose(reward.numpy(), np.array(expected)[:, None], rtol=1e-5)
    # URLB's icm_apt.yaml: no running normalisation, no clip
    assert (learner.entropy.knn_rms, learner.entropy.knn_clip, _learner().entropy.knn_k) == (False, 0.0, 2)
    assert (APTLearner(2, 0, False, 2).entropy.knn_k, APTLearner(2, 0, False, 2).model.embedding[0].out_features) == (
        12, 512)


def test_a_step_descends_icms_losses_in_the_embedding_and_with_knn_rms_merges_the_distances():
    learner = _learner(knn_rms=True, icm_learning_rate=1e-2)
    obs, actions = th.randn(32, 2), th.rand(32, 2) * 2 - 1
    next_obs = obs + actions
    forward_error, inverse_error = learner.model.errors(obs, actions, next_obs)
    before = (forward_error.mean() + inverse_error.mean()).item()
    stats = learner.update(obs, next_obs, th.zeros(32, 0), actions=actions)
    assert abs(stats["apt/loss"].item() - before) < 1e-6 * max(1.0, before)
    forward_error, inverse_error = learner.model.errors(obs, actions, next_obs)
    assert (forward_error.mean() + inverse_error.mean()).item() < before
    with th.no_grad():  # the running mean is that of the distances under the updated embedding
        distances = learner.entropy.distances(learner.model.embedding(obs)).double()
    assert learner.entropy.moments.count.item() == 32 * 2 + 1e-4
    np.testing.assert_allclose(learner.entropy.moments.mean.item(), distances.mean().item(), rtol=1e-5)
