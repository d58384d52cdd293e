"""A frozen METRA skill policy and its representation phi, loaded from a pickle-free checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from metra_gym.envs.normalization import ObservationNormalizer
from metra_gym.networks import PhiNetwork, SkillActor
from metra_gym.skill_checkpoint.format import CheckpointError, read_config, read_weights
from metra_gym.skill_checkpoint.hub import resolve_checkpoint


class SkillPolicy:
    """pi(a | s, z) and phi(s) of a trained METRA agent. All methods take raw (unnormalised) observations and
    work on a single observation or a batch.

    Example:
        >>> import numpy as np
        >>> policy = SkillPolicy.from_pretrained("ant")
        >>> obs = np.zeros((3, policy.obs_dim), dtype=np.float32)
        >>> policy.act(obs, policy.goal_skill(obs, obs + 1.0)).shape
        (3, 8)

    :param config: the checkpoint's ``config.json`` contents.
    :param weights: the checkpoint's tensors (``actor.*`` and ``phi.*``).
    :param source: where the checkpoint came from, for messages.
    """

    def __init__(self, config: dict[str, Any], weights: dict[str, torch.Tensor], source: str = "") -> None:
        self.config = config
        self.source = source
        self.obs_dim = int(config["obs_dim"])
        self.action_dim = int(config["action_dim"])
        self.skill_dim = int(config["skill_dim"])
        self.discrete = bool(config["discrete_skills"])
        self.action_low = np.asarray(config["action_low"], dtype=np.float32)
        self.action_high = np.asarray(config["action_high"], dtype=np.float32)
        self.normalizer = ObservationNormalizer(config["normalizer"]["mean"], config["normalizer"]["std"])
        self.actor = SkillActor(self.obs_dim, self.skill_dim, self.action_dim, config["actor_hidden"])
        self.phi_net = PhiNetwork(self.obs_dim, self.skill_dim, config["phi_hidden"])
        for prefix, module in (("actor.", self.actor), ("phi.", self.phi_net)):
            state = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
            try:
                module.load_state_dict(state)
            except RuntimeError as error:
                first = str(error).splitlines()[0]
                raise CheckpointError(f"the weights in {source or 'the checkpoint'} do not match its config.json "
                                      f"({first}); re-export the checkpoint") from None
        self.actor.eval()
        self.phi_net.eval()

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path = "ant", revision: str | None = None) -> SkillPolicy:
        """Load a bundled name ("ant", "half_cheetah"), a local folder, or a Hub repo ("org/name",
        "hf://org/name@rev") fetched file by file."""
        folder = resolve_checkpoint(checkpoint, revision=revision)
        return cls(read_config(folder), read_weights(folder), source=str(checkpoint))

    @property
    def env_id(self) -> str:
        return str(self.config["env_id"])

    def make_env(self, max_episode_steps: int | None = None, **kwargs: Any):
        """The environment this policy was trained on (raw observations), as ``gym.make`` builds it."""
        import gymnasium as gym

        return gym.make(self.env_id, max_episode_steps=max_episode_steps,
                        **{**self.config.get("env_kwargs", {}), **kwargs})

    # --- inputs -----------------------------------------------------------------------------------------

    def _obs(self, obs: Any) -> tuple[torch.Tensor, bool]:
        array = np.asarray(obs, dtype=np.float32)
        single = array.ndim == 1
        array = np.atleast_2d(array)
        if array.ndim != 2 or array.shape[1] != self.obs_dim:
            raise ValueError(f"observations must have {self.obs_dim} entries (shape ({self.obs_dim},) or "
                             f"(batch, {self.obs_dim})), got shape {np.shape(obs)}")
        return torch.from_numpy(self.normalizer(array)), single

    def _skills(self, z: Any, batch: int) -> torch.Tensor:
        array = np.atleast_2d(np.asarray(z, dtype=np.float32))
        if array.shape[1:] != (self.skill_dim,) or array.shape[0] not in (1, batch):
            raise ValueError(f"skills must have shape ({self.skill_dim},) or ({batch}, {self.skill_dim}), "
                             f"got {np.shape(z)}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"skills must be finite, got {array.tolist()}")
        return torch.from_numpy(np.broadcast_to(array, (batch, self.skill_dim)).copy())

    # --- the API ----------------------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, obs: Any, z: Any, deterministic: bool = True, rng: np.random.Generator | None = None) -> np.ndarray:
        """Actions in the environment's bounds for observations and skills (the mean action when deterministic;
        otherwise a sample with noise from ``rng``)."""
        obs_t, single = self._obs(obs)
        z_t = self._skills(z, len(obs_t))
        noise = None
        if not deterministic:
            rng = rng if rng is not None else np.random.default_rng()
            noise = torch.from_numpy(rng.standard_normal((len(obs_t), self.action_dim)).astype(np.float32))
        action = self.actor(obs_t, z_t, noise).numpy()
        action = self.action_low + (action + 1.0) * 0.5 * (self.action_high - self.action_low)
        return action[0] if single else action

    @torch.no_grad()
    def phi(self, obs: Any) -> np.ndarray:
        """phi(s) in R^D."""
        obs_t, single = self._obs(obs)
        out = self.phi_net(obs_t).numpy()
        return out[0] if single else out

    def goal_skill(self, obs: Any, goal_obs: Any) -> np.ndarray:
        """The zero-shot skill towards a goal state: (phi(g) - phi(s)) / ||.||, or the one-hot of its argmax."""
        direction = np.asarray(self.phi(goal_obs)) - np.asarray(self.phi(obs))
        if self.discrete:
            return np.eye(self.skill_dim, dtype=np.float32)[np.argmax(direction, axis=-1)]
        norm = np.linalg.norm(direction, axis=-1, keepdims=True)
        return (direction / np.maximum(norm, 1e-8)).astype(np.float32)
