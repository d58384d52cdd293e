"""METRA (Park, Rybkin, Levine, ICLR 2024) as an extension of Stable-Baselines3's SAC.

The environment's observation is ``[normalised observation, skill z]`` (see
:class:`pretrain.run.env_wrappers.SkillConditioned`). On top of SAC, METRA learns phi: S -> R^D under the
temporal-distance constraint ||phi(s') - phi(s)|| <= 1 by dual gradient descent, and trains the policy on
the intrinsic reward (phi(s') - phi(s))^T z, recomputed with the current phi for every minibatch.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch as th
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3 import SAC
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.common.utils import polyak_update
from torch import nn

from metra_gym.networks import PhiNetwork
from pretrain.algorithms.common.skills import validate_skill_spec
from pretrain.algorithms.metra.policies import METRAPolicy

INITS = ("torch", "official")


def _xavier_zero(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.xavier_normal_(module.weight)
        nn.init.zeros_(module.bias)


class NonFiniteLossError(FloatingPointError):
    """A loss or the multiplier became NaN or infinite; the message names the quantity."""


class METRA(SAC):
    """METRA on top of SAC. Defaults are the paper's hyperparameters for state-based Ant.

    :param policy: "MlpPolicy" (:class:`METRAPolicy`) or a policy class.
    :param env: a (vectorised) environment whose observation is ``[obs, z]`` with z in the last ``skill_dim``
        entries.
    :param skill_dim: D, the size of z and of phi's output.
    :param discrete_skills: one-hot skills (zero-centred in the reward) instead of unit vectors.
    :param phi_net_arch: hidden widths of phi.
    :param phi_learning_rate: Adam learning rate of phi.
    :param dual_learning_rate: Adam learning rate of log lambda.
    :param dual_slack: eps of the relaxed constraint ``min(eps, 1 - mean((phi(s')-phi(s))^2))``.
    :param dual_lam_init: initial lambda.
    :param alpha_learning_rate: Adam learning rate of log alpha (kept apart from ``learning_rate``, which is the
        networks', so that the networks' rate can be tuned to their width without changing the scalars').
    :param init: ``"torch"`` (PyTorch's default Linear initialisation) or ``"official"`` (xavier-normal weights and
        zero biases for every layer, as in the official code; the actor's heads keep METRA's gain 0.1).
    :param random_warmup: act uniformly at random until ``learning_starts`` (SB3's default); False collects the
        first transitions with the initial policy, as the official code does.
    :param timeout_done: store the last transition of a time-limited episode as terminal (no bootstrap), as
        the official code does; False lets SB3 bootstrap through time limits.
    :param target_entropy: SAC's target entropy; None means -|A|/2 as in METRA.
    Other parameters are SAC's.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": METRAPolicy}
    phi: PhiNetwork

    def __init__(
        self,
        policy: str | type[METRAPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        skill_dim: int = 2,
        discrete_skills: bool = False,
        phi_net_arch: list[int] | None = None,
        phi_learning_rate: float = 1e-4,
        dual_learning_rate: float = 1e-4,
        dual_slack: float = 1e-3,
        dual_lam_init: float = 30.0,
        alpha_learning_rate: float = 1e-4,
        init: str = "torch",
        random_warmup: bool = True,
        timeout_done: bool = True,
        learning_rate: float | Schedule = 1e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 10_000,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = (200, "step"),
        gradient_steps: int = 50,
        ent_coef: str | float = "auto_0.01",
        target_entropy: float | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        tensorboard_log: str | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        validate_skill_spec(skill_dim, discrete_skills)
        self.skill_dim = skill_dim
        self.discrete_skills = discrete_skills
        self.phi_net_arch = list(phi_net_arch or [1024, 1024])
        self.phi_learning_rate = phi_learning_rate
        self.dual_learning_rate = dual_learning_rate
        self.dual_slack = dual_slack
        self.dual_lam_init = dual_lam_init
        self.alpha_learning_rate = alpha_learning_rate
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        self.init = init
        self.random_warmup = random_warmup
        self.timeout_done = timeout_done
        replay_buffer_kwargs = {"handle_timeout_termination": not timeout_done, **(replay_buffer_kwargs or {})}
        super().__init__(
            policy,
            env,  # type: ignore[arg-type]
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            ent_coef=ent_coef,
            target_entropy=0.0 if target_entropy is None else target_entropy,
            replay_buffer_kwargs=replay_buffer_kwargs,
            policy_kwargs=policy_kwargs,
            tensorboard_log=tensorboard_log,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        if target_entropy is None and getattr(self, "action_space", None) is not None:
            self.target_entropy = -float(np.prod(self.action_space.shape)) / 2.0
        if _init_setup_model:
            self._setup_model()

    @property
    def obs_dim(self) -> int:
        """Size of the environment observation, without the skill."""
        return int(self.observation_space.shape[0]) - self.skill_dim

    def _setup_model(self) -> None:
        space = self.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 1 or space.shape[0] <= self.skill_dim:
            raise ValueError(
                f"METRA needs a flat Box observation [obs, z] longer than skill_dim={self.skill_dim}, got {space}; "
                "wrap the environment in pretrain.run.env_wrappers.SkillConditioned"
            )
        super()._setup_model()
        self.phi = PhiNetwork(self.obs_dim, self.skill_dim, self.phi_net_arch).to(self.device)
        if self.init == "official":
            for module in (self.actor.latent_pi, self.critic, self.phi):
                module.apply(_xavier_zero)
            self.critic_target.load_state_dict(self.critic.state_dict())
        if self.ent_coef_optimizer is not None:
            for group in self.ent_coef_optimizer.param_groups:
                group["lr"] = self.alpha_learning_rate
        # phi and lambda use the policy's optimiser settings (e.g. fused Adam), so one switch governs all.
        optimizer_kwargs = self.policy_kwargs.get("optimizer_kwargs") or {}
        self.phi_optimizer = th.optim.Adam(self.phi.parameters(), lr=self.phi_learning_rate, **optimizer_kwargs)
        # lambda is kept in log space so that it stays positive (official code: log_dual_lam).
        self.log_dual_lam = th.tensor([np.log(self.dual_lam_init)], device=self.device, requires_grad=True)
        self.dual_optimizer = th.optim.Adam([self.log_dual_lam], lr=self.dual_learning_rate, **optimizer_kwargs)

    def _sample_action(self, learning_starts: int, action_noise=None, n_envs: int = 1):
        # Without random warm-up the initial policy collects from the first step (learning still waits).
        return super()._sample_action(learning_starts if self.random_warmup else 0, action_noise, n_envs)

    # --- METRA's quantities -------------------------------------------------------------------------------

    def split(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """``[obs, z]`` -> (obs, z)."""
        return obs[:, : self.obs_dim], obs[:, self.obs_dim :]

    def reward_skill(self, z: th.Tensor) -> th.Tensor:
        """The z of the reward: as is for continuous skills, zero-centred and scaled by D/(D-1) for one-hots."""
        if not self.discrete_skills:
            return z
        return (z - z.mean(dim=1, keepdim=True)) * (self.skill_dim / (self.skill_dim - 1))

    def phi_step(self, obs: th.Tensor, next_obs: th.Tensor) -> th.Tensor:
        """phi(s') - phi(s), with one forward pass over both batches."""
        phi_s, phi_next = self.phi(th.cat([obs, next_obs])).chunk(2)
        return phi_next - phi_s

    def constraint_penalty(self, delta: th.Tensor) -> th.Tensor:
        """``min(eps, 1 - mean_d (phi(s')-phi(s))_d^2)``, as coded officially (so ||delta||^2 <= D)."""
        return th.clamp(1.0 - delta.pow(2).mean(dim=1), max=self.dual_slack)

    @th.no_grad()
    def intrinsic_reward(self, obs: th.Tensor, next_obs: th.Tensor, z: th.Tensor) -> th.Tensor:
        """r = (phi(s') - phi(s))^T z with the current phi, shape (batch, 1)."""
        return (self.phi_step(obs, next_obs) * self.reward_skill(z)).sum(dim=1, keepdim=True)

    # --- Algorithm 1: one gradient step per minibatch ---------------------------------------------------

    def train(self, gradient_steps: int, batch_size: int = 256) -> None:
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        self._update_learning_rate(optimizers)  # alpha keeps its own constant rate (alpha_learning_rate)
        stats: dict[str, list[th.Tensor]] = {}

        def log(**values: th.Tensor) -> None:
            for key, value in values.items():
                stats.setdefault(key, []).append(value.detach())

        for _ in range(gradient_steps):
            try:
                self._gradient_step(batch_size, log)
            except ValueError as error:  # torch's Normal rejects a non-finite actor output
                if "invalid values" not in str(error):
                    raise
                self._raise_non_finite("actor output", float("nan"))
            latest = th.stack([values[-1].float().reshape(()) for values in stats.values()])
            if not bool(th.isfinite(latest).all()):  # one check per step, so NaN never reaches the next step
                key = next(k for k, v in zip(stats, latest) if not th.isfinite(v))
                self._raise_non_finite(key.rstrip("_"), latest[list(stats).index(key)].item())
            self._n_updates += 1
        self._record(stats)

    def _gradient_step(self, batch_size: int, log) -> None:
        """Algorithm 1 of the paper on one minibatch: phi, lambda, relabel, then SAC."""
        batch = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
        obs, z = self.split(batch.observations)
        next_obs, _ = self.split(batch.next_observations)

        # 1. phi ascends the Lagrangian  E[(phi(s')-phi(s))^T z + lambda * penalty].
        delta = self.phi_step(obs, next_obs)
        phi_reward = (delta * self.reward_skill(z)).sum(dim=1)
        penalty = self.constraint_penalty(delta)
        dual_lam = self.log_dual_lam.exp()
        phi_loss = -(phi_reward + dual_lam.detach() * penalty).mean()
        self.phi_optimizer.zero_grad()
        phi_loss.backward()
        self.phi_optimizer.step()

        # 2. lambda descends E[lambda * penalty]: it grows while the constraint is violated.
        dual_loss = (self.log_dual_lam * penalty.detach()).mean()
        self.dual_optimizer.zero_grad()
        dual_loss.backward()
        self.dual_optimizer.step()

        # 3. Relabel the minibatch with the updated phi; the environment reward is never used.
        reward = self.intrinsic_reward(obs, next_obs, z)

        # 4. SAC on the intrinsic reward: critics, then actor, then alpha, then targets.
        alpha = self.log_ent_coef.detach().exp() if self.ent_coef_optimizer else self.ent_coef_tensor
        with th.no_grad():
            next_actions, next_log_prob = self.actor.action_log_prob(batch.next_observations)
            next_q = th.min(th.cat(self.critic_target(batch.next_observations, next_actions), dim=1), dim=1, keepdim=True)[0]
            target_q = reward + (1 - batch.dones) * self.gamma * (next_q - alpha * next_log_prob.reshape(-1, 1))
        critic_loss = 0.5 * sum(F.mse_loss(q, target_q) for q in self.critic(batch.observations, batch.actions))
        self.critic.optimizer.zero_grad()
        critic_loss.backward()  # type: ignore[union-attr]
        self.critic.optimizer.step()

        actions_pi, log_prob = self.actor.action_log_prob(batch.observations)
        log_prob = log_prob.reshape(-1, 1)
        self.critic.requires_grad_(False)  # the actor step needs no critic weight gradients: skip computing them
        q_pi = th.min(th.cat(self.critic(batch.observations, actions_pi), dim=1), dim=1, keepdim=True)[0]
        actor_loss = (alpha * log_prob - q_pi).mean()
        self.actor.optimizer.zero_grad()
        actor_loss.backward()
        self.actor.optimizer.step()
        self.critic.requires_grad_(True)

        if self.ent_coef_optimizer is not None:  # a fixed alpha (e.g. Kitchen's 0.01) skips this step
            alpha_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
            self.ent_coef_optimizer.zero_grad()
            alpha_loss.backward()
            self.ent_coef_optimizer.step()
            log(alpha_loss=alpha_loss)

        polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)

        sq_step = delta.detach().pow(2).mean(dim=1)
        log(phi_loss=phi_loss, dual_loss=dual_loss, critic_loss=critic_loss, actor_loss=actor_loss,
            intrinsic_reward=reward.mean(), lambda_=dual_lam, alpha=alpha,
            sq_phi_step=sq_step.mean(), constraint_violation=F.relu(sq_step - 1.0).mean())

    def _raise_non_finite(self, name: str, value: float) -> None:
        raise NonFiniteLossError(
            f"METRA's {name} became {value} at gradient step {self._n_updates + 1}; training stopped. "
            "The last checkpoint is kept: resume from it with a lower learning rate or another seed."
        )

    def _record(self, stats: dict[str, list[th.Tensor]]) -> None:
        """Log the means of this call's quantities."""
        means = {key: th.stack(values).float().mean().item() for key, values in stats.items()}
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        prefix = {"alpha": "train/ent_coef", "lambda_": "metra/lambda", "intrinsic_reward": "metra/intrinsic_reward",
                  "sq_phi_step": "metra/sq_phi_step", "constraint_violation": "metra/constraint_violation"}
        for key, value in means.items():
            self.logger.record(prefix.get(key, f"train/{key}"), value)

    # --- saving -----------------------------------------------------------------------------------------

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return state_dicts + ["phi", "phi_optimizer", "dual_optimizer"], variables + ["log_dual_lam"]
