"""The k-NN particle entropy of APT and APS (URLB's utils.PBE with knn_avg) and the running moments that normalise it
(URLB's utils.RMS), against hand-computed values."""

import math

import numpy as np
import pytest
import torch as th

from pretrain.algorithms.common.particle_entropy import ParticleEntropy, RunningMoments

POINTS = th.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])


def test_the_reward_is_the_log_of_one_plus_the_mean_distance_to_the_k_nearest_particles_itself_included():
    entropy = ParticleEntropy(knn_k=2, knn_clip=0.0, knn_rms=False)
    # k = 2 nearest, itself first at 0: (0, 1) ; (0, sqrt(18)) ; (0, 1)
    np.testing.assert_allclose(entropy.distances(POINTS).numpy(), [[0, 1], [0, math.sqrt(18)], [0, 1]], atol=1e-6)
    expected = [math.log1p(0.5), math.log1p(math.sqrt(18) / 2), math.log1p(0.5)]
    np.testing.assert_allclose(entropy(POINTS).numpy(), np.array(expected)[:, None], rtol=1e-5)
    entropy = ParticleEntropy(knn_k=3, knn_clip=0.0, knn_rms=False)  # all three: (0 + 1 + 5) / 3 for the first
    assert entropy(POINTS)[0, 0].item() == pytest.approx(math.log1p(2.0), rel=1e-5)


def test_with_knn_rms_the_distances_are_divided_by_their_running_mean_then_clipped():
    entropy = ParticleEntropy(knn_k=2, knn_clip=0.1, knn_rms=True)
    entropy.moments.mean.fill_(4.0)
    # log(1 + mean(max(d / M - c, 0))): the self-distance 0 stays 0 after the clip
    expected = [math.log1p((0.25 - 0.1) / 2), math.log1p((math.sqrt(18) / 4 - 0.1) / 2), math.log1p((0.25 - 0.1) / 2)]
    np.testing.assert_allclose(entropy(POINTS).numpy(), np.array(expected)[:, None], rtol=1e-5)
    entropy.update(POINTS)  # merges the 6 k-NN distances 0, 1, 0, sqrt(18), 0, 1 into M = 4 (count 1e-4)
    assert entropy.moments.count.item() == pytest.approx(6.0001)
    assert entropy.moments.mean.item() == pytest.approx((4 * 1e-4 + 2 + math.sqrt(18)) / 6.0001, rel=1e-6)


def test_without_knn_rms_update_leaves_the_moments_alone():
    entropy = ParticleEntropy(knn_k=2, knn_clip=0.0, knn_rms=False)
    entropy.update(POINTS)
    assert entropy.moments.count.item() == pytest.approx(1e-4)


def test_running_moments_merge_each_batch_as_urlbs_rms():
    moments = RunningMoments()
    moments.update(th.tensor([[1.0, 2.0], [3.0, 4.0]]))
    # From 1e-4 pseudo-samples of mean 0 and variance 1, merge n = 4 samples of mean 2.5 and (unbiased) variance 5/3:
    c, n, delta = 1e-4, 4, 2.5
    assert moments.mean.item() == pytest.approx(delta * n / (c + n), rel=1e-12)
    assert moments.var.item() == pytest.approx((c + 5 / 3 * n + delta**2 * c * n / (c + n)) / (c + n), rel=1e-12)


def test_a_batch_smaller_than_k_is_one_clear_error():
    with pytest.raises(ValueError, match="needs knn_k=12 neighbours among a minibatch of 3; use a batch_size >= 12"):
        ParticleEntropy(knn_k=12, knn_clip=0.0, knn_rms=False)(POINTS)
    with pytest.raises(ValueError, match="knn_k must be >= 1"):
        ParticleEntropy(knn_k=0, knn_clip=0.0, knn_rms=False)
