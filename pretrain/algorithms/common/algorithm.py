"""The Stable-Baselines3-shaped skill-discovery algorithm: ``METRA("MlpPolicy", "metra/Ant-v0").learn(...)``.

An algorithm class (:class:`~pretrain.algorithms.metra.METRA`, ``LSD``, ``DIAYN``, ``DADS``, ``CIC``, the
exploration methods ``ICM``, ``LBS``, ``RND``, ``APT``, ``DISAGREEMENT``, ``APS``) is
:class:`SkillAlgorithm` on an off-policy backbone of :mod:`pretrain.algorithms.common.backbones` (SAC, the
paper's; :meth:`SkillAlgorithm.on_backbone` gives the same algorithm on CrossQ or TQC). It is what the CLI, the
sweep and a user's script all build, and a model built in Python trains what ``metra-pretrain train`` trains from
the default configuration of the same environment:

- its signature shows every hyperparameter with its default (``inspect.signature(METRA)``, ``help(METRA)``); the
  defaults are those of the training configuration (:class:`pretrain.config.PretrainConfig`, the one source of
  defaults): :meth:`SkillAlgorithm.config_kwargs` maps a configuration to the constructor's keywords, and the
  signature is that of the default configuration;
- an environment id is made as a configuration makes it (``n_envs`` copies with ``episode_steps``-step episodes and
  the configuration's observation normaliser), a plain environment gets the same episode length and normaliser,
  and both get the skill conditioning (one skill z per episode, appended to the observation;
  :class:`pretrain.algorithms.common.skill_conditioned.SkillConditioned`), in ``__init__`` and in
  :meth:`SkillAlgorithm.load`;
- its hyperparameters are checked by the configuration's checks (:func:`pretrain.config.build_config`), so it
  refuses what the CLI refuses, with the same messages, and its memory is checked before the replay buffer is made;
- :meth:`SkillAlgorithm.export_skills` writes the skill policy (and phi) as the pickle-free skill checkpoint that
  :class:`metra_gym.SkillPolicy` and :class:`metra_gym.SkillEnv` load.
"""

from __future__ import annotations

import functools
import inspect
import io
import pathlib
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
from stable_baselines3.common.save_util import json_to_data
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv

from pretrain.algorithms.common.backbones import AUTO_HALF, BACKBONE_CLASSES
from pretrain.algorithms.common.device import resolve_device
from pretrain.algorithms.common.memory import check_memory
from pretrain.algorithms.common.normalization import FIT_EPISODES, fit_normalizer, observation_normalizer
from pretrain.algorithms.common.training_env import (
    check_actions,
    env_name,
    id_maker,
    is_skill_conditioned,
    normalized,
    probe,
    skill_vec_env,
)
from pretrain.algorithms.common.vec_env import NoCopyDummyVecEnv
from pretrain.config import (
    AUTO,
    BACKBONES,
    FITTED,
    OPTIMIZER_KWARGS,
    REGISTRY,
    ConfigError,
    PretrainConfig,
    build_config,
    default_normalizer,
)
from pretrain.config.registry import algorithm_module

if TYPE_CHECKING:
    from pretrain.algorithms.common.skill_learner import SkillLearner

