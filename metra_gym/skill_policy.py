"""A frozen METRA skill policy and its representation phi, loaded from a pickle-free checkpoint."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from metra_gym.envs.normalization import ObservationNormalizer
from metra_gym.networks import NumpySkillActor, PhiNetwork, SkillActor, pixel_encoder, single_threaded
from metra_gym.registration import metra_env_ids
from metra_gym.skill_checkpoint.format import (
    PIXELS_KEY,
    POSTERIOR_KEY,
    CheckpointError,
    read_config,
    read_weights,
)
from metra_gym.skill_checkpoint.hub import locate_checkpoint
from metra_gym.skill_priors import SKILL_PRIORS, UNIT, outside_prior

# The config.json keys the constructor reads (from_pretrained checks all of a checkpoint's, with their values).
CONSTRUCTOR_KEYS = ("env_id", "obs_dim", "action_dim", "skill_dim", "discrete_skills", "action_low", "action_high",
                    "actor_hidden", "phi_hidden", "normalizer")


class SkillPolicy:
    """pi(a | s, z) and phi(s) of a trained METRA agent. All methods take raw (unnormalised) observations and
    work on a single observation or a batch. Skills trained on pixels (``pixels`` set) take the environment's
    stacked uint8 frames, ``(H, W, C)`` or ``(batch, H, W, C)``, and run each network's own CNN on them.

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
        if not isinstance(config, dict) or not isinstance(weights, dict):
            raise TypeError(f"SkillPolicy(config, weights) takes a checkpoint's config.json contents and its tensors "
                            f"as dicts, got {type(config).__name__} and {type(weights).__name__}; load a checkpoint "
                            "with SkillPolicy.from_pretrained(name_or_folder)")
        missing = [key for key in CONSTRUCTOR_KEYS if key not in config]
        if missing:
            raise CheckpointError(f"the config given to SkillPolicy lacks {', '.join(missing)}; it takes a "
                                  "checkpoint's config.json contents: load a checkpoint with "
                                  "SkillPolicy.from_pretrained(name_or_folder)")
        self.config = config
        self.source = source
        self.reference: str | None = None  # set by from_pretrained: what a pickled policy reloads
        self.obs_dim = int(config["obs_dim"])
        self.action_dim = int(config["action_dim"])
        self.skill_dim = int(config["skill_dim"])
        self.discrete = bool(config["discrete_skills"])
        # The prior of continuous skills (older checkpoints: unit vectors).
        self.skill_prior = config.get("skill_prior", UNIT)
        if self.skill_prior not in SKILL_PRIORS:
            raise CheckpointError(f"skill_prior in {source or 'the config'} must be one of {list(SKILL_PRIORS)}, got "
                                  f"{self.skill_prior!r}; re-export the checkpoint")
        self.action_low = np.asarray(config["action_low"], dtype=np.float32)
        self.action_high = np.asarray(config["action_high"], dtype=np.float32)
        self._unit_bounds = bool(np.all(self.action_low == -1.0) and np.all(self.action_high == 1.0))
        # Skills trained on images: the stacked frames' shape and the renderer that drew them (see format.py).
        self.pixels: dict[str, Any] | None = config.get(PIXELS_KEY)
        self.obs_shape = tuple(self.pixels["shape"]) if self.pixels is not None else (self.obs_dim,)
        where = source or "the checkpoint"
        if self.pixels is not None and int(np.prod(self.obs_shape)) != self.obs_dim:
            raise CheckpointError(f"{where}: obs_dim is {self.obs_dim}, but its pixels are {list(self.obs_shape)} "
                                  f"({int(np.prod(self.obs_shape))} values); re-export the checkpoint")
        with single_threaded():  # building the modules runs parallel initialisers otherwise
            self.actor = SkillActor(self.obs_dim, self.skill_dim, self.action_dim, config["actor_hidden"],
                                    config.get("actor_activation", "tanh"), encoder=pixel_encoder(self.pixels))
            # DIAYN, DADS and CIC learn no representation of states: their checkpoints hold the actor only.
            self.phi_net = None if config["phi_hidden"] is None else PhiNetwork(
                self.obs_dim, self.skill_dim, config["phi_hidden"], encoder=pixel_encoder(self.pixels))
            # DIAYN's q(z | s) (its mean or logits; state skills), laid out as phi: what picks a goal's skill.
            posterior = config.get(POSTERIOR_KEY)
            self.skill_posterior_net = None if posterior is None else PhiNetwork(self.obs_dim, self.skill_dim,
                                                                                 posterior)
            for prefix, module in self._modules():
                state = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
                try:
                    module.load_state_dict(state)
                except RuntimeError as error:
                    # torch's first line only names the module; the tensors and sizes that differ follow it.
                    lines = [line.strip().rstrip(".") for line in str(error).splitlines()[1:] if line.strip()]
                    details = "; ".join(lines) or str(error).splitlines()[0]
                    details = details if len(details) <= 400 else details[:400] + " ..."
                    raise CheckpointError(f"the weights in {where} (model.safetensors) and its config.json do not "
                                          f"fit together: {details}; re-export the checkpoint") from None
        # After the weights: when obs_dim itself is wrong, the message above says so first.
        normalizer = config["normalizer"]
        for key in ("mean", "std"):
            if self.pixels is None and len(normalizer[key]) != self.obs_dim:
                raise CheckpointError(f"the normalizer {key} in {where} has {len(normalizer[key])} entries, but "
                                      f"obs_dim is {self.obs_dim}; re-export the checkpoint")
        # Pixel skills: unused (their CNNs scale uint8 pixels by 1 / 255 themselves).
        self.normalizer = ObservationNormalizer(normalizer["mean"], normalizer["std"])
        for _, module in self._modules():
            module.eval()
        # Single state observations run in NumPy (NumpySkillActor: why), batches and pixels in torch.
        self._numpy_actor = (NumpySkillActor(self.actor, self.normalizer)
                             if self.pixels is None else None)

    def _modules(self) -> list[tuple[str, torch.nn.Module]]:
        """The networks with their weight-name prefixes in model.safetensors."""
        modules: list[tuple[str, torch.nn.Module]] = [("actor.", self.actor)]
        if self.phi_net is not None:
            modules.append(("phi.", self.phi_net))
        if self.skill_posterior_net is not None:
            modules.append(("skill_posterior.", self.skill_posterior_net))
        return modules

    def require_phi(self) -> None:
        """Raise :class:`CheckpointError` unless the checkpoint holds phi (METRA and LSD skills do)."""
        if self.phi_net is None:
            raise CheckpointError(f"{self.source or 'this checkpoint'} holds {self.algorithm.upper()} skills, which "
                                  "have no state representation phi: phi and zero-shot goal reaching are defined for "
                                  "METRA and LSD skills")

    def require_goal_skill(self) -> None:
        """Raise :class:`CheckpointError` unless :meth:`goal_skill` is defined for these skills: phi (METRA, LSD) or
        q(z | s) (DIAYN, exported with format version 5)."""
        if self.phi_net is not None or self.skill_posterior_net is not None:
            return
        fix = ("; re-export the DIAYN run with this version, which adds its q(z | s)" if self.algorithm == "diayn"
               else "")
        raise CheckpointError(f"{self.source or 'this checkpoint'} holds {self.algorithm.upper()} skills with neither "
                              "phi (METRA, LSD) nor q(z | s) (DIAYN): zero-shot goal reaching is defined for METRA, "
                              f"LSD and DIAYN skills{fix}")

    @property
    def algorithm(self) -> str:
        """The skill-discovery algorithm that trained these skills (``"metra"`` for older checkpoints)."""
        return str(self.config.get("provenance", {}).get("config", {}).get("algo", "metra"))

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path = "ant", revision: str | None = None) -> SkillPolicy:
        """Load a bundled name ("ant", "half_cheetah"), a local folder, or a Hub repo ("org/name",
        "hf://org/name@rev") fetched file by file.

        :param checkpoint: where the checkpoint is.
        :param revision: Hub revision (branch, tag or commit) of a Hub repo.
        :raises CheckpointError: for a checkpoint that cannot be found, read or trusted.
        """
        folder, reference = locate_checkpoint(checkpoint, revision=revision)
        config = read_config(folder)
        policy = cls(config, read_weights(folder, config), source=str(checkpoint))
        policy.reference = reference
        return policy

    def __reduce__(self) -> tuple[Any, ...]:
        # A loaded policy is its checkpoint: pickle the reference, not torch modules (and reload verified files).
        if self.reference is not None:
            return _from_reference, (self.reference, self.source)
        weights = {f"{prefix}{k}": v for prefix, module in self._modules() for k, v in module.state_dict().items()}
        return type(self), (self.config, weights, self.source)

    @property
    def env_id(self) -> str:
        return str(self.config["env_id"])

    def make_env(self, max_episode_steps: int | None = None, allowed_env_ids: Iterable[str] = (),
                 **kwargs: Any):
        """The environment this policy was trained on (raw observations), as ``gym.make`` builds it.

        The env id comes from the checkpoint's config.json, and ``gym.make`` imports the module named in a
        ``module:id`` id, so only ids that metra_gym registers (``metra/...``) are built unless the caller allows
        more: a checkpoint from elsewhere cannot make this call import code.

        :param max_episode_steps: the time limit (None: the registered one).
        :param allowed_env_ids: further env ids this checkpoint may name, exactly as written in its config.json
            (``module:id`` ids only when listed here); for checkpoints you trust.
        :param kwargs: more keyword arguments for ``gym.make`` (after the checkpoint's ``env_kwargs`` and, for pixel
            skills, its renderer).
        :raises CheckpointError: when the checkpoint names an env id that is neither metra_gym's nor allowed.
        """
        import gymnasium as gym

        if isinstance(allowed_env_ids, str) or not all(isinstance(i, str) for i in allowed_env_ids):
            raise TypeError(f"allowed_env_ids must be a list of env id strings, e.g. ['my_pkg:MyEnv-v0'], "
                            f"got {allowed_env_ids!r}")
        env_id = self.env_id
        if env_id not in metra_env_ids() and env_id not in set(allowed_env_ids):
            effect = (f"import the Python module {env_id.split(':')[0]!r}" if ":" in env_id
                      else "build an environment metra_gym did not register")
            raise CheckpointError(f"checkpoint {self.source!r} names env id {env_id!r}; gym.make would {effect}. "
                                  f"If you trust this checkpoint, pass allowed_env_ids=[{env_id!r}]")
        env = gym.make(env_id, max_episode_steps=max_episode_steps,
                       **{**self.config.get("env_kwargs", {}), **(self.renderer or {}), **kwargs})
        # The env id is text in config.json: a checkpoint naming another env's id gets that env, which would run a
        # policy made for other observations. The networks' sizes say which env they were made for.
        space = env.observation_space
        flat = isinstance(space, gym.spaces.Box) and len(space.shape) == 1
        if self.pixels is not None:  # frames of the checkpoint's shape
            fits = tuple(space.shape) == tuple(self.obs_shape)
        else:
            fits = flat and self.obs_dim in (space.shape[0], getattr(env.unwrapped, "pretraining_obs_dim", None))
        if not fits or env.action_space.shape != (self.action_dim,):
            env.close()
            spaces = [f"shape {s.shape}" if isinstance(s, gym.spaces.Box) else str(s) for s in (space, env.action_space)]
            raise CheckpointError(f"checkpoint {self.source!r} names env id {env_id!r}, but its networks take "
                                  f"{self.obs_dim}-d observations and {self.action_dim}-d actions, and {env_id} has "
                                  f"observations of {spaces[0]} and actions of {spaces[1]}: its config.json names "
                                  "another env's id; correct env_id there, or re-export the checkpoint")
        return env

    # --- inputs -----------------------------------------------------------------------------------------

    @property
    def renderer(self) -> dict[str, Any] | None:
        """How the frames these skills were trained on were drawn (``{"cheap_render": bool, "frame_size": int}``,
        the DMC environments' arguments); None for state skills, older checkpoints and environments without a
        renderer choice."""
        return self.pixels.get("renderer") if self.pixels is not None else None

    def _pixels(self, obs: Any) -> tuple[torch.Tensor, bool]:
        array = np.asarray(obs) if isinstance(obs, np.ndarray) else None
        shape = self.obs_shape
        if array is None or array.dtype != np.uint8 or array.shape[-3:] != shape or array.ndim not in (3, 4):
            got = f"{array.dtype} array of shape {array.shape}" if array is not None else type(obs).__name__
            raise ValueError(f"these skills were trained on pixels: observations must be uint8 arrays of shape {shape} "
                             f"or (batch, {', '.join(map(str, shape))}) (the environment's stacked frames), got {got}")
        single = array.ndim == 3
        return torch.from_numpy(np.ascontiguousarray(array[None] if single else array)), single

    def _obs(self, obs: Any) -> tuple[torch.Tensor, bool]:
        if self.pixels is not None:
            return self._pixels(obs)
        try:
            array = np.asarray(obs, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise TypeError(f"observations must be arrays of numbers, got {type(obs).__name__}") from None
        single = array.ndim == 1
        array = np.atleast_2d(array)
        if array.ndim != 2 or array.shape[1] != self.obs_dim:
            raise ValueError(f"observations must have {self.obs_dim} entries (shape ({self.obs_dim},) or "
                             f"(batch, {self.obs_dim})), got shape {np.shape(obs)}")
        if not np.all(np.isfinite(array)) or np.any(np.abs(array) > np.finfo(np.float32).max):
            raise ValueError("observations must be finite float32 numbers; got NaN, infinite or out-of-range "
                             "entries (the environment may have diverged)")
        return torch.from_numpy(self.normalizer(array)), single

    def _skills(self, z: Any, batch: int) -> torch.Tensor:
        return torch.from_numpy(np.broadcast_to(self._skill_array(z, batch), (batch, self.skill_dim)).copy())

    def _skill_array(self, z: Any, batch: int) -> np.ndarray:
        """Checked skills as float32, shape (1 or batch, skill_dim); for a plain policy (``skill_dim`` 0), none."""
        if self.skill_dim == 0:  # an exploration method's pi(a | s): no skill to give
            if z is not None and np.size(z) != 0:
                raise ValueError(f"{self.source or 'this checkpoint'} is a plain {self.algorithm.upper()} policy "
                                 f"without skills (an exploration method): call act(obs) without z, got z of shape "
                                 f"{np.shape(z)}")
            return np.zeros((1, 0), dtype=np.float32)
        if z is None:
            raise ValueError(f"these skills need a skill z of shape ({self.skill_dim},) or (batch, {self.skill_dim}): "
                             "act(obs, z)")
        try:
            array = np.atleast_2d(np.asarray(z, dtype=np.float64))
        except (TypeError, ValueError, OverflowError):
            raise TypeError(f"skills must be arrays of numbers, got {type(z).__name__}") from None
        if array.shape[1:] != (self.skill_dim,) or array.shape[0] not in (1, batch):
            raise ValueError(f"skills must have shape ({self.skill_dim},) or ({batch}, {self.skill_dim}), "
                             f"got {np.shape(z)}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"skills must be finite, got {array.tolist()}")
        if self.discrete:
            one_hot = np.all((array == 0.0) | (array == 1.0), axis=1) & (array.sum(axis=1) == 1.0)
            if not np.all(one_hot):
                raise ValueError(f"discrete skills are one-hot vectors of length {self.skill_dim} "
                                 f"(np.eye({self.skill_dim})[index]); row(s) {np.flatnonzero(~one_hot).tolist()} "
                                 "are not")
        else:
            problem = outside_prior(array, self.skill_prior)
            if problem is not None:
                raise ValueError(problem)
        return array.astype(np.float32)

    def _in_bounds(self, action: np.ndarray) -> np.ndarray:
        """Actions in [-1, 1] mapped to the environment's bounds (as they are where those are [-1, 1])."""
        if self._unit_bounds:
            return action
        return self.action_low + (action + 1.0) * 0.5 * (self.action_high - self.action_low)

    # --- the API ----------------------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, obs: Any, z: Any = None, deterministic: bool = True, rng: np.random.Generator | int | None = None
            ) -> np.ndarray:
        """Actions in the environment's bounds for observations and skills (the mean action when deterministic;
        otherwise a sample with noise from ``rng``).

        :param obs: raw observations, shape (obs_dim,) or (batch, obs_dim).
        :param z: skills, shape (skill_dim,) or (batch, skill_dim): one-hot vectors for discrete skills; continuous
            ones of the checkpoint's :attr:`skill_prior`: unit vectors (norm within 1e-3 of 1) for METRA and LSD,
            any vector for DIAYN and DADS (N(0, I)), vectors in [0, 1]^D for CIC. None (or an empty array) for the
            plain policy of an exploration method (``skill_dim`` 0), which takes no skill.
        :param deterministic: the mean action, or a sample.
        :param rng: the noise of a sample: a ``np.random.Generator``, or a seed (an int) for a new one.
        """
        if rng is not None and not isinstance(rng, np.random.Generator):
            if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (int, np.integer)) or rng < 0:
                raise TypeError(f"rng must be a np.random.Generator or a seed (an int >= 0), got {rng!r} of type "
                                f"{type(rng).__name__}")
            rng = np.random.default_rng(int(rng))
        if deterministic and self._numpy_actor is not None and np.ndim(obs) == 1:
            return self.fixed_skill_actor(z)(obs)
        obs_t, single = self._obs(obs)
        z_t = self._skills(z, len(obs_t))
        noise = None
        if not deterministic:
            rng = rng if rng is not None else np.random.default_rng()
            noise = torch.from_numpy(rng.standard_normal((len(obs_t), self.action_dim)).astype(np.float32))
        with single_threaded():
            action = self.actor(obs_t, z_t, noise).numpy()
        action = self._in_bounds(action)
        return action[0] if single else action

    def fixed_skill_actor(self, z: Any = None) -> Callable[[Any], np.ndarray]:
        """``obs -> act(obs, z)`` (deterministic) for single observations with the skill ``z`` fixed, as the skill env
        runs a skill for K steps: checks ``z`` once, and for state skills runs :class:`~metra_gym.networks.NumpySkillActor`
        with ``z``'s share of the first layer computed once (pixel skills: the torch path).

        :param z: one skill, shape (skill_dim,), as :meth:`act` takes it (None for a plain policy).
        :raises ValueError: from the returned function, for an observation that is not ``(obs_dim,)`` finite numbers.
        """
        if self._numpy_actor is None:
            skill = self._skill_array(z, 1)[0]
            return lambda obs: self.act(obs, skill, deterministic=True)
        numpy_actor = self._numpy_actor
        bias = numpy_actor.skill_bias(self._skill_array(z, 1)[0])
        limit, shape, in_bounds = float(np.finfo(np.float32).max), (self.obs_dim,), self._in_bounds

        def act(obs: Any) -> np.ndarray:
            try:
                array = np.asarray(obs, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                raise TypeError(f"observations must be arrays of numbers, got {type(obs).__name__}") from None
            if array.shape != shape:
                raise ValueError(f"observations must have {self.obs_dim} entries (shape ({self.obs_dim},) or "
                                 f"(batch, {self.obs_dim})), got shape {np.shape(obs)}")
            if not np.abs(array).max() <= limit:  # a NaN makes the max NaN, which fails this too
                raise ValueError("observations must be finite float32 numbers; got NaN, infinite or out-of-range "
                                 "entries (the environment may have diverged)")
            return in_bounds(numpy_actor(array, bias))

        return act

    @torch.no_grad()
    def phi(self, obs: Any) -> np.ndarray:
        """phi(s) in R^D.

        :raises CheckpointError: for skills of an algorithm without phi (DIAYN, DADS, CIC).
        """
        self.require_phi()
        obs_t, single = self._obs(obs)
        with single_threaded():
            out = self.phi_net(obs_t).numpy()
        return out[0] if single else out

    @torch.no_grad()
    def skill_posterior(self, obs: Any) -> np.ndarray:
        """The mean of DIAYN's q(z | s) (continuous skills), or its logits (discrete), in R^D.

        :raises CheckpointError: for skills without q(z | s) (METRA, LSD, DADS, CIC; DIAYN exported before format 5).
        """
        if self.skill_posterior_net is None:
            raise CheckpointError(f"{self.source or 'this checkpoint'} holds no q(z | s): only DIAYN checkpoints of "
                                  "format version 5 carry it; re-export the DIAYN run with this version")
        obs_t, single = self._obs(obs)
        with single_threaded():
            out = self.skill_posterior_net(obs_t).numpy()
        return out[0] if single else out

    def goal_skill(self, obs: Any, goal_obs: Any) -> np.ndarray:
        """The zero-shot skill towards a goal state.

        METRA and LSD: (phi(g) - phi(s)) / ||.||, or the one-hot of its argmax (discrete skills; always defined: a
        goal with phi(g) == phi(s) gives skill 0). DIAYN (checkpoints with q(z | s)): the skill the discriminator
        finds likeliest at the goal, whatever s: the mean of q(z | g), or the one-hot of its largest logit (the METRA
        paper's DIAYN goal reaching; official ``iod/metra.py`` with ``--inner 0``).

        :raises ValueError: for continuous METRA / LSD skills when phi(goal_obs) == phi(obs) (no direction).
        :raises CheckpointError: for skills with neither phi nor q(z | s) (DADS, CIC, DIAYN before format 5).
        """
        if self.phi_net is None and self.skill_posterior_net is not None:
            self._obs(obs)  # checked as for phi
            z = np.asarray(self.skill_posterior(goal_obs), dtype=np.float64)
            if np.ndim(obs) == 2 and z.ndim == 1:
                z = np.broadcast_to(z, (len(obs), self.skill_dim))
            if self.discrete:
                return np.eye(self.skill_dim, dtype=np.float32)[np.argmax(z, axis=-1)]
            return z.astype(np.float32)
        self.require_goal_skill()
        direction = np.asarray(self.phi(goal_obs), dtype=np.float64) - np.asarray(self.phi(obs), dtype=np.float64)
        if self.discrete:
            return np.eye(self.skill_dim, dtype=np.float32)[np.argmax(direction, axis=-1)]
        norm = np.linalg.norm(direction, axis=-1, keepdims=True)
        if np.any(norm < 1e-8):
            rows = np.flatnonzero(np.atleast_1d(norm[..., 0] < 1e-8)).tolist()
            raise ValueError(f"phi(goal_obs) equals phi(obs) (row(s) {rows}), so there is no direction to a "
                             "skill; give a goal state that differs from the current one")
        return (direction / norm).astype(np.float32)

def _from_reference(reference: str, source: str) -> SkillPolicy:
    """Unpickle a policy: reload its checkpoint (verified like any load) and keep the name it was loaded by."""
    policy = SkillPolicy.from_pretrained(reference)
    policy.source = source
    return policy
