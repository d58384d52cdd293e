"""The Stable-Baselines3-shaped skill-discovery algorithm: ``METRA("MlpPolicy", env).learn(...)``.

An algorithm class (:class:`~pretrain.algorithms.metra.METRA`, ``LSD``, ``DIAYN``, ``DADS``, ``CIC``) is
:class:`SkillAlgorithm` on an off-policy backbone of :mod:`pretrain.algorithms.common.backbones` (SAC, the
paper's; :meth:`SkillAlgorithm.on_backbone` gives the same algorithm on CrossQ or TQC). It is what the CLI, the
sweep and a user's script all build:

- the hyperparameters come from the training configuration (:class:`pretrain.run.config.PretrainConfig`, the
  one source of defaults): ``metra-pretrain train`` passes :meth:`SkillAlgorithm.config_kwargs` of its config, a
  model built in Python takes those of the default config for whatever it is not given;
- ``env`` may be a plain Gymnasium environment or id: the skill conditioning (one skill z per episode, appended to
  the observation; :class:`pretrain.algorithms.common.skill_conditioned.SkillConditioned`) is added for it, in
  ``__init__`` and in :meth:`SkillAlgorithm.load`;
- :meth:`SkillAlgorithm.export_skills` writes the skill policy (and phi) as the pickle-free skill checkpoint that
  :class:`metra_gym.SkillPolicy` and :class:`metra_gym.SkillEnv` load.
"""

from __future__ import annotations

import functools
import inspect
import io
import pathlib
import zipfile
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
from stable_baselines3.common.save_util import json_to_data
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv

from metra_gym.skill_priors import UNIT
from pretrain.algorithms import BACKBONES, OPTIMIZER_KWARGS, REGISTRY, skill_learner
from pretrain.algorithms.common.backbones import AUTO_HALF, BACKBONE_CLASSES
from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.run.config import PretrainConfig

if TYPE_CHECKING:
    from pretrain.algorithms.common.skill_learner import SkillLearner

# Keys of config_kwargs that describe a run rather than the algorithm: a model built in Python keeps SB3's own
# defaults for them (a random seed, device "auto").
RUN_KEYS = ("seed", "device")
# Parameters of every SkillLearner.__init__ that the backbone fills in (not hyperparameters).
_LEARNER_SHAPE_ARGS = ("self", "obs_dim", "skill_dim", "discrete_skills")


def skill_conditioned(env: GymEnv | str, skill_dim: int, discrete_skills: bool, prior: str = UNIT) -> GymEnv:
    """``env`` ready for a skill-discovery model: an id is made with ``gym.make`` (``module:Env-v0`` imports
    ``module`` first), a plain environment is wrapped in :class:`SkillConditioned`; an environment that already is
    skill-conditioned, and a ``VecEnv`` (whose environments must be), are returned as they are.

    :param env: a Gymnasium environment, its id, or a VecEnv of skill-conditioned environments.
    :param skill_dim: size of the skill z.
    :param discrete_skills: one-hot skills instead of draws from ``prior``.
    :param prior: the algorithm's prior of continuous skills (:mod:`metra_gym.skill_priors`).
    :raises ValueError: for an environment whose actions are not continuous (Box).
    """
    if isinstance(env, VecEnv):
        return env
    if isinstance(env, str):
        env = gym.make(env)
    inner = env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, SkillConditioned):
            return env
        inner = inner.env
    if not isinstance(env.action_space, gym.spaces.Box):
        name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
        raise ValueError(f"{name} has {env.action_space} actions; skill discovery here trains continuous (Box) "
                         "actions (SAC, CrossQ, TQC)")
    return SkillConditioned(env, skill_dim, discrete_skills, prior)


def _saved_skill_spec(path: str | pathlib.Path | io.BufferedIOBase) -> tuple[int, bool]:
    """``(skill_dim, discrete_skills)`` of a saved model, read from the zip's ``data`` without loading weights."""
    if isinstance(path, (str, pathlib.Path)):
        source = pathlib.Path(path)
        if not source.exists() and source.with_name(source.name + ".zip").exists():  # SB3 adds the suffix too
            source = source.with_name(source.name + ".zip")
        with zipfile.ZipFile(source) as archive:
            data = json_to_data(archive.read("data").decode())
    else:  # a file object: SB3's load reads it again from where it is now
        start = path.tell()
        with zipfile.ZipFile(path) as archive:  # closes the archive, not the file given
            data = json_to_data(archive.read("data").decode())
        path.seek(start)
    return int(data["skill_dim"]), bool(data["discrete_skills"])


