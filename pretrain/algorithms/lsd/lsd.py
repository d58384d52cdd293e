"""LSD, Lipschitz-constrained Skill Discovery (Park, Choi, Kim, Lee, Kim, ICLR 2022,
https://arxiv.org/abs/2202.00914) on Stable-Baselines3.

Reference code: https://github.com/seohongpark/LSD, and its port in https://github.com/seohongpark/METRA
(``iod/metra.py`` with ``--dual_reg 0 --spectral_normalization 1``: the METRA update without the dual term, on a
spectrally normalised phi). LSD learns phi: S -> R^D under the Euclidean constraint
||phi(s') - phi(s)|| <= ||s' - s||, enforced by spectral normalisation of every linear layer (so phi is
1-Lipschitz: each layer's largest singular value is 1 and ReLU is 1-Lipschitz), and rewards the skill policy with

    r = (phi(s') - phi(s))^T z

(discrete skills: z zero-centred and scaled by D/(D-1), as in METRA). phi ascends the same quantity; there is no
multiplier. Per minibatch: :meth:`LSDLearner.update` (phi step), :meth:`LSDLearner.reward` (relabel with the
updated phi), then the backbone's RL step.

Hyperparameters are those of the METRA paper's runs (the official repository trains LSD with METRA's settings:
Adam lr 1e-4, 2 x 1024 ReLU phi, one power iteration per forward pass). Differences from the LSD paper: skills
here come from METRA's prior (unit vectors, not N(0, I)), and ``init="official"`` does not reach the spectrally
normalised weights (``nn.init`` writes to the computed weight, not to the parametrised original), only their biases;
after normalisation only the weights' directions matter.

Zero-shot goal reaching is defined as for METRA: ``z = (phi(g) - phi(s)) / ||.||``. :attr:`LSDLearner.phi` gives
phi as a plain :class:`metra_gym.networks.PhiNetwork` with the effective weights W / sigma(W), which is what
``metra-pretrain export`` writes and :class:`metra_gym.SkillPolicy` loads.

Settings. The backbone (SAC, its learning rates, widths, batch, buffer, schedule) is the run's, shared by every
method; phi takes ``phi_width`` (else ``net_width``) and the networks' learning rate. LSD's own values, from the
METRA repository's LSD command:

| value | here | reference |
|---|---|---|
| skill prior | unit vectors (N(0, I) normalised) | ``--unit_length 1`` (the default) |
| Lipschitz constraint | spectral normalisation, 1 power iteration per forward pass | ``--spectral_normalization 1`` |
| dual term | none | ``--dual_reg 0`` |
"""

from __future__ import annotations

from typing import Any

import torch as th
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

from metra_gym.networks import PhiNetwork
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.phi_learner import PhiLearner
from pretrain.config import PretrainConfig

DEFAULTS = PretrainConfig()  # the one source of defaults: the learner's are the configuration's


def spectrally_normalised(phi: PhiNetwork, n_power_iterations: int = 1) -> PhiNetwork:
    """``phi`` with every linear layer's weight parametrised as W / sigma(W) (in place; returned for chaining).

    In training mode each forward pass takes ``n_power_iterations`` steps of the power method for sigma, as the
    official code does; in eval mode the stored singular vectors are used as they are.
    """
    for layer in phi.net:
        if isinstance(layer, nn.Linear):
            spectral_norm(layer, n_power_iterations=n_power_iterations)
    return phi


def without_spectral_norm(phi: PhiNetwork) -> PhiNetwork:
    """A plain copy of a spectrally normalised phi whose weights are the effective W / sigma(W), computed from the
    stored singular vectors in eval mode (no power iteration), so ``phi`` itself is left exactly as it was. Its
    ``state_dict`` has the ``net.N.weight`` / ``net.N.bias`` keys of :class:`metra_gym.networks.PhiNetwork`.

    The weights are read, not unwrapped: ``parametrize.remove_parametrizations`` on a deep copy would delete the
    ``weight`` property from the parametrised class, which the copy shares with ``phi``, and break ``phi``'s next
    forward pass (the first snapshot of a run stopped LSD's training that way)."""
    linear = [layer for layer in phi.net if isinstance(layer, nn.Linear)]
    plain = PhiNetwork(linear[0].in_features, linear[-1].out_features, [layer.out_features for layer in linear[:-1]])
    training = phi.training
    phi.eval()
    try:
        with th.no_grad():
            for source, target in zip(linear, [layer for layer in plain.net if isinstance(layer, nn.Linear)]):
                target.weight.copy_(source.weight)
                target.bias.copy_(source.bias)
    finally:
        phi.train(training)
    return plain.to(linear[0].bias.device).eval().requires_grad_(False)


class LSDLearner(PhiLearner):
    """LSD's 1-Lipschitz phi (spectral normalisation on every linear layer).

    :param obs_dim: size of the (normalised) observation; phi never sees the skill.
    :param skill_dim: D, the size of z and of phi's output.
    :param discrete_skills: one-hot skills (zero-centred in the reward) instead of unit vectors.
    :param phi_net_arch: hidden widths of phi (ReLU); None: the default configuration's.
    :param phi_learning_rate: Adam learning rate of phi.
    :param n_power_iterations: power-method steps for sigma(W) per training forward pass (official: 1).
    :param optimizer_kwargs: extra Adam arguments.
    """

    def __init__(self, obs_dim: int, skill_dim: int, discrete_skills: bool, phi_net_arch: list[int] | None = None,
                 phi_learning_rate: float = DEFAULTS.learning_rate, n_power_iterations: int = 1,
                 optimizer_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(obs_dim, skill_dim, discrete_skills, optimizer_kwargs)
        # The trained network; `phi` (below) is its plain, exportable copy.
        self.lipschitz_phi = spectrally_normalised(
            PhiNetwork(obs_dim, skill_dim, list(phi_net_arch or DEFAULTS.phi_hidden)), n_power_iterations)
        self.phi_optimizer = th.optim.Adam(self.lipschitz_phi.parameters(), lr=phi_learning_rate,
                                           **self.optimizer_kwargs)

    @property
    def phi(self) -> PhiNetwork:
        """phi as a plain :class:`~metra_gym.networks.PhiNetwork` with the effective weights (a frozen copy: for
        export, zero-shot goals and inspection; training uses :attr:`lipschitz_phi`)."""
        return without_spectral_norm(self.lipschitz_phi)

    @property
    def trained_phi(self) -> nn.Module:
        return self.lipschitz_phi

    def update(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor,
               dones: th.Tensor | None = None) -> dict[str, th.Tensor]:
        # phi ascends E[(phi(s') - phi(s))^T z]; spectral normalisation keeps every step ||.|| <= ||s' - s||.
        delta = self.phi_step(obs, next_obs)
        phi_loss = -self.directional_reward(delta, z).mean()
        self.descend(self.phi_optimizer, phi_loss)
        return {"lsd/phi_loss": phi_loss, "lsd/phi_step_norm": delta.detach().norm(dim=1).mean()}


class LSD(SkillAlgorithm, SkillSAC):
    """LSD on SAC, as the METRA paper trains it (:meth:`on_backbone` gives it on CrossQ or TQC).

    The skill learner's (:class:`LSDLearner`) hyperparameters are keywords of their own (``phi_net_arch``, ...).
    """

    algo = "lsd"
    learner_class = LSDLearner
