"""Off-policy RL backbones for skill discovery: SB3's SAC and sb3-contrib's CrossQ and TQC.

A backbone trains the skill policy pi(a | s, z) on an intrinsic reward. The reward comes from a
:class:`~pretrain.algorithms.common.skill_learner.SkillLearner` (METRA's phi, LSD's, DIAYN's discriminator, ...):
on every minibatch the learner takes its own gradient step first and the minibatch is then relabelled with its
reward under the updated networks (the order of the official METRA code); the environment reward is never used.

- :class:`SkillSAC` writes SAC's step out (critic, actor, alpha, target) so that it reads top to bottom and can be
  made cheaper; it is the default and the paper's choice.
- :class:`SkillCrossQ` (Bhatt et al., ICLR 2024: no target networks, batch renormalisation) and :class:`SkillTQC`
  (Kuznetsov et al., ICML 2020: truncated quantile critics) run sb3-contrib's own ``train()`` on minibatches that
  the learner relabels as they are sampled.

The environment's observation is ``[normalised observation, skill z]`` with z in the last ``skill_dim`` entries
(see :class:`pretrain.algorithms.common.skill_conditioned.SkillConditioned`).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch as th
import torch.nn.functional as F
from gymnasium import spaces
from sb3_contrib import TQC, CrossQ
from stable_baselines3 import SAC
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, ReplayBufferSamples
from stable_baselines3.common.utils import polyak_update
from torch import nn

from pretrain.algorithms.common.policies import SkillSACPolicy, SkillTQCPolicy
from pretrain.algorithms.common.skill_learner import SkillLearner
from pretrain.config import BACKBONES, INITS, validate_skill_spec

# target_entropy="auto_half": -|A| / 2, METRA's (and its baselines') target entropy; "auto" keeps SB3's -|A|.
AUTO_HALF = "auto_half"


def _xavier_zero(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.xavier_normal_(module.weight)
        nn.init.zeros_(module.bias)


class NonFiniteLossError(FloatingPointError):
    """A loss or a logged quantity became NaN or infinite; the message names it."""


@contextmanager
def _without_distribution_checks() -> Iterator[None]:
    """Let a non-finite actor output reach the losses, where it is reported by name, instead of torch's
    distribution argument check raising a ValueError deep inside SB3 (the check also costs time every step)."""
    previous = th.distributions.Distribution._validate_args
    th.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        th.distributions.Distribution.set_default_validate_args(previous)


class SkillDiscoveryMixin:
    """Skill discovery on top of an SB3 off-policy algorithm (placed before it in the bases).

    :param policy: the policy class or alias.
    :param env: a (vectorised) environment whose observation is ``[obs, z]``.
    :param skill_dim: D, the size of z.
    :param discrete_skills: one-hot skills instead of continuous ones of the learner's prior (``skill_prior``).
    :param skill_learner_class: the algorithm's :class:`SkillLearner`.
    :param skill_learner_kwargs: its hyperparameters.
    :param timeout_done: store the last transition of a time-limited episode as terminal (no bootstrap), as the
        official code does; False lets SB3 bootstrap through time limits.
    :param random_warmup: act uniformly at random until ``learning_starts`` (SB3's default); False collects the
        first transitions with the initial policy, as the official code does.
    :param alpha_learning_rate: constant Adam rate of log alpha; None lets it follow ``learning_rate`` (SB3).
    :param init: ``"torch"`` (PyTorch's default Linear initialisation) or ``"official"`` (xavier-normal weights and
        zero biases in the actor's hidden layers, the critics and the learner, as in the official code; the
        actor's output layers keep their own initialisation).
    :param target_entropy: ``"auto_half"`` (-|A|/2, METRA's), ``"auto"`` (SB3's -|A|) or a number.
    Other parameters are the backbone's.
    """

    skill_learner: SkillLearner
    # An overlapped collector (pretrain.run.collector) replaces SB3's collection loop when set; not saved.
    collector: Any = None
    # Set by the backbone class (SB3 attributes this mixin relies on).
    observation_space: spaces.Space
    action_space: spaces.Box

    def __init__(self, policy: str | type[BasePolicy], env: GymEnv | str, skill_dim: int = 2,
                 discrete_skills: bool = False, skill_learner_class: type[SkillLearner] | None = None,
                 skill_learner_kwargs: dict[str, Any] | None = None, timeout_done: bool = True,
                 random_warmup: bool = True, alpha_learning_rate: float | None = None, init: str = "torch",
                 target_entropy: str | float = AUTO_HALF, replay_buffer_kwargs: dict[str, Any] | None = None,
                 _init_setup_model: bool = True, **kwargs: Any) -> None:
        validate_skill_spec(skill_dim, discrete_skills)
        self.skill_dim, self.discrete_skills = skill_dim, discrete_skills
        self.skill_learner_class = skill_learner_class
        self.skill_learner_kwargs = dict(skill_learner_kwargs or {})
        self.timeout_done, self.random_warmup = timeout_done, random_warmup
        self.alpha_learning_rate = alpha_learning_rate
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        self.init = init
        replay_buffer_kwargs = {"handle_timeout_termination": not timeout_done, **(replay_buffer_kwargs or {})}
        super().__init__(policy, env, target_entropy=target_entropy, replay_buffer_kwargs=replay_buffer_kwargs,
                         _init_setup_model=False, **kwargs)
        if _init_setup_model:
            self._setup_model()

    @property
    def pixels(self) -> bool:
        """Whether observations are ``{"pixels": image, "skill": z}`` (else the flat ``[obs, z]``)."""
        return isinstance(self.observation_space, spaces.Dict)

    @property
    def obs_dim(self) -> int:
        """Size of the environment observation, without the skill (for pixels: the number of pixel values)."""
        if self.pixels:
            return int(np.prod(self.observation_space["pixels"].shape))
        return int(self.observation_space.shape[0]) - self.skill_dim

    def _setup_model(self) -> None:
        space = self.observation_space
        flat = isinstance(space, spaces.Box) and len(space.shape) == 1 and space.shape[0] > self.skill_dim
        image = isinstance(space, spaces.Dict) and set(space.spaces) == {"pixels", "skill"}
        if not (flat or image):
            raise ValueError(f"skill discovery needs a flat Box observation [obs, z] longer than "
                             f"skill_dim={self.skill_dim} or a Dict {{'pixels', 'skill'}}, got {space}; wrap the "
                             "environment in pretrain.algorithms.common.skill_conditioned.SkillConditioned")
        if self.skill_learner_class is None:
            raise ValueError("give skill_learner_class (e.g. pretrain.algorithms.metra.METRALearner)")
        if self.target_entropy == AUTO_HALF:
            self.target_entropy = -float(np.prod(self.action_space.shape)) / 2.0
        self._check_skill_prior()
        super()._setup_model()
        # A learner that models actions (SkillLearner.uses_actions) is also told their size.
        actions = {"action_dim": int(np.prod(self.action_space.shape))} if self.skill_learner_class.uses_actions else {}
        self.skill_learner = self.skill_learner_class(self.obs_dim, self.skill_dim, self.discrete_skills, **actions,
                                                      **self.skill_learner_kwargs).to(self.device)
        if self.init == "official":
            for module in (self.actor.latent_pi, self.critic, self.skill_learner):
                module.apply(_xavier_zero)
            if getattr(self, "critic_target", None) is not None:
                self.critic_target.load_state_dict(self.critic.state_dict())
        if self.ent_coef_optimizer is not None and self.alpha_learning_rate is not None:
            for group in self.ent_coef_optimizer.param_groups:
                group["lr"] = self.alpha_learning_rate

    def _check_skill_prior(self) -> None:
        """Refuse environments that draw continuous skills from another prior than the algorithm's (e.g. unit vectors
        for DIAYN): the learner would be trained on skills its objective does not assume."""
        if self.env is None or self.discrete_skills:
            return
        try:
            priors = set(self.env.get_attr("skill_prior"))
        except AttributeError:  # not pretrain.algorithms.common.skill_conditioned.SkillConditioned: the caller draws the skills
            return
        expected = self.skill_learner_class.skill_prior
        if priors != {expected}:
            raise ValueError(f"{self.skill_learner_class.__name__} trains on {expected} skills, but the environment "
                             f"draws {', '.join(sorted(priors))} ones; wrap it in SkillConditioned(env, skill_dim, "
                             f"discrete, prior={expected!r})")

    def _update_learning_rate(self, optimizers) -> None:
        if self.alpha_learning_rate is not None:  # alpha keeps its own constant rate
            optimizers = [o for o in optimizers if o is not self.ent_coef_optimizer]
        super()._update_learning_rate(optimizers)

    def collect_rollouts(self, env, callback, train_freq, replay_buffer, action_noise=None, learning_starts=0,
                         log_interval=None):
        if self.collector is None:
            return super().collect_rollouts(env, callback, train_freq, replay_buffer, action_noise, learning_starts,
                                            log_interval)
        self.policy.set_training_mode(False)
        return self.collector.collect(self, callback)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "collector"]

    def _sample_action(self, learning_starts: int, action_noise=None, n_envs: int = 1):
        # Without random warm-up the initial policy collects from the first step (learning still waits).
        return super()._sample_action(learning_starts if self.random_warmup else 0, action_noise, n_envs)

    # --- one minibatch -----------------------------------------------------------------------------------

    def split(self, obs: th.Tensor | dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor]:
        """``[obs, z]`` (or ``{"pixels": image, "skill": z}``) -> (obs, z)."""
        if isinstance(obs, dict):
            return obs["pixels"], obs["skill"]
        return obs[:, : self.obs_dim], obs[:, self.obs_dim :]

    def _skill_step(self, batch: ReplayBufferSamples) -> tuple[th.Tensor, dict[str, th.Tensor]]:
        """The learner's gradient step on a minibatch, then its reward for the minibatch with the updated networks."""
        obs, z = self.split(batch.observations)
        next_obs, _ = self.split(batch.next_observations)
        actions = {"actions": batch.actions} if self.skill_learner.uses_actions else {}
        stats = self.skill_learner.update(obs, next_obs, z, dones=batch.dones, **actions)
        reward = self.skill_learner.reward(obs, next_obs, z, **actions)
        return reward, {**stats, "skill/intrinsic_reward": reward.mean()}

    def train(self, gradient_steps: int, batch_size: int = 256) -> None:
        """The backbone's own ``train()`` on minibatches relabelled by the learner as they are sampled."""
        stats: dict[str, list[th.Tensor]] = defaultdict(list)
        buffer = self.replay_buffer
        sample = buffer.sample

        last: list[ReplayBufferSamples] = []

        def relabelled_sample(n: int, env=None) -> ReplayBufferSamples:
            batch = sample(n, env)
            last[:] = [batch]
            reward, step_stats = self._skill_step(batch)
            for key, value in step_stats.items():
                stats[key].append(value.detach())
            return batch._replace(rewards=reward)

        buffer.sample = relabelled_sample  # type: ignore[method-assign]
        try:
            with _without_distribution_checks():
                super().train(gradient_steps, batch_size)
        finally:
            del buffer.sample  # back to the class's method
        backbone = {key: [th.tensor(value)] for key, value in self.logger.name_to_value.items()
                    if key.startswith("train/") and isinstance(value, float)}
        self._check_finite({**stats, **backbone})
        if last:
            stats.update(self._phi_sensitivity(last[0]))
        self._record(stats)

    def _phi_sensitivity(self, batch: ReplayBufferSamples) -> dict[str, list[th.Tensor]]:
        """``phi/sensitivity_<group>`` on the last minibatch, for learners with phi on environments that name their
        observation groups (state DMC): which parts of the state phi reads. Nothing is sampled for it, so the run's
        random streams are those of a run without it."""
        groups = self._observation_groups()
        if not groups or not hasattr(self.skill_learner, "input_sensitivity") or isinstance(batch.observations, dict):
            return {}
        obs, _ = self.split(batch.observations)
        return {f"phi/sensitivity_{name}": [value]
                for name, value in self.skill_learner.input_sensitivity(obs, groups).items()}

    def _observation_groups(self) -> dict[str, tuple[int, int]] | None:
        """The training env's ``observation_groups`` (None when it names none, or when there is no env)."""
        if self.env is None:
            return None
        try:
            groups = self.env.get_attr("observation_groups", indices=[0])[0]
        except AttributeError:
            return None
        if not groups or max(stop for _, stop in groups.values()) > self.obs_dim:
            return None
        return groups

    def _check_finite(self, stats: dict[str, list[th.Tensor]]) -> None:
        """Raise :class:`NonFiniteLossError` naming the first quantity (and its step) that is NaN or infinite."""
        for key, values in stats.items():
            series = th.stack([v.float().reshape(()) for v in values])
            bad = (~th.isfinite(series)).nonzero()
            if len(bad):
                step = int(bad[0, 0])
                where = f" at gradient step {self._n_updates - len(series) + step + 1}" if len(series) > 1 else ""
                raise NonFiniteLossError(
                    f"{key} became {series[step].item()}{where}; training stopped. The last saved run state is "
                    "kept: resume from it with a lower learning rate, or start again with another seed.")

    def _record(self, stats: dict[str, list[th.Tensor]]) -> None:
        """Log the mean of each quantity of this call under its own key."""
        for key, values in stats.items():
            self.logger.record(key, th.stack(values).float().mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")

    # --- saving -----------------------------------------------------------------------------------------

    def load_replay_buffer(self, path: str | Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """SB3's ``load_replay_buffer``; a run state's buffer (``run_state/latest`` or its ``replay_buffer.pkl``,
        saved in segments by :mod:`pretrain.algorithms.common.replay_segments`) loads too."""
        from pretrain.algorithms.common.replay_segments import META, load_replay

        if isinstance(path, (str, Path)):
            path = Path(path)
            if path.is_dir() or path.name == META:
                self.replay_buffer = load_replay(path if path.is_dir() else path.parent, self.device)
                return
        super().load_replay_buffer(path, truncate_last_traj)  # type: ignore[misc]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        learner = ["skill_learner"] + [f"skill_learner.{name}" for name in self.skill_learner.optimizer_names]
        return state_dicts + learner, variables


class SkillSAC(SkillDiscoveryMixin, SAC):
    """SAC on a skill learner's reward, written out: per minibatch the learner's step and the relabelling, then
    critic, actor, alpha and target, in the order of the official METRA code (``iod/metra.py``,
    https://github.com/seohongpark/METRA). Parameters: :class:`SkillDiscoveryMixin` and SB3's SAC.
    """

    # Dict observations ({"pixels", "skill"}) go through the same policy with a pixel features extractor.
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": SkillSACPolicy,
                                                             "MultiInputPolicy": SkillSACPolicy}

    def train(self, gradient_steps: int, batch_size: int = 256) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        stats: dict[str, list[th.Tensor]] = defaultdict(list)
        with _without_distribution_checks():
            for gradient_step in range(gradient_steps):
                batch = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)  # type: ignore[union-attr]
                reward, skill_stats = self._skill_step(batch)
                sac_stats = self._sac_step(batch, reward, update_target=gradient_step % self.target_update_interval == 0)
                for key, value in {**skill_stats, **sac_stats}.items():
                    stats[key].append(value.detach())
                self._n_updates += 1
        self._check_finite(stats)  # once per call: nothing is saved before it passes
        if gradient_steps > 0:
            stats.update(self._phi_sensitivity(batch))
        self._record(stats)

    def _sac_step(self, batch: ReplayBufferSamples, reward: th.Tensor, update_target: bool) -> dict[str, th.Tensor]:
        """Critics, then actor, then alpha, then the target critics, on the relabelled minibatch."""
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
        try:
            q_pi = th.min(th.cat(self.critic(batch.observations, actions_pi), dim=1), dim=1, keepdim=True)[0]
            actor_loss = (alpha * log_prob - q_pi).mean()
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()
        finally:  # an interrupted step (Ctrl-C in a notebook, then learn() again) must not leave the critics frozen
            self.critic.requires_grad_(True)

        stats = {"train/critic_loss": critic_loss, "train/actor_loss": actor_loss, "train/ent_coef": alpha}
        if self.ent_coef_optimizer is not None:  # a fixed alpha (e.g. Kitchen's 0.01) skips this step
            alpha_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
            self.ent_coef_optimizer.zero_grad()
            alpha_loss.backward()
            self.ent_coef_optimizer.step()
            stats["train/ent_coef_loss"] = alpha_loss

        if update_target:
            polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
        return stats


class SkillCrossQ(SkillDiscoveryMixin, CrossQ):
    """CrossQ (https://arxiv.org/abs/1902.05605, sb3-contrib) on a skill learner's reward: no target networks,
    batch renormalisation in actor and critics, policy delay 3. Parameters: :class:`SkillDiscoveryMixin` and
    sb3-contrib's CrossQ."""


class SkillTQC(SkillDiscoveryMixin, TQC):
    """TQC (https://arxiv.org/abs/2005.04269, sb3-contrib) on a skill learner's reward: 5 critics of 25 quantiles,
    the top 2 per critic dropped; the actor is METRA's (:class:`SkillTQCPolicy`). Parameters:
    :class:`SkillDiscoveryMixin` and sb3-contrib's TQC."""

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {"MlpPolicy": SkillTQCPolicy}


# The class of each backbone name of the registry (pretrain.algorithms.BACKBONES).
BACKBONE_CLASSES: dict[str, type[SkillDiscoveryMixin]] = dict(zip(BACKBONES, (SkillSAC, SkillCrossQ, SkillTQC), strict=True))