class SkillAlgorithm:
    """A skill-discovery algorithm as an SB3 algorithm; placed before its backbone in the bases
    (``class METRA(SkillAlgorithm, SkillSAC)``).

    :param policy: "MlpPolicy" (the skill policy of the official METRA code), "MultiInputPolicy" for pixel
        observations, or a policy class.
    :param env: a Gymnasium environment or id (the skill conditioning is added), or a VecEnv of skill-conditioned
        environments (:class:`pretrain.algorithms.common.skill_conditioned.SkillConditioned`). Actions must be continuous (Box).
    :param skill_dim: D, the size of the skill z (default: the config's).
    :param discrete_skills: one-hot skills instead of unit vectors (default: the config's).
    :param skill_learner_kwargs: the skill learner's hyperparameters; each may also be given as a keyword of its
        own (e.g. ``phi_net_arch=[256, 256]``, ``dual_slack=1e-3`` for METRA).
    :param kwargs: the backbone's (SAC's: ``learning_rate``, ``batch_size``, ``policy_kwargs``, ``seed``, ...) and
        :class:`~pretrain.algorithms.common.backbones.SkillDiscoveryMixin`'s keywords. ``policy_kwargs`` are merged
        into the config's (``{"net_arch": [64, 64]}`` keeps the fused Adam).
    Everything not given takes the value of the default :class:`~pretrain.run.config.PretrainConfig` of the
    algorithm (:meth:`config_kwargs`), except ``seed`` and ``device``, which keep SB3's defaults.
    """

    algo: ClassVar[str]  # the config's name of the algorithm ("metra", "lsd", ...)

    def __init__(self, policy: str | type, env: GymEnv | str | None, skill_dim: int | None = None,
                 discrete_skills: bool | None = None, skill_learner_kwargs: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        defaults = self.config_kwargs(self.default_config())
        for key in RUN_KEYS:
            del defaults[key]
        learner_kwargs = {**defaults.pop("skill_learner_kwargs"), **(skill_learner_kwargs or {})}
        learner_kwargs.update({k: kwargs.pop(k) for k in self.learner_parameters() if k in kwargs})
        policy_kwargs = {**defaults.pop("policy_kwargs"), **(kwargs.pop("policy_kwargs", None) or {})}
        default_skill_dim, default_discrete = defaults.pop("skill_dim"), defaults.pop("discrete_skills")
        skill_dim = default_skill_dim if skill_dim is None else skill_dim
        discrete_skills = default_discrete if discrete_skills is None else discrete_skills
        # The id a model was made from names its environment in an exported checkpoint (with a module: prefix, which
        # the made environment's spec drops); saved with the model.
        self.env_id: str | None = env if isinstance(env, str) else None
        if env is not None:
            env = skill_conditioned(env, skill_dim, discrete_skills, self.learner_class().skill_prior)
        super().__init__(policy, env, skill_dim=skill_dim, discrete_skills=discrete_skills,  # type: ignore[call-arg]
                         skill_learner_class=self.learner_class(), skill_learner_kwargs=learner_kwargs,
                         policy_kwargs=policy_kwargs, **{**defaults, **kwargs})

    # --- the configuration: one source of defaults -----------------------------------------------------------

    @classmethod
    def backbone_name(cls) -> str:
        """The config's name of the backbone this class runs on ("sac", "crossq" or "tqc")."""
        return next(name for name, backbone in BACKBONE_CLASSES.items() if issubclass(cls, backbone))

    @classmethod
    def default_config(cls) -> PretrainConfig:
        """The configuration whose values a model built in Python takes for what it is not given (with the
        algorithm's own skill space where it has one: CIC's 64 continuous skills)."""
        return PretrainConfig(algo=cls.algo, backbone=cls.backbone_name(), **REGISTRY[cls.algo].skill_space)

    @classmethod
    def learner_class(cls) -> type[SkillLearner]:
        return skill_learner(cls.default_config())[0]

    @classmethod
    def learner_parameters(cls) -> list[str]:
        """The skill learner's hyperparameters, which the constructor also takes as keywords of their own."""
        parameters = inspect.signature(cls.learner_class().__init__).parameters
        return [name for name in parameters if name not in _LEARNER_SHAPE_ARGS]

    @classmethod
    def config_kwargs(cls, config: PretrainConfig) -> dict[str, Any]:
        """The constructor keywords of a training configuration (what ``metra-pretrain train`` builds the model
        with; the pixel settings, the replay buffer class and the log folder are :mod:`pretrain.run.model`'s).

        :param config: a configuration of this class's algorithm and backbone.
        """
        if (config.algo, config.backbone) != (cls.algo, cls.backbone_name()):
            raise ValueError(f"{cls.__name__} is {cls.algo} on {cls.backbone_name()}, the config asks for "
                             f"{config.algo} on {config.backbone}; use pretrain.algorithms.algorithm_class")
        optimizer_kwargs: dict[str, Any] = dict(OPTIMIZER_KWARGS)
        if config.backbone == "crossq":  # CrossQ's Adam (its paper and sb3-contrib): beta1 = 0.5
            optimizer_kwargs["betas"] = (0.5, 0.999)
        kwargs: dict[str, Any] = {
            "skill_dim": config.skill_dim,
            "discrete_skills": config.discrete_skills,
            "skill_learner_kwargs": skill_learner(config)[1],
            "timeout_done": config.timeout_done,
            "random_warmup": config.random_warmup,
            "alpha_learning_rate": config.alpha_learning_rate,
            "init": config.init,
            "learning_rate": config.learning_rate,
            "buffer_size": config.buffer_size,
            "learning_starts": config.learning_starts,
            "batch_size": config.batch_size,
            "gamma": config.gamma,
            "train_freq": (config.episode_steps, "step"),
            "gradient_steps": config.gradient_steps,
            "ent_coef": f"auto_{config.alpha_init}" if config.learn_alpha else config.alpha_init,
            "target_entropy": AUTO_HALF if config.target_entropy is None else config.target_entropy,
            "policy_kwargs": {"net_arch": {"pi": config.hidden, "qf": config.critic_hidden},
                              "optimizer_kwargs": optimizer_kwargs},
            "seed": config.seed,
            "device": config.device,
        }
        if config.backbone != "crossq":  # CrossQ has no target networks
            kwargs["tau"] = config.tau
        return kwargs

    @classmethod
    def on_backbone(cls, backbone: str) -> type[SkillAlgorithm]:
        """The same algorithm on another backbone: ``METRA.on_backbone("crossq")("MlpPolicy", env)``.

        :param backbone: "sac", "crossq" or "tqc".
        """
        if backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
        return cls if backbone == cls.backbone_name() else _on_backbone(cls.algo, cls.__name__, cls.__module__,
                                                                        backbone)

    # --- saving, loading, exporting ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | pathlib.Path | io.BufferedIOBase, env: GymEnv | str | None = None, **kwargs: Any):
        """SB3's ``load``; ``env`` may also be a plain Gymnasium environment or id (skill-conditioned here with the
        saved model's skill space). Other parameters: SB3's ``BaseAlgorithm.load``."""
        if env is not None and not isinstance(env, VecEnv):
            env = skill_conditioned(env, *_saved_skill_spec(path), cls.learner_class().skill_prior)
        return super().load(path, env=env, **kwargs)  # type: ignore[misc]

    def export_skills(self, out_dir: str | pathlib.Path, force: bool = False) -> pathlib.Path:
        """Write the skill policy (and phi, for METRA and LSD) as a pickle-free skill checkpoint folder
        (``config.json``, ``model.safetensors``, ``README.md``) for :class:`metra_gym.SkillPolicy` and
        :class:`metra_gym.SkillEnv`. The environment recorded is the model's (its id, ``gym.make`` keywords and
        observation normaliser).

        :param out_dir: the folder to write (atomically).
        :param force: replace a non-empty ``out_dir``.
        """
        from pretrain.export import export_skills

        return export_skills(self, out_dir, force=force)


@functools.cache
def _on_backbone(algo: str, name: str, module: str, backbone: str) -> type[SkillAlgorithm]:
    """One class per (algorithm, backbone), made once, e.g. ``METRACrossQ``."""
    base = BACKBONE_CLASSES[backbone]
    suffix = base.__name__.removeprefix("Skill")
    doc = f"{name} on {suffix} ({base.__name__}); parameters: :class:`SkillAlgorithm` and {suffix}'s."
    return type(f"{name}{suffix}", (SkillAlgorithm, base), {"algo": algo, "__doc__": doc, "__module__": module})