# Parameters of every SkillLearner.__init__ that the backbone fills in (not hyperparameters).
_LEARNER_SHAPE_ARGS = ("self", "obs_dim", "skill_dim", "discrete_skills", "action_dim", "optimizer_kwargs")
# The constructor's parameters before the skill learner's, in the signature's order, with what they mean. Their
# defaults are the default configuration's (SkillAlgorithm.config_kwargs); None marks a default derived from others.
PARAMETERS: dict[str, str] = {
    "skill_dim": "D, the size of the skill z (0 for an exploration method: no skill)",
    "discrete_skills": "one-hot skills instead of continuous ones of the algorithm's prior",
    "n_envs": "copies of an environment id trained side by side (an environment object is one environment; a VecEnv "
              "is used as it is)",
    "episode_steps": "steps of an episode, one skill each: the time limit of the environments and the default "
                     "``train_freq``",
    "normalizer": "observation normaliser: ``'auto'`` (METRA's preset of the environment where it has one: "
                  "metra/Ant-v0, metra/HalfCheetah-v0; else none), ``'none'``, a preset (``'ant'``, "
                  "``'half_cheetah'``) or ``'fitted'`` (mean and std of random-action episodes)",
    "normalizer_stats": "with ``'fitted'``: ``{mean, std}`` fitted before (None: fit them now)",
    "normalizer_min_std": "with ``'fitted'``: the smallest std a dimension is divided by (None: a dimension random "
                          "actions leave constant is left unscaled)",
    "env_kwargs": "keywords of ``gym.make`` for an environment id",
    "learning_rate": "Adam learning rate of the policy and the critics, and of the skill learner's networks unless "
                     "given apart",
    "buffer_size": "transitions the replay buffer holds",
    "learning_starts": "transitions collected before the first gradient step",
    "batch_size": "minibatch size of every gradient step",
    "tau": "rate of the target critics' Polyak updates (not CrossQ, which has no target networks)",
    "gamma": "discount factor",
    "train_freq": "collection between rounds of gradient steps; None: ``(episode_steps, 'step')``, one round per "
                  "epoch, after every environment finished an episode",
    "gradient_steps": "gradient steps per round",
    "ent_coef": "entropy coefficient alpha: ``'auto_X'`` learns it from X, a number keeps it fixed",
    "target_entropy": "the entropy alpha aims at: ``'auto_half'`` (-|A|/2, METRA's), ``'auto'`` (SB3's -|A|) or a "
                      "number",
    "alpha_learning_rate": "constant Adam learning rate of log alpha; None: follows ``learning_rate`` (SB3)",
    "policy_kwargs": "the policy's keywords; None: the default configuration's networks (``net_arch`` {pi, qf}) and "
                     "fused Adam; a dict given is merged into them",
    "init": "``'torch'`` (PyTorch's default initialisation) or ``'official'`` (xavier-normal weights and zero "
            "biases, as in the official code)",
    "timeout_done": "store the last transition of a time-limited episode as terminal (no bootstrap), as the "
                    "official code does",
    "random_warmup": "uniform random actions until ``learning_starts`` (SB3's); False collects with the initial "
                     "policy, as the official code does",
}
# Keyword parameters whose default is derived from others: the environment's normaliser, the collection of one
# epoch, the default configuration's networks, the actor's widths and the learning rate for the skill learner.
DERIVED = ("normalizer", "train_freq", "policy_kwargs")


def _saved_data(path: str | pathlib.Path | io.BufferedIOBase) -> dict[str, Any]:
    """The ``data`` of a saved SB3 zip (its hyperparameters and attributes), read without loading the weights. Its
    pickled entries (classes, spaces) are unpickled: a saved model is trusted input."""
    if isinstance(path, (str, pathlib.Path)):
        source = pathlib.Path(path)
        if not source.exists() and source.with_name(source.name + ".zip").exists():  # SB3 adds the suffix too
            source = source.with_name(source.name + ".zip")
        with zipfile.ZipFile(source) as archive:
            return json_to_data(archive.read("data").decode())
    start = path.tell()  # a file object: SB3's load reads it again from where it is now
    with zipfile.ZipFile(path) as archive:  # closes the archive, not the file given
        data = json_to_data(archive.read("data").decode())
    path.seek(start)
    return data


def _widths(net_arch: Any, key: str) -> list[int] | None:
    """The hidden widths of SB3's ``net_arch`` (a list, or a dict of ``pi`` and ``qf``) for ``key``."""
    widths = net_arch.get(key) if isinstance(net_arch, dict) else net_arch
    return list(widths) if isinstance(widths, (list, tuple)) else None


