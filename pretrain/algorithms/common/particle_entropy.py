"""The particle-based entropy reward of APT, APS and CIC: k-nearest-neighbour distances within a minibatch, and the
running moments that normalise them (URLB's ``utils.RMS`` and ``utils.PBE``).

Reference: https://github.com/rll-research/url_benchmark, ``utils.py``: ``RMS`` (lines 257-276) merges every batch
into a running mean M and variance S, started at M = 0, S = 1 and 1e-4 pseudo-samples; ``PBE`` (lines 279-319)
computes, for each particle i of a batch of representations, the distances d_ij to its k nearest particles of the
same batch (itself included, at distance 0) and, with ``knn_avg`` (every URLB configuration sets it),

    r_i = log(1 + (1/k) sum_{j in kNN(i)} max(d_ij / M - c, 0))

where the division by the running *mean* M of the distances happens with ``knn_rms`` (APS: on; URLB's APT,
``icm_apt.yaml``: off) and c is ``knn_clip``. CIC (its own repository) divides by the running variance S instead
(:mod:`pretrain.algorithms.cic.cic`). Here the running moments are buffers of the learner, saved with it, and are
updated in the learner's ``update`` with the distances under the updated networks (URLB updates them while it
computes the reward of the same batch with the same networks: the same numbers), so that ``reward`` has no side
effect.
"""

from __future__ import annotations

import torch as th
from torch import nn

RMS_START_COUNT = 1e-4  # URLB's RMS epsilon: the pseudo-count of its start values M = 0, S = 1


def merge_moments(mean: th.Tensor, var: th.Tensor, count: th.Tensor, x: th.Tensor) -> None:
    """Merge the values ``x`` (any shape) into the running ``mean``, ``var`` and ``count`` (0-d float64 tensors,
    updated in place), as URLB's ``RMS.__call__`` does (``utils.py`` lines 264-276): with n values of mean m and
    unbiased variance v, and delta = m - M,

        M' = M + delta n / (c + n),   S' = (S c + v n + delta^2 c n / (c + n)) / (c + n),   c' = c + n.
    """
    x = x.reshape(-1).double()
    n = x.numel()
    delta = x.mean() - mean
    var.copy_((var * count + x.var() * n + delta.pow(2) * count * n / (count + n)) / (count + n))
    mean.add_(delta * n / (count + n))
    count.add_(n)


class RunningMoments(nn.Module):
    """A running mean and variance (URLB's ``RMS``) as buffers, so that they are saved and resumed with their
    learner. Float64: the count grows by a batch (times k) every gradient step."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", th.zeros((), dtype=th.float64))
        self.register_buffer("var", th.ones((), dtype=th.float64))
        self.register_buffer("count", th.tensor(RMS_START_COUNT, dtype=th.float64))

    def update(self, x: th.Tensor) -> None:
        """Merge the values ``x`` (:func:`merge_moments`)."""
        merge_moments(self.mean, self.var, self.count, x)


class ParticleEntropy(nn.Module):
    """URLB's ``PBE`` with ``knn_avg`` (module docstring): the entropy reward of each particle of a batch.

    :param knn_k: k, the neighbours (itself included).
    :param knn_clip: c, subtracted from the (normalised) distances before they are clipped at 0.
    :param knn_rms: divide the distances by the running mean of the k-NN distances seen so far.
    """

    def __init__(self, knn_k: int, knn_clip: float, knn_rms: bool) -> None:
        super().__init__()
        if knn_k < 1:
            raise ValueError(f"knn_k must be >= 1, got {knn_k}")
        if knn_clip < 0:
            raise ValueError(f"knn_clip must be >= 0, got {knn_clip}")
        self.knn_k, self.knn_clip, self.knn_rms = knn_k, knn_clip, knn_rms
        self.moments = RunningMoments()

    def distances(self, particles: th.Tensor) -> th.Tensor:
        """Each particle's distances to its k nearest particles of the batch (itself first, at 0), shape (batch, k).

        :raises ValueError: when the batch has fewer than k particles.
        """
        if self.knn_k > len(particles):
            raise ValueError(f"the k-NN entropy needs knn_k={self.knn_k} neighbours among a minibatch of "
                             f"{len(particles)}; use a batch_size >= {self.knn_k} or a smaller knn_k")
        # torch's matrix-product form of the distances: at APT's 512 dimensions some 15x faster than the exact
        # pairwise differences URLB takes, at a relative error of about 1e-7 in the squared distances; it leaves
        # each particle about 1e-3 from itself, which is set to its exact 0.
        distances = th.cdist(particles, particles, compute_mode="use_mm_for_euclid_dist")
        distances.fill_diagonal_(0.0)
        return distances.topk(self.knn_k, dim=1, largest=False, sorted=True).values

    def update(self, particles: th.Tensor) -> None:
        """Merge this batch's k-NN distances into the running moments (only read with ``knn_rms``)."""
        if self.knn_rms:
            self.moments.update(self.distances(particles))

    def forward(self, particles: th.Tensor) -> th.Tensor:
        """r_i = log(1 + mean_k max(d_ik / M - c, 0)) (without ``knn_rms``: d_ik itself), shape (batch, 1)."""
        distances = self.distances(particles)
        if self.knn_rms:
            distances = distances / self.moments.mean.to(distances.dtype)
        return th.log1p((distances - self.knn_clip).clamp(min=0).mean(dim=1, keepdim=True))
