"""The skill-level environment: its action is a skill z, and each step runs a frozen skill policy for K steps."""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from metra_gym.registration import SKILL_STEPS
from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_priors import ACTION_BOUNDS, DESCRIPTIONS, UNIT, outside_prior


def _load_policy(checkpoint: Any, revision: str | None) -> Any:
    """``SkillPolicy.from_pretrained``, saying so when a skill-level id's default skills are not bundled yet."""
    from metra_gym.skill_checkpoint.hub import bundled_checkpoints
    from metra_gym.skill_policy import SkillPolicy

    try:
        return SkillPolicy.from_pretrained(checkpoint if isinstance(checkpoint, (str, Path)) else str(checkpoint),
                                           revision=revision)
    except CheckpointError:
        ids = sorted(spec.id for spec in gym.registry.values() if spec.entry_point == "metra_gym.skill_env:SkillEnv"
                     and spec.kwargs.get("checkpoint") == checkpoint)
        if not ids or checkpoint in bundled_checkpoints() or Path(checkpoint).exists():
            raise  # not a default name, or a folder of that name whose own error says what is wrong
        raise CheckpointError(
            f"the default skills of {', '.join(ids)} ({checkpoint!r}) are not bundled with this version of metra-gym: "
            f"they have not been trained and released yet. Pass checkpoint= a folder or Hub repo of such skills, e.g. "
            f"trained with `metra-pretrain train --config {checkpoint} --run-dir RUN` and exported with "
            f"`metra-pretrain export RUN OUT`: gym.make({min(ids, key=len)!r}, checkpoint='OUT')") from None