def _check_widths(name: str, widths: Any) -> None:
    if widths is not None and not (isinstance(widths, (list, tuple)) and widths
                                   and all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in widths)):
        raise ConfigError(f"{name} must be a list of hidden widths, each an integer >= 1, got {widths!r}")


class SkillAlgorithm:
    """A skill-discovery algorithm as an SB3 algorithm; placed before its backbone in the bases
    (``class METRA(SkillAlgorithm, SkillSAC)``). Its parameters are listed below the class docstring of each
    algorithm (``help(METRA)``).

    :param policy: "MlpPolicy" (the skill policy of the official METRA code), "MultiInputPolicy" for pixel
        observations, or a policy class.
    :param env: a Gymnasium environment id (``n_envs`` copies are made), a Gymnasium environment (trained alone), or
        a VecEnv of skill-conditioned environments (used as it is). Actions must be continuous (Box).
    """

    algo: ClassVar[str]  # the config's name of the algorithm ("metra", "lsd", ...)
    learner_class: ClassVar[type[SkillLearner]]  # the algorithm's skill learner

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "algo" in cls.__dict__:  # an algorithm on a backbone: its signature and parameters, derived from the config
            cls.__signature__ = cls._derived_signature()
            cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n" + cls._parameters_doc()

    def __init__(self, policy: str | type, env: GymEnv | str | None, **kwargs: Any) -> None:
        setup = kwargs.pop("_init_setup_model", True)  # False: SB3's load, which sets the saved attributes next
        arguments = {**self._defaults(), **inspect.signature(type(self)).bind(policy, env, **kwargs).arguments}
        arguments.update(arguments.pop("kwargs", {}))  # the backbone's other keywords
        hyper = self._resolved(arguments, given=set(kwargs))
        self.env_id: str | None = None  # the id the environment was made from: names it in an exported checkpoint
        if setup:
            env = self._prepare(env, hyper)
        else:
            # Attributes of models saved before they were recorded (an older metra-gym): no time limit or normaliser
            # is added to a plain environment given to load.
            hyper.update(episode_steps=None, normalizer="none", normalizer_stats=None, env_kwargs={})
        self.episode_steps, self.env_kwargs = hyper.pop("episode_steps"), hyper.pop("env_kwargs")
        self.normalizer, self.normalizer_stats = hyper.pop("normalizer"), hyper.pop("normalizer_stats")
        self.normalizer_min_std = hyper.pop("normalizer_min_std")
        del hyper["n_envs"]  # the environments' number (SB3's n_envs)
        super().__init__(policy, env, skill_learner_class=self.learner_class,  # type: ignore[call-arg]
                         _init_setup_model=setup, **hyper)

    # --- the configuration: one source of defaults -----------------------------------------------------------

    @classmethod
    def backbone_name(cls) -> str:
        """The config's name of the backbone this class runs on ("sac", "crossq" or "tqc")."""
        return next(name for name, backbone in BACKBONE_CLASSES.items() if issubclass(cls, backbone))

    @classmethod
    def default_config(cls, env_id: str | None = None) -> PretrainConfig:
        """The configuration a model built in Python trains by default: the default one, on this algorithm and
        backbone (with the algorithm's own skill space where its paper fixes one: CIC's 64 continuous skills) and,
        when given, on ``env_id`` (whose normaliser it takes)."""
        return PretrainConfig(algo=cls.algo, backbone=cls.backbone_name(), **REGISTRY[cls.algo].skill_space,
                              **({} if env_id is None else {"env_id": env_id}))

    @classmethod
    def learner_kwargs(cls, config: PretrainConfig) -> dict[str, Any]:
        """The skill learner's keywords of a configuration: its networks' widths (``phi_width``, else ``net_width``)
        and learning rate, its own keys (its registry row's), and the optimisers' keywords."""
        entry = REGISTRY[cls.algo]
        widths, learning_rate = entry.networks
        return {widths: config.phi_hidden, learning_rate: config.learning_rate,
                **{keyword: getattr(config, key) for keyword, key in entry.own_keys.items()},
                "optimizer_kwargs": dict(OPTIMIZER_KWARGS)}

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
        learner = cls.learner_kwargs(config)
        del learner["optimizer_kwargs"]  # not a hyperparameter: every optimiser's (OPTIMIZER_KWARGS)
        kwargs: dict[str, Any] = {
            "skill_dim": config.skill_dim,
            "discrete_skills": config.discrete_skills,
            "n_envs": config.n_envs,
            "episode_steps": config.episode_steps,
            "normalizer": config.normalizer,
            "normalizer_stats": config.normalizer_stats,
            "normalizer_min_std": config.normalizer_min_std,
            "env_kwargs": dict(config.env_kwargs),
            "learning_rate": config.learning_rate,
            "buffer_size": config.buffer_size,
            "learning_starts": config.learning_starts,
            "batch_size": config.batch_size,
            "tau": config.tau,
            "gamma": config.gamma,
            "train_freq": (config.episode_steps, "step"),
            "gradient_steps": config.gradient_steps,
            "ent_coef": f"auto_{config.alpha_init}" if config.learn_alpha else config.alpha_init,
            "target_entropy": AUTO_HALF if config.target_entropy is None else config.target_entropy,
            "alpha_learning_rate": config.alpha_learning_rate,
            "policy_kwargs": {"net_arch": {"pi": config.hidden, "qf": config.critic_hidden},
                              "optimizer_kwargs": optimizer_kwargs},
            "init": config.init,
            "timeout_done": config.timeout_done,
            "random_warmup": config.random_warmup,
            **learner,
            "seed": config.seed,
            "device": config.device,
        }
        if config.backbone == "crossq":  # CrossQ has no target networks
            del kwargs["tau"]
        return kwargs

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        """The keyword parameters and their defaults: the default configuration's keywords (SB3's ``seed`` and
        ``device`` kept), the derived ones None (:data:`DERIVED`, the skill learner's networks), the skill
        learner's other parameters at its own defaults."""
        defaults = cls.config_kwargs(cls.default_config())
        del defaults["seed"], defaults["device"]
        widths, learning_rate = REGISTRY[cls.algo].networks
        defaults.update(dict.fromkeys((*DERIVED, widths, learning_rate)), normalizer=AUTO)
        for name, parameter in _learner_parameters(cls.learner_class).items():
            defaults.setdefault(name, parameter.default)  # the learner's other parameters: its own defaults
        defaults["skill_learner_kwargs"] = None
        return defaults

    @classmethod
    def _derived_signature(cls) -> inspect.Signature:
        parameters = [inspect.Parameter("policy", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                      inspect.Parameter("env", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                       for name, default in cls._defaults().items()]
        parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
        return inspect.Signature(parameters)

    @classmethod
    def _parameters_doc(cls) -> str:
        """The ``:param`` lines of the derived parameters, each with its default."""
        entry = REGISTRY[cls.algo]
        widths, learning_rate = entry.networks
        learner = {widths: "hidden widths of the skill learner's networks; None: the actor's (``net_arch`` pi)",
                   learning_rate: "Adam learning rate of the skill learner's networks; None: ``learning_rate``",
                   **{key.keyword: f"{key.help} (config key ``{name}``)" for name, key in entry.keys.items()},
                   "skill_learner_kwargs": "other keywords of the skill learner"}
        learner_doc = _param_docs(inspect.getdoc(cls.learner_class) or "")
        lines = [":param policy: " + "\"MlpPolicy\", \"MultiInputPolicy\" (pixels) or a policy class.",
                 ":param env: a Gymnasium environment id, a Gymnasium environment, or a VecEnv of skill-conditioned "
                 "environments."]
        for name, default in cls._defaults().items():
            meaning = (PARAMETERS.get(name) or learner.get(name) or learner_doc.get(name)
                       or "a keyword of the skill learner").rstrip(".")
            lines.append(f":param {name}: {meaning}. Default: ``{default!r}``.")
        lines.append(":param kwargs: other keywords of the backbone (SB3's ``seed``, ``device``, ``verbose``, "
                     "``tensorboard_log``, ...).")
        return "Parameters (defaults: the training configuration's, :class:`pretrain.config.PretrainConfig`):\n\n" \
            + "\n".join(lines)

    @classmethod
    def on_backbone(cls, backbone: str) -> type[SkillAlgorithm]:
        """The same algorithm on another backbone: ``METRA.on_backbone("crossq")("MlpPolicy", env)``.

        :param backbone: "sac", "crossq" or "tqc".
        """
        if backbone not in BACKBONES:
            raise ValueError(f"backbone must be one of {', '.join(BACKBONES)}, got {backbone!r}")
        return cls if backbone == cls.backbone_name() else _on_backbone(cls.algo, cls.__name__, cls.__module__,
                                                                        cls.learner_class, backbone)

    # --- a new model: its hyperparameters, checked, and its environments --------------------------------------

    def _resolved(self, arguments: dict[str, Any], given: set[str]) -> dict[str, Any]:
        """The backbone's keywords of the constructor's arguments: derived defaults filled in, the skill learner's
        keywords gathered into ``skill_learner_kwargs``."""
        hyper = dict(arguments)
        hyper.pop("policy"), hyper.pop("env")
        config = self.default_config()
        if hyper["train_freq"] is None:
            hyper["train_freq"] = (hyper["episode_steps"], "step")
        hyper["policy_kwargs"] = {**self.config_kwargs(config)["policy_kwargs"], **(hyper["policy_kwargs"] or {})}
        widths, learning_rate = REGISTRY[self.algo].networks
        if hyper[widths] is None:
            hyper[widths] = _widths(hyper["policy_kwargs"].get("net_arch"), "pi")
        if hyper[learning_rate] is None:
            rate = hyper["learning_rate"]
            hyper[learning_rate] = rate(1.0) if callable(rate) else rate
        learner = {name: hyper.pop(name) for name in _learner_parameters(self.learner_class)}
        own = {widths, learning_rate, *REGISTRY[self.algo].own_keys}
        learner = {name: value for name, value in learner.items()  # the others only where they are not the learner's
                   if name in own or value is not _learner_parameters(self.learner_class)[name].default}
        extra = dict(hyper.pop("skill_learner_kwargs") or {})
        learner.update({name: value for name, value in extra.items() if name not in given})  # keywords given apart win
        hyper["skill_learner_kwargs"] = {"optimizer_kwargs": dict(OPTIMIZER_KWARGS), **learner}
        return hyper

    def _prepare(self, env: Any, hyper: dict[str, Any]) -> VecEnv:
        """Check the hyperparameters and the device as a training configuration is checked, and make the
        environments; fills in the environment's id and keywords, and the normaliser resolved (and fitted)."""
        if env is None or not isinstance(env, (str, gym.Env, VecEnv)):
            raise ConfigError(f"env must be a Gymnasium environment id, a Gymnasium environment or a VecEnv, got "
                              f"{env!r}")
        if isinstance(env, str):
            self.env_id = env
        elif isinstance(env, gym.Env) and env.spec is not None:
            self.env_id = env.spec.id
            hyper["env_kwargs"] = {k: v for k, v in env.spec.kwargs.items() if k != "render_mode"}
        hyper["n_envs"] = env.num_envs if isinstance(env, VecEnv) else hyper["n_envs"] if isinstance(env, str) else 1
        if hyper["normalizer"] == AUTO:
            hyper["normalizer"] = default_normalizer(self.env_id)
        _check_widths("policy_kwargs net_arch", _widths(hyper["policy_kwargs"].get("net_arch"), "pi"))
        _check_widths("policy_kwargs net_arch", _widths(hyper["policy_kwargs"].get("net_arch"), "qf"))
        widths, _ = REGISTRY[self.algo].networks
        _check_widths(widths, hyper["skill_learner_kwargs"].get(widths))
        build_config(self.described(hyper, self.env_id or (env_name(env) if isinstance(env, gym.Env) else None)))
        resolve_device(hyper.get("device", "auto"))
        if isinstance(env, VecEnv):
            return env
        return self._training_env(env, hyper, self.learner_class.skill_prior)

    @classmethod
    def _training_env(cls, env: gym.Env | str, settings: dict[str, Any], prior: str) -> VecEnv:
        """The skill-conditioned training environments of an id (``n_envs`` copies) or of one environment, with the
        episode length and normaliser of ``settings`` (fitting it when ``normalizer`` is fitted without stats)."""
        if isinstance(env, gym.Env) and is_skill_conditioned(env):
            return NoCopyDummyVecEnv([lambda: env])
        episode_steps, name = settings["episode_steps"], settings["normalizer"]
        if isinstance(env, str):
            make_raw: Callable[[], gym.Env] = id_maker(env, episode_steps, settings["env_kwargs"])
            space = probe(make_raw, env).observation_space
        else:
            check_actions(env)
            if episode_steps is not None and (env.spec is None or env.spec.max_episode_steps != episode_steps):
                env = gym.wrappers.TimeLimit(env, episode_steps)
            space = env.observation_space
            make_raw = (lambda: gym.make(env.spec, max_episode_steps=episode_steps)) if env.spec is not None else None
        normalizer = None
        if name != "none":
            if name == FITTED and settings["normalizer_stats"] is None:
                if make_raw is None:
                    raise ConfigError("normalizer='fitted' fits on new copies of the environment, and this one was "
                                      "not made with gym.make: give its id, or normalizer_stats")
                settings["normalizer_stats"] = fit_normalizer(make_raw, FIT_EPISODES, episode_steps,
                                                              settings.get("seed") or 0,
                                                              settings.get("normalizer_min_std"))
            normalizer = observation_normalizer(name, settings["normalizer_stats"], space.shape[0],
                                                env if isinstance(env, str) else env_name(env))
        n_envs = settings["n_envs"] if isinstance(env, str) else 1
        make = (lambda: normalized(make_raw(), normalizer, name)) if isinstance(env, str) else \
            (lambda: normalized(env, normalizer, name))  # type: ignore[arg-type]
        return skill_vec_env(make, n_envs, settings["skill_dim"], settings["discrete_skills"], prior)

    @classmethod
    def described(cls, hyper: dict[str, Any], env_id: str | None) -> dict[str, Any]:
        """The training configuration's keys that the constructor's (or a model's) hyperparameters say exactly;
        the others (a ``train_freq`` other than one epoch, networks of unequal widths, ...) are left out."""
        values: dict[str, Any] = {"algo": cls.algo, "backbone": cls.backbone_name()}
        if env_id is not None:
            values["env_id"] = env_id
        same = ("skill_dim", "discrete_skills", "n_envs", "episode_steps", "normalizer", "normalizer_stats",
                "normalizer_min_std", "env_kwargs", "buffer_size", "learning_starts", "batch_size", "gamma",
                "gradient_steps", "init", "timeout_done", "random_warmup", "seed")
        values.update({key: hyper[key] for key in same if hyper.get(key) is not None})
        if isinstance(hyper.get("device"), str):  # (a model's is a torch.device: where it is, not what was asked)
            values["device"] = hyper["device"]
        for key in ("learning_rate", "alpha_learning_rate"):
            if not callable(hyper.get(key)) and hyper.get(key) is not None:
                values[key] = hyper[key]
        if hyper.get("tau") is not None:  # (CrossQ has none: the config's check says so)
            values["tau"] = hyper["tau"]
        ent_coef = hyper.get("ent_coef")
        if isinstance(ent_coef, str) and ent_coef.startswith("auto"):
            values.update(learn_alpha=True, alpha_init=float(ent_coef[5:]) if "_" in ent_coef else 1.0)
        elif ent_coef is not None:
            values.update(learn_alpha=False, alpha_init=ent_coef)
        target_entropy = hyper.get("target_entropy")
        if target_entropy == AUTO_HALF:
            values["target_entropy"] = None
        elif target_entropy != "auto" and target_entropy is not None:
            values["target_entropy"] = target_entropy
        net_arch = (hyper.get("policy_kwargs") or {}).get("net_arch")
        actor, critic = _widths(net_arch, "pi"), _widths(net_arch, "qf")
        entry = REGISTRY[cls.algo]
        learner = hyper.get("skill_learner_kwargs") or {}
        if actor and critic and len(set(actor)) == 1 and len(set(critic)) == 1 and len(actor) == len(critic):
            values.update(net_width=actor[0], net_layers=len(actor), critic_width=critic[0])
            phi = learner.get(entry.networks[0])
            if isinstance(phi, list) and phi and len(set(phi)) == 1 and len(phi) == len(actor):
                values["phi_width"] = phi[0]
        values.update({key: learner[keyword] for keyword, key in entry.own_keys.items() if keyword in learner})
        return values

    def _setup_model(self) -> None:
        self._check_memory()
        super()._setup_model()  # type: ignore[misc]

    def _check_memory(self) -> None:
        """Refuse a replay buffer and networks larger than the machine's memory, before they are allocated."""
        space = self.observation_space  # type: ignore[attr-defined]
        raw = space["pixels"] if isinstance(space, gym.spaces.Dict) else gym.spaces.Box(
            -1, 1, (max(int(space.shape[0]) - self.skill_dim, 0),))  # type: ignore[attr-defined]
        hyper = {**vars(self), "policy_kwargs": self.policy_kwargs}  # type: ignore[attr-defined]
        config = PretrainConfig(**{k: v for k, v in self.described(hyper, None).items()
                                   if k in ("skill_dim", "buffer_size", "net_width", "net_layers", "critic_width",
                                            "phi_width")})
        net_arch = self.policy_kwargs.get("net_arch")  # type: ignore[attr-defined]
        hidden = (_widths(net_arch, "pi") or config.hidden, _widths(net_arch, "qf") or config.critic_hidden,
                  self.skill_learner_kwargs.get(REGISTRY[self.algo].networks[0]) or config.phi_hidden)
        exact = hidden == (config.hidden, config.critic_hidden, config.phi_hidden)
        check_memory(config, raw, self.action_space, str(self.device),  # type: ignore[attr-defined]
                     None if exact else hidden)

    # --- saving, loading, exporting ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | pathlib.Path | io.BufferedIOBase, env: GymEnv | str | None = None, **kwargs: Any):
        """SB3's ``load``, for a model saved by this algorithm on this backbone. ``env`` may also be a Gymnasium
        environment or id: it is made as the saved model's was (episode length, normaliser, skill space).

        A saved model is trusted input: SB3 unpickles parts of the zip (classes, spaces), which can run code; load
        only files you made or trust. Other parameters: SB3's ``BaseAlgorithm.load``.

        :raises ConfigError: for a zip that is not a model of this algorithm on this backbone (a plain SB3 model,
            another algorithm's, or the same algorithm's on another backbone), naming the class that loads it.
        """
        data = cls._check_saved(path)
        if "device" in kwargs:
            resolve_device(kwargs["device"])
        if env is not None and not isinstance(env, VecEnv):
            settings = {"skill_dim": int(data["skill_dim"]), "discrete_skills": bool(data["discrete_skills"]),
                        "episode_steps": data.get("episode_steps"), "normalizer": data.get("normalizer", "none"),
                        "normalizer_stats": data.get("normalizer_stats"), "env_kwargs": data.get("env_kwargs") or {},
                        "n_envs": data.get("n_envs", 1), "seed": data.get("seed")}
            env = cls._training_env(env, settings, cls.learner_class.skill_prior)
        return super().load(path, env=env, **kwargs)  # type: ignore[misc]

    @classmethod
    def _check_saved(cls, path: str | pathlib.Path | io.BufferedIOBase) -> dict[str, Any]:
        """The saved model's data, after checking that this class is the one that loads it."""
        data = _saved_data(path)
        learner = data.get("skill_learner_class")
        if "skill_dim" not in data or not isinstance(learner, type):
            raise ConfigError(f"{path} is not a skill-discovery model of metra-gym (it has no skill learner); a plain "
                              "SB3 model loads with its own class, e.g. stable_baselines3.SAC.load")
        if learner is not cls.learner_class:
            owner = next((algo for algo in REGISTRY if learner.__module__.startswith(algorithm_module(algo))), None)
            which = owner.upper() if owner else f"the algorithm of {learner.__name__}"
            raise ConfigError(f"{path} is a model of {which} (skill learner {learner.__name__}), not of {cls.algo.upper()}; "
                              f"load it with {which}.load" if owner else
                              f"{path} is a model of {which}, not of {cls.algo.upper()}; load it with that class")
        policy = data.get("policy_class")
        if policy not in cls.policy_aliases.values():  # type: ignore[attr-defined]
            backbone = next((name for name, base in BACKBONE_CLASSES.items() if policy in base.policy_aliases.values()),
                            None)
            if backbone is None:
                raise ConfigError(f"{path} was saved with the policy {getattr(policy, '__name__', policy)}, which "
                                  f"{cls.__name__} does not have")
            raise ConfigError(f"{path} was saved on backbone {backbone}, and {cls.__name__} runs on "
                              f"{cls.backbone_name()}; load it with {cls.algo.upper()}.on_backbone({backbone!r}).load")
        return data

    def export_skills(self, out_dir: str | pathlib.Path, force: bool = False) -> pathlib.Path:
        """Write the skill policy (and phi, for METRA and LSD) as a pickle-free skill checkpoint folder
        (``config.json``, ``model.safetensors``, ``README.md``) for :class:`metra_gym.SkillPolicy` and
        :class:`metra_gym.SkillEnv`. The environment recorded is the model's (its id, ``gym.make`` keywords and
        observation normaliser).

        :param out_dir: the folder to write (atomically).
        :param force: replace a non-empty ``out_dir``.
        """
        from pretrain.algorithms.common.skill_export import export_skills

        return export_skills(self, out_dir, force=force)


def _param_docs(docstring: str) -> dict[str, str]:
    """The ``:param name: text`` entries of a docstring (continuation lines joined)."""
    docs: dict[str, str] = {}
    name = None
    for line in docstring.splitlines():
        if line.startswith(":param "):
            name, text = line[len(":param "):].split(":", 1)
            docs[name] = text.strip()
        elif name is not None and line.startswith(" ") and line.strip():
            docs[name] += " " + line.strip()
        else:
            name = None
    return docs


def _learner_parameters(learner_class: type) -> dict[str, inspect.Parameter]:
    """The hyperparameters of a skill learner's ``__init__`` (without those the backbone fills in)."""
    return {name: parameter for name, parameter in inspect.signature(learner_class.__init__).parameters.items()
            if name not in _LEARNER_SHAPE_ARGS}


@functools.cache
def _on_backbone(algo: str, name: str, module: str, learner_class: type, backbone: str) -> type[SkillAlgorithm]:
    """One class per (algorithm, backbone), made once, e.g. ``METRACrossQ``."""
    base = BACKBONE_CLASSES[backbone]
    suffix = base.__name__.removeprefix("Skill")
    doc = f"{name} on {suffix} ({base.__name__})."
    return type(f"{name}{suffix}", (SkillAlgorithm, base), {"algo": algo, "learner_class": learner_class,
                                                             "__doc__": doc, "__module__": module})
