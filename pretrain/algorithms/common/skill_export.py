"""A trained model's skills as a skill checkpoint: the actor (and phi, for the learners that have one) under the
names of :class:`metra_gym.SkillPolicy`, with what they need (environment, normaliser, skill space, network shape)
and where they came from, written by :mod:`metra_gym.skill_checkpoint.writer`. What a run's snapshots, its export and
:meth:`SkillAlgorithm.export_skills` write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch as th
from sb3_contrib.common.torch_layers import BatchRenorm

from metra_gym.skill_checkpoint.writer import checkpoint_config, write_checkpoint
from pretrain.algorithms.common.normalization import NormalizeObservationPreset, observation_normalizer
from pretrain.algorithms.common.pixel_encoder import encoder_channels, image_layout
from pretrain.config import FITTED, ConfigError, PretrainConfig

# SB3's SAC Actor -> metra_gym.networks.SkillActor, for any number of hidden layers (and a pixel run's CNN)
_ACTOR_PREFIXES = {"latent_pi.": "latent.", "mu.": "mu.", "log_std.": "log_std.",
                   "features_extractor.encoder.": "encoder."}


def actor_activation(backbone: str) -> str:
    """The hidden activation of a backbone's actor: sb3-contrib's CrossQ policies default to ReLU, our SAC and TQC
    policies use tanh (the official METRA code's)."""
    return "relu" if backbone == "crossq" else "tanh"


def _folded_actor(actor: th.nn.Module) -> dict[str, th.Tensor]:
    """CrossQ's actor, ``[BRN, Linear, ReLU, BRN, Linear, ReLU, BRN]`` then the ``mu`` and ``log_std`` heads, as the
    plain ReLU MLP of :class:`SkillActor`. In eval mode (how actions are taken) a batch renormalisation is the affine
    map ``x -> a * x + c`` with ``a = scale / sqrt(ra_var + eps)`` and ``c = bias - a * ra_mean``; the linear layer
    after it absorbs it: ``W (a * x + c) + b = (W diag(a)) x + (W c + b)``."""
    pending: tuple[th.Tensor, th.Tensor] | None = None  # the affine map waiting for the next linear layer

    def absorb(linear: th.nn.Linear) -> tuple[th.Tensor, th.Tensor]:
        weight, bias = linear.weight.detach(), linear.bias.detach()
        if pending is None:
            return weight, bias
        a, c = pending
        return weight * a, bias + weight @ c

    tensors: dict[str, th.Tensor] = {}
    n_linear = 0
    for layer in actor.latent_pi:
        if isinstance(layer, BatchRenorm):
            if pending is not None:
                raise ConfigError("cannot export a CrossQ actor with two batch renormalisations in a row")
            a = 1.0 / (layer.ra_var + layer.eps).sqrt()
            c = -layer.ra_mean * a
            if layer.affine:
                a, c = layer.scale * a, layer.scale * c + layer.bias
            pending = (a.detach(), c.detach())
        elif isinstance(layer, th.nn.Linear):
            weight, bias = absorb(layer)
            tensors[f"actor.latent.{2 * n_linear}.weight"], tensors[f"actor.latent.{2 * n_linear}.bias"] = weight, bias
            n_linear, pending = n_linear + 1, None
        elif not isinstance(layer, th.nn.ReLU):
            raise ConfigError(f"cannot export a CrossQ actor with a {type(layer).__name__} layer (expected "
                              "BatchRenorm, Linear and ReLU)")
    for head in ("mu", "log_std"):
        tensors[f"actor.{head}.weight"], tensors[f"actor.{head}.bias"] = absorb(getattr(actor, head))
    return tensors


def skill_tensors(model) -> dict[str, th.Tensor]:
    """The actor and phi weights of a trained model under the names of :class:`metra_gym.SkillPolicy` (a pixel run's
    actor with its own CNN, phi with its own)."""
    if getattr(model.actor.features_extractor, "projection", None) is not None:
        raise ConfigError("cannot export a pixel actor whose features extractor projects the CNN's features "
                          "(projection_dim): metra_gym's SkillActor feeds them to its MLP directly")
    layers = list(model.actor.latent_pi)
    if any(isinstance(layer, BatchRenorm) for layer in layers):
        tensors = _folded_actor(model.actor)
    elif all(isinstance(layer, th.nn.Linear if i % 2 == 0 else th.nn.Tanh) for i, layer in enumerate(layers)):
        tensors = {}
        for key, value in model.actor.state_dict().items():
            prefix = next(p for p in _ACTOR_PREFIXES if key.startswith(p))
            tensors["actor." + _ACTOR_PREFIXES[prefix] + key[len(prefix):]] = value
    else:
        raise ConfigError(f"cannot export the actor of the {type(model).__name__} model: metra_gym's SkillActor is an "
                          "MLP with tanh hidden layers (sac and tqc) or ReLU ones with batch renormalisation (crossq), "
                          f"this one has {[type(layer).__name__ for layer in layers]}")
    learner = model.skill_learner  # DIAYN, DADS and CIC have no phi: their checkpoints hold the actor
    for key, value in (learner.phi.state_dict().items() if learner.has_phi else ()):
        tensors["phi." + key] = value
    # DIAYN's q(z | s) (mean network, or logits for discrete skills): what picks a goal's skill; state skills only.
    if learner.has_skill_posterior and not getattr(model, "pixels", False):
        for key, value in learner.discriminator.mean_net.state_dict().items():
            tensors["skill_posterior.net." + key] = value
    return {k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}


def hidden_widths(tensors: dict[str, th.Tensor], prefix: str) -> list[int]:
    """The hidden widths of an MLP's weights under ``prefix`` (``actor.latent.``: each layer of the latent is hidden;
    ``phi.net.``: the last layer is phi's output)."""
    weights = sorted((int(k[len(prefix):].split(".")[0]), v) for k, v in tensors.items()
                     if k.startswith(prefix) and k.endswith(".weight"))
    widths = [int(w.shape[0]) for _, w in weights]
    return widths if prefix == "actor.latent." else widths[:-1]


def pixels_entry(channels: list[int] | None, shape: tuple[int, int, int], env: gym.Env) -> dict[str, Any]:
    """The ``pixels`` entry of a pixel checkpoint's config.json: the stacked frames' ``(H, W, C)``, the CNN's
    channels (a config's ``encoder_channels``), and the renderer of the environment's frames
    (``env.unwrapped.renderer``: cheap or not, frame size; null for an environment without one), so that the skill env
    draws the frames the skills were trained on."""
    return {"shape": [int(v) for v in shape], "encoder_channels": list(encoder_channels(channels)),
            "renderer": getattr(env.unwrapped, "renderer", None)}


def check_out_dir(out_dir: Path, force: bool) -> None:
    """Refuse a checkpoint folder that is a file, or holds something, unless ``force``."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} is a file; give a folder for the skill checkpoint")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise ConfigError(f"{out_dir} exists and is not empty; choose another OUT_DIR or pass --force")


def skill_checkpoint_config(run_config: PretrainConfig, skill_prior: str, has_phi: bool, obs_dim: int,
                            action_space: gym.spaces.Box, provenance: dict[str, Any],
                            pixels: dict[str, Any] | None = None, actor_hidden: list[int] | None = None,
                            phi_hidden: list[int] | None = None,
                            skill_posterior_hidden: list[int] | None = None) -> dict[str, Any]:
    """The ``config.json`` of the skills of a configuration's algorithm: the networks' shape (the configuration's
    unless given), the normaliser, and the provenance with the configuration.

    :param skill_prior: the prior of the learner's continuous skills.
    :param has_phi: whether the learner has phi.
    :param pixels: see :func:`pixels_entry` (None for state observations).
    :param skill_posterior_hidden: the hidden widths of q(z | s) (DIAYN's, state skills; None: none).
    """
    normalizer = observation_normalizer(run_config.normalizer, run_config.normalizer_stats,
                                        1 if pixels is not None else obs_dim, run_config.env_id)
    return checkpoint_config(
        env_id=run_config.env_id, env_kwargs=run_config.env_kwargs, obs_dim=obs_dim, action_low=action_space.low,
        action_high=action_space.high, skill_dim=run_config.skill_dim, discrete_skills=run_config.discrete_skills,
        skill_prior=skill_prior, actor_hidden=actor_hidden or run_config.hidden,
        actor_activation=actor_activation(run_config.backbone),
        phi_hidden=(phi_hidden or run_config.phi_hidden) if has_phi else None,
        normalizer={"name": run_config.normalizer, **normalizer.to_dict()}, pixels=pixels,
        skill_posterior_hidden=skill_posterior_hidden,
        provenance={"algorithm": f"{run_config.algo.upper()} on {run_config.backbone.upper()} (metra-gym)",
                    "seed": run_config.seed, "config": run_config.to_dict(),
                    **provenance})  # a model built in Python records the config keys it says exactly


def export_model(model, run_config: PretrainConfig, out_dir: Path, provenance: dict[str, Any],
                 figures: Sequence[tuple[str | Path, str]] = ()) -> Path:
    """Write a model's skill policy (and phi) as a skill checkpoint folder (atomically). The networks' hidden widths
    are read from the weights, so any MLP the model was built with is recorded as it is.

    :param run_config: the configuration the model was trained with (or one that describes it).
    :param figures: ``(PNG file, caption)`` pairs for the model card.
    """
    pixels = None
    if getattr(model, "pixels", False):
        venv = model.get_env()  # a model loaded from a run state has none: build one environment for its renderer
        env = venv.unwrapped.envs[0] if venv is not None else gym.make(run_config.env_id, **run_config.env_kwargs)
        c, h, w, _ = image_layout(model.observation_space["pixels"])
        pixels = pixels_entry(run_config.encoder_channels, (h, w, c), env)
        if venv is None:
            env.close()
    tensors = skill_tensors(model)
    learner = model.skill_learner
    config = skill_checkpoint_config(run_config, learner.skill_prior, learner.has_phi, model.obs_dim,
                                     model.action_space, provenance, pixels,
                                     actor_hidden=hidden_widths(tensors, "actor.latent."),
                                     phi_hidden=hidden_widths(tensors, "phi.net.") if learner.has_phi else None,
                                     skill_posterior_hidden=(hidden_widths(tensors, "skill_posterior.net.")
                                                             if "skill_posterior.net.0.weight" in tensors else None))
    return write_checkpoint(tensors, config, out_dir, figures)


def export_skills(model, out_dir: str | Path, force: bool = False) -> Path:
    """Write the skills of a model built or loaded in Python (with its environment) as a skill checkpoint folder;
    what :meth:`pretrain.algorithms.common.algorithm.SkillAlgorithm.export_skills` calls. Its provenance records
    the model's hyperparameters (``config``: those a training config also has; ``skill_learner_kwargs``)."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir, force)
    run_config, known = model_config(model)
    provenance = {"run": None, "env_steps": int(model.num_timesteps), "epochs": None, "policy_coverage": None,
                  "wall_clock_h": None, "machine": "-", "seed": model.seed,
                  "command": f"{type(model).__name__}(...).learn(...) (Python API)", "config": known,
                  "skill_learner_kwargs": model.skill_learner_kwargs}
    return export_model(model, run_config, out_dir, provenance)


def model_config(model) -> tuple[PretrainConfig, dict[str, Any]]:
    """A training config describing a model and its environment, and the keys of it that the model says exactly
    (the rest keep their defaults).

    :raises ConfigError: for a model without an environment (loaded without one), or whose environment was not made
        from an id.
    """
    venv = model.get_env()
    if venv is None:
        raise ConfigError(f"the {type(model).__name__} model has no environment, which the skill checkpoint records; "
                          "load it with its environment: METRA.load(path, env=...)")
    spec = venv.get_attr("spec", [0])[0]
    env_id = getattr(model, "env_id", None) or (spec.id if spec is not None else None)
    if env_id is None:
        raise ConfigError("the model's environment was not made with gym.make, so the skill checkpoint cannot name "
                          "it; build the model from an id or a gym.make environment")
    known = model.described({**vars(model), "n_envs": venv.num_envs}, env_id)
    known["env_kwargs"] = getattr(model, "env_kwargs", None) or {
        k: v for k, v in (spec.kwargs if spec is not None else {}).items() if k != "render_mode"}
    known["episode_steps"] = (getattr(model, "episode_steps", None)
                              or (spec.max_episode_steps if spec is not None else None) or model.train_freq.frequency)
    for key in ("normalizer_stats", "normalizer_min_std"):
        known.pop(key, None)
    known["normalizer"] = "none"  # the normaliser the environment applies (a VecEnv given as it is may have its own)
    if venv.env_is_wrapped(NormalizeObservationPreset, [0])[0]:
        known["normalizer"] = venv.get_attr("normalizer_name", [0])[0]
        if known["normalizer"] == FITTED:
            known["normalizer_stats"] = venv.get_attr("normalizer", [0])[0].to_dict()
    return PretrainConfig(**known), known