class SkillEnv(gym.Env, EzPickle):
    """Hierarchical view of an environment: one step = run skill ``z`` deterministically for ``skill_steps``
    low-level steps and return the plain sum of their rewards.

    The action space is ``Discrete(D)`` for discrete skills (an ``int`` or numpy integer index), and for continuous
    ones follows the checkpoint's skill prior: ``Box(-1, 1, (D,))`` projected to unit length (METRA, LSD);
    ``Box(-3, 3, (D,))`` taken as the skill itself (DIAYN and DADS skills are N(0, I) draws: three standard
    deviations per coordinate, a skill beyond them is run as given); ``Box(0, 1, (D,))`` taken as the skill (CIC's
    uniform prior). Observations are the inner
    environment's. A step stops early when the inner environment terminates or truncates; ``info`` is the last
    inner ``info`` plus ``skill_steps`` (the number of low-level steps run) and ``skill``. ``metadata["render_fps"]``
    is the inner one divided by ``skill_steps``: one skill-level step spans that many inner frames.

    Pickling (and ``copy.deepcopy``) rebuilds the environment from its constructor arguments, with the checkpoint
    as its reference (bundled name, absolute folder, or Hub repo pinned to the commit), as Gymnasium's MuJoCo
    environments do: the copy is a fresh environment to reset.

    Example:
        >>> import gymnasium as gym, metra_gym
        >>> env = gym.make("metra/AntSkills-v0")
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        >>> info["skill_steps"]
        25

    :param env: the low-level environment, or its id.
    :param checkpoint: a bundled checkpoint name, a folder, a Hub repo ("org/name", "hf://org/name@rev"), or a
        loaded :class:`metra_gym.SkillPolicy`.
    :param skill_steps: K, low-level steps per skill.
    :param revision: Hub revision of ``checkpoint``.
    :param env_kwargs: keyword arguments for ``gym.make`` when ``env`` is an id. Skills trained on pixels get the
        renderer they were trained with (the checkpoint's ``cheap_render`` and ``frame_size``) added; giving other
        values here is an error.
    :param policy_obs_dim: the skill policy sees the first this many entries of the observation (task
        information after them is stripped); defaults to the inner env's ``pretraining_obs_dim`` (set by the
        downstream task envs), else the checkpoint's observation size.
    :param render_mode: passed to the inner environment.
    """

    # What gym.make checks before building; the instance copies the inner environment's metadata.
    metadata = {"render_modes": ["human", "rgb_array", "depth_array"]}

    def __init__(self, env: gym.Env | str, checkpoint: Any = "ant", skill_steps: int = SKILL_STEPS,
                 revision: str | None = None, env_kwargs: dict[str, Any] | None = None,
                 policy_obs_dim: int | None = None, render_mode: str | None = None) -> None:
        from metra_gym.skill_policy import SkillPolicy

        env_arg, policy_obs_dim_arg = env, policy_obs_dim
        if not isinstance(env, (str, gym.Env)):
            raise TypeError(f"env must be a Gymnasium env id (e.g. 'metra/Ant-v0') or a gymnasium.Env, got "
                            f"{reprlib.repr(env)} of type {type(env).__name__}")
        # bool is an int subclass, but skill_steps=True is a mistake, not a count of 1.
        if isinstance(skill_steps, (bool, np.bool_)) or not isinstance(skill_steps, (int, np.integer)) \
                or skill_steps < 1:
            raise ValueError(f"skill_steps must be an integer >= 1, got {skill_steps!r}")
        if policy_obs_dim is not None and (isinstance(policy_obs_dim, (bool, np.bool_))
                                           or not isinstance(policy_obs_dim, (int, np.integer)) or policy_obs_dim < 1):
            raise ValueError(f"policy_obs_dim must be an integer >= 1 or None, got {policy_obs_dim!r}")
        # The policy first: pixel skills decide how the environment draws its frames.
        self.policy = checkpoint if isinstance(checkpoint, SkillPolicy) else _load_policy(checkpoint, revision)
        if self.policy.skill_dim == 0:
            raise CheckpointError(
                f"checkpoint {self.policy.source or checkpoint!r} holds a plain {self.policy.algorithm.upper()} policy "
                "pi(a | s) without skills (an exploration method): a skill environment's action is a skill, and this "
                "policy has none to choose. Run it in the environment itself: "
                "metra_gym.SkillPolicy.from_pretrained(checkpoint).act(obs)")
        if isinstance(env, str):
            # The skill-level TimeLimit bounds the episode; the inner one would cut a skill short.
            # ValueError, not TypeError: gym.make appends its own text to a TypeError raised while building.
            if env_kwargs is not None and not isinstance(env_kwargs, dict):
                raise ValueError(f"env_kwargs must be a dict of keyword arguments for gym.make({env!r}), got "
                                f"{type(env_kwargs).__name__}")
            try:
                env = gym.make(env, max_episode_steps=-1, render_mode=render_mode,
                               **self._with_renderer(env_kwargs or {}))
            except TypeError as error:  # an argument the environment does not take
                first = str(error).split(" was raised from the environment creator")[0].splitlines()[0]
                raise ValueError(f"cannot build {env!r} with env_kwargs {env_kwargs!r}: {first}") from None
            modes = env.metadata.get("render_modes", [])
            if render_mode is not None and render_mode not in modes:  # gym.make only warns
                env.close()
                raise ValueError(f"render_mode must be None or one of {modes} (those of {env.spec.id}), got "
                                 f"{render_mode!r}")
        self.env = env
        self.skill_steps = int(skill_steps)
        self.render_mode = env.render_mode
        self.metadata = dict(env.metadata)
        if self.metadata.get("render_fps"):
            self.metadata["render_fps"] = self.metadata["render_fps"] / self.skill_steps
        self.observation_space = env.observation_space
        explicit = policy_obs_dim is not None
        if policy_obs_dim is None:
            policy_obs_dim = getattr(env.unwrapped, "pretraining_obs_dim", None)
        self.policy_obs_dim = self.policy.obs_dim if policy_obs_dim is None else int(policy_obs_dim)
        self._check_compatible(strip_task_info=policy_obs_dim is not None, explicit=explicit)
        d = self.policy.skill_dim
        low, high = ACTION_BOUNDS[self.policy.skill_prior]
        self.action_space = spaces.Discrete(d) if self.policy.discrete else spaces.Box(low, high, (d,), np.float32)
        self._obs: np.ndarray | None = None
        # The loaded policy stands for the checkpoint: it pickles as its reference (pinned), so revision is spent.
        EzPickle.__init__(self, env=env_arg, checkpoint=self.policy, skill_steps=self.skill_steps, revision=None,
                          env_kwargs=env_kwargs, policy_obs_dim=policy_obs_dim_arg, render_mode=render_mode)

    def _with_renderer(self, env_kwargs: dict[str, Any]) -> dict[str, Any]:
        """``env_kwargs`` with the renderer of pixel skills added (cheap or not, frame size), refusing other values."""
        renderer = self.policy.renderer
        if renderer is None or env_kwargs.get("obs_type", "pixels") != "pixels":
            return env_kwargs  # state skills, or a state environment (which _check_compatible refuses by name)
        differ = {key: env_kwargs[key] for key, value in renderer.items() if key in env_kwargs
                  and env_kwargs[key] != value}
        if differ:
            raise ValueError(f"checkpoint {self.policy.source!r} was trained on frames drawn with {renderer}, but "
                             f"env_kwargs asks for {differ}; leave {', '.join(differ)} out of env_kwargs (the skill "
                             "env takes the renderer from the checkpoint)")
        return {**env_kwargs, **renderer}

    def _check_compatible(self, strip_task_info: bool, explicit: bool) -> None:
        policy, space = self.policy, self.env.observation_space
        trained_on = f"checkpoint {policy.source!r} was trained on {policy.env_id}"
        image = isinstance(space, spaces.Box) and len(space.shape) == 3
        if policy.pixels is not None:
            self._check_pixels(trained_on, space, image)
            return
        if image:
            raise CheckpointError(f"{trained_on} with {policy.obs_dim}-d state observations, but this environment's "
                                  f"are {space.shape} images; build it with env_kwargs={{'obs_type': 'state'}}, or "
                                  "use a checkpoint of skills trained on pixels")
        # Environments with pixel and state observations (DMC, Kitchen): name the mismatch before the sizes.
        trained_obs = policy.config.get("env_kwargs", {}).get("obs_type")
        env_obs = getattr(self.env.unwrapped, "obs_type", None)
        if trained_obs is not None and env_obs is not None and trained_obs != env_obs:
            raise CheckpointError(f"{trained_on} with obs_type={trained_obs!r} observations, but this environment's "
                                  f"obs_type is {env_obs!r}; use a checkpoint trained with env_kwargs "
                                  f"{{'obs_type': {env_obs!r}}}")
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise CheckpointError(f"{trained_on} with flat observations; this environment's are {space}")
        size = space.shape[0]
        if self.policy_obs_dim != policy.obs_dim:
            # Only with task information appended (policy_obs_dim given, or the env's pretraining_obs_dim).
            if explicit:
                raise ValueError(f"policy_obs_dim={self.policy_obs_dim}, but {trained_on} with {policy.obs_dim}-d "
                                 f"observations; pass policy_obs_dim={policy.obs_dim} or leave it unset")
            raise CheckpointError(f"{trained_on} with {policy.obs_dim}-d observations, but this environment's "
                                  f"pretraining observations (pretraining_obs_dim) are {self.policy_obs_dim}-d; "
                                  "use a checkpoint for this environment")
        # With task information appended the observation may be longer, never otherwise.
        if size < policy.obs_dim or (size != policy.obs_dim and not strip_task_info):
            raise CheckpointError(f"{trained_on} with {policy.obs_dim}-d observations, but this environment's are "
                                  f"{size}-d; use a checkpoint for this environment")
        if self.env.action_space.shape != (policy.action_dim,):
            raise CheckpointError(f"{trained_on} with {policy.action_dim}-d actions, but this environment's are "
                                  f"{self.env.action_space.shape}; use a checkpoint for this environment")

    def _check_pixels(self, trained_on: str, space: spaces.Space, image: bool) -> None:
        """Pixel skills need the environment's frames, of the shape and renderer they were trained on."""
        policy = self.policy
        shape = tuple(policy.obs_shape)
        if not image:
            raise CheckpointError(f"{trained_on} with {shape} pixel observations, but this environment's are "
                                  f"{space}; build it with env_kwargs={{'obs_type': 'pixels'}}, or use a checkpoint "
                                  "of skills trained on state observations")
        if space.shape != shape or space.dtype != np.uint8:
            raise CheckpointError(f"{trained_on} with {shape} uint8 frames, but this environment's are {space.shape} "
                                  f"{space.dtype}; build it as the checkpoint's env_kwargs say "
                                  f"({policy.config.get('env_kwargs')}, renderer {policy.renderer})")
        renderer = getattr(self.env.unwrapped, "renderer", None)
        if policy.renderer is not None and renderer is not None and renderer != policy.renderer:
            raise CheckpointError(f"{trained_on} with frames drawn with {policy.renderer}, but this environment "
                                  f"draws them with {renderer}; build it with those arguments, or pass the env id "
                                  "and let the skill env build it")
        if self.policy_obs_dim != policy.obs_dim:
            raise ValueError(f"policy_obs_dim={self.policy_obs_dim}, but {trained_on} with pixels; leave it unset")
        if self.env.action_space.shape != (policy.action_dim,):
            raise CheckpointError(f"{trained_on} with {policy.action_dim}-d actions, but this environment's are "
                                  f"{self.env.action_space.shape}; use a checkpoint for this environment")

    def skill_of(self, action: Any) -> np.ndarray:
        """The skill z for a high-level action (one-hot; for unit skills the projection to unit length; for the other
        priors the action itself), with clear errors."""
        if self.policy.discrete:
            return np.eye(self.policy.skill_dim, dtype=np.float32)[self._skill_index(action)]
        try:
            array = np.asarray(action)
        except (TypeError, ValueError):
            array = np.asarray(None)
        if array.dtype.kind not in "iuf":  # bools, strings, objects (ints too large for int64), complex
            raise TypeError(f"a skill action must be an array of real numbers, got {reprlib.repr(action)}")
        if array.shape != self.action_space.shape:
            raise ValueError(f"a skill action must have shape {self.action_space.shape}, got {array.shape}")
        z = array.astype(np.float64)
        if not np.all(np.isfinite(z)):
            raise ValueError(f"a skill action must be finite, got {z.tolist()}")
        prior = self.policy.skill_prior
        if prior != UNIT:  # N(0, I) or U[0, 1]^D: the skill's length is part of the skill, nothing is projected
            if outside_prior(z[None], prior) is not None:  # U[0, 1]^D only: N(0, I) takes every finite vector
                low, high = ACTION_BOUNDS[prior]
                raise ValueError(f"skills of this checkpoint are {DESCRIPTIONS[prior]}: every entry of a skill action "
                                 f"must lie in [{low}, {high}], got {z.tolist()}")
            return z.astype(np.float32)
        # Divide by the largest magnitude first: squaring 1e300 (or 1e20 in float32) would overflow the norm.
        scale = float(np.max(np.abs(z)))
        if scale == 0.0:
            raise ValueError("a zero skill action has no direction; continuous skills are projected to unit length")
        z = z / scale
        return (z / np.linalg.norm(z)).astype(np.float32)

    def _skill_index(self, action: Any) -> int:
        """The index of a discrete skill action: a Python or numpy integer (or 0-d integer array) in range."""
        n = self.action_space.n
        value = action[()] if isinstance(action, np.ndarray) and action.ndim == 0 else action
        # Floats would be truncated, strings parsed and bools read as 0/1: each is a caller's mistake.
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"a discrete skill action must be an integer index in [0, {n}) (int or numpy "
                            f"integer), got {reprlib.repr(action)} of type {type(action).__name__}")
        if not 0 <= value < n:  # compared as Python ints: 2**70 is out of range, not an overflow
            raise ValueError(f"a discrete skill action must be an integer in [0, {n}), got {action!r}")
        return int(value)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._obs, info = self.env.reset(seed=seed, options=options)
        return self._obs, info

    def step(self, action: Any):
        if self._obs is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        z = self.skill_of(action)
        act = self.policy.fixed_skill_actor(z)  # z checked once; state skills then run in NumPy
        crop = None if self.policy.pixels is not None else self.policy_obs_dim
        total, terminated, truncated, info, steps = 0.0, False, False, {}, 0
        while steps < self.skill_steps and not (terminated or truncated):
            low_action = act(self._obs[:crop])
            self._obs, reward, terminated, truncated, info = self.env.step(low_action)
            total += float(reward)
            steps += 1
        return self._obs, total, bool(terminated), bool(truncated), {**info, "skill_steps": steps, "skill": z}

    def save_state(self) -> tuple[Any, np.ndarray]:
        """A snapshot of this env to come back to with :meth:`restore_state`, to try skills and undo them (look-ahead
        planning): the inner MuJoCo environment's state (:func:`metra_gym.envs.snapshot.save_state`) and the last
        observation. A step of this env (``env.unwrapped.step``, not through the time limit) between the two leaves no
        trace. MuJoCo environments only (Gymnasium's and metra-gym's DMC ones)."""
        from metra_gym.envs.snapshot import save_state

        if self._obs is None:
            raise gym.error.ResetNeeded("call reset() before save_state()")
        return save_state(self.env), self._obs.copy()

    def restore_state(self, state: tuple[Any, np.ndarray]) -> None:
        """Return to a snapshot of :meth:`save_state` (of this env)."""
        from metra_gym.envs.snapshot import restore_state

        inner, obs = state
        restore_state(self.env, inner)
        self._obs = obs.copy()

    def render(self):
        return self.env.render()

    def close(self) -> None:
        self.env.close()
