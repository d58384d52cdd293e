"""Export a trained run into the pickle-free skill checkpoint that :mod:`metra_gym` loads, with a model card."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from huggingface_hub import ModelCard
from huggingface_hub.repocard import metadata_eval_result
from safetensors.torch import save
from sb3_contrib.common.torch_layers import BatchRenorm

import metra_gym
from metra_gym.networks import PhiNetwork, SkillActor, pixel_encoder
from metra_gym.skill_checkpoint.format import CARD, CONFIG, FORMAT_VERSION, PIXELS_KEY, POSTERIOR_KEY, WEIGHTS
from metra_gym.skill_priors import DESCRIPTIONS, UNIT
from pretrain.algorithms import skill_prior
from pretrain.algorithms.common.pixel_encoder import image_layout
from pretrain.project_paths import project_path
from pretrain.run.callbacks import TRAINING_TASK_KEYS
from pretrain.run.config import FITTED, ConfigError, PretrainConfig
from pretrain.run.env_wrappers import NormalizeObservationPreset
from pretrain.run.envs import config_normalizer, import_env_module, with_fitted_normalizer
from pretrain.run.model import algorithm_class, encoder_channels
from pretrain.run.run_config import RESUMABLE_KEYS, read_run_config
from pretrain.run.run_state import (
    check_config_unchanged,
    give_usual_mode,
    remove_temporaries,
    run_state_dir,
    temporary_prefix,
    verify_files,
)

# SB3's SAC Actor -> metra_gym.networks.SkillActor, for any number of hidden layers (and a pixel run's CNN)
_ACTOR_PREFIXES = {"latent_pi.": "latent.", "mu.": "mu.", "log_std.": "log_std.",
                   "features_extractor.encoder.": "encoder."}


def skill_env_id(env_id: str) -> str | None:
    """The registered skill-level id whose low-level environment is ``env_id`` (metra/Ant-v0 -> AntSkills)."""
    for spec in gym.registry.values():
        if spec.entry_point == "metra_gym.skill_env:SkillEnv" and spec.kwargs.get("env") == env_id:
            return spec.id
    return None


def actor_activation(run_config: PretrainConfig) -> str:
    """The hidden activation of a backbone's actor: sb3-contrib's CrossQ policies default to ReLU, our SAC and TQC
    policies use tanh (the official METRA code's)."""
    return "relu" if run_config.backbone == "crossq" else "tanh"


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
    phi = getattr(model.skill_learner, "phi", None)  # DIAYN, DADS and CIC have none: their checkpoints hold the actor
    for key, value in (phi.state_dict().items() if phi is not None else ()):
        tensors["phi." + key] = value
    # DIAYN's q(z | s) (mean network, or logits for discrete skills): what picks a goal's skill; state skills only.
    discriminator = getattr(model.skill_learner, "discriminator", None)
    if discriminator is not None and not getattr(model, "pixels", False):
        for key, value in discriminator.mean_net.state_dict().items():
            tensors["skill_posterior.net." + key] = value
    return {k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}


def model_card(config: dict[str, Any], repo_name: str) -> ModelCard:
    """The Hub model card: RL Zoo-style tags, a ``model-index`` result (held-out coverage when measured) and what a
    user needs to pin what they got (run, steps, hours, held-out coverage, zero-shot distance)."""
    provenance = config["provenance"]
    held_out, goals = provenance.get("held_out_coverage"), provenance.get("zero_shot")
    metric = held_out["policy_coverage"] if held_out else provenance.get("policy_coverage")
    metadata = {
        "library_name": "metra-gym",
        "tags": [config["env_id"], "reinforcement-learning", "stable-baselines3",
                 str(provenance.get("config", {}).get("algo", "metra")), "skill-discovery",
                 "deep-reinforcement-learning"],
    }
    if metric is not None:  # an untrained baseline has no measured result
        metadata.update(metadata_eval_result(
            model_pretty_name=repo_name, task_pretty_name="reinforcement-learning", task_id="reinforcement-learning",
            metrics_pretty_name="policy state coverage (1 m bins, 48 skills" + (", held out)" if held_out else ")"),
            metrics_id="policy_coverage", metrics_value=metric, dataset_pretty_name=config["env_id"],
            dataset_id=config["env_id"]))
    prior = DESCRIPTIONS[config.get("skill_prior", UNIT)]
    skills = f"{config['skill_dim']} {'discrete (one-hot)' if config['discrete_skills'] else f'continuous ({prior})'}"
    algo = str(provenance.get("config", {}).get("algo", "metra")).upper()
    epochs = f" ({provenance['epochs']} epochs)" if provenance.get("epochs") is not None else ""
    hours = provenance.get("wall_clock_h")
    rows = [("run", provenance.get("run")),
            ("env steps", f"{provenance.get('env_steps', 0):,}{epochs}"),
            ("wall-clock training time (runs sharing the machine take longer)",
             f"{hours} h on {provenance.get('machine')}" if hours is not None else None),
            ("seed", provenance.get("seed")),
            ("policy coverage, training evaluation (48 skills, 1 m bins)", provenance.get("policy_coverage"))]
    rows = [(name, value) for name, value in rows if value is not None]
    if held_out:
        rows.append((f"policy coverage, held out (48 skills drawn with seed {held_out['seed']}, resets seeded "
                     f"{held_out['seed']} + i)", held_out["policy_coverage"]))
    if goals:
        rows.append((f"zero-shot goal reaching, {goals['n_goals']} goals (seed {goals['seed']}): mean final distance "
                     f"(95 % interval); untrained", f"{goals['mean']:.1f} m ({goals['ci95'][0]:.1f}-"
                     f"{goals['ci95'][1]:.1f}); {goals.get('untrained_mean', float('nan')):.1f} m"))
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    body = f"""
# {algo} skills for {config['env_id']}

Skill policy pi(a|s,z){" and representation phi(s)" if config.get("phi_hidden") else ""} trained with {algo} by
metra-gym ({provenance.get('algorithm')}). Skills: {skills}.

| | |
|---|---|
{table}

Training command: `{provenance.get('command')}`

## Usage

```python
{usage_snippet(config)}
```

Files: `{WEIGHTS}` (actor and phi, float32, no pickle), `{CONFIG}` (environment, normaliser, network shape, the
sha256 of the weights, training configuration and provenance).
"""
    return ModelCard("---\n" + _yaml(metadata) + "---\n" + body)


def usage_snippet(config: dict[str, Any], checkpoint: str = "hf://ORG/NAME") -> str:
    """The Python lines that run these skills: the registered skill-level id of the environment when there is one,
    else :class:`metra_gym.SkillEnv` around ``gym.make`` of the environment with its keywords."""
    lines = ["import gymnasium as gym, metra_gym"]
    env_id, env_kwargs = config["env_id"], config.get("env_kwargs") or {}
    if config.get("skill_env_id"):
        lines.append(f'env = gym.make("{config["skill_env_id"]}", checkpoint="{checkpoint}"'
                     + (f", env_kwargs={env_kwargs!r}" if env_kwargs else "") + ")")
    else:
        if ":" in env_id:
            lines.append(f"# gym.make imports {env_id.split(':')[0]!r}, the package that registers the environment")
        arguments = "".join(f", {key}={value!r}" for key, value in env_kwargs.items())
        lines.append(f'env = metra_gym.SkillEnv(gym.make("{env_id}"{arguments}), checkpoint="{checkpoint}")')
    lines.append(f'policy = metra_gym.SkillPolicy.from_pretrained("{checkpoint}")')
    return "\n".join(lines)


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def export_run(run_dir: str | Path, out_dir: str | Path, force: bool = False, command: str | None = None,
               machine: str = "2-core CPU, no GPU", extra_provenance: dict[str, Any] | None = None,
               held_out: str | Path | None = None, goals: str | Path | None = None) -> Path:
    """Write ``out_dir`` (config.json, model.safetensors, README.md) from a run's latest run state; atomic.

    ``held_out`` and ``goals`` are the ``coverage.json`` of ``metra-pretrain evaluate`` and the
    ``goal_reaching.json`` of ``metra-pretrain goal-eval`` of the same networks: their numbers go into the
    provenance and the card."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    folder = run_state_dir(run_dir, recover=False)  # the run may still be training: move nothing
    _check_out_dir(out_dir, force)
    run_config = read_run_config(run_dir)
    state = verify_files(folder)
    check_config_unchanged(state, run_config.to_dict(), run_dir, RESUMABLE_KEYS)  # the networks' shapes come from it
    model = algorithm_class(run_config).load(folder / "model.zip", device="cpu")
    history_path = run_dir / "eval" / "coverage.json"
    history = json.loads(history_path.read_text()) if history_path.is_file() else []
    last_eval = next((row for row in reversed(history) if row["epoch"] <= state["epoch"]), {})
    provenance = {
        "run": run_dir.name,
        "env_steps": int(state["num_timesteps"]),
        "epochs": int(state["epoch"]),
        "policy_coverage": last_eval.get("policy_coverage"),
        "coverage_epoch": last_eval.get("epoch"),
        "wall_clock_h": round(float(state.get("wall_clock_s", 0.0)) / 3600, 2),
        "machine": machine,
        "command": command or shlex.join(["metra-pretrain", "train", "--config", "...", "--run-dir",
                                          project_path(run_dir)]),
        # Environments with tasks (Kitchen): the run's queue and total task coverage at that evaluation.
        **({"training": {key: last_eval[key] for key in TRAINING_TASK_KEYS}}
           if "queue_tasks_achieved" in last_eval else {}),
        **(extra_provenance or {}),
        **measured_provenance(held_out, goals),
    }
    return export_model(model, run_config, out_dir, provenance)


def measured_provenance(held_out: str | Path | None, goals: str | Path | None) -> dict[str, Any]:
    """Held-out coverage and zero-shot results of evaluation files, for a checkpoint's provenance."""
    result: dict[str, Any] = {}
    try:
        if held_out is not None:
            data = json.loads(Path(held_out).read_text())
            result["held_out_coverage"] = {k: data[k] for k in ("policy_coverage", "n_skills", "steps", "seed")}
        if goals is not None:
            data = json.loads(Path(goals).read_text())
            result["zero_shot"] = {"n_goals": data["n_goals"], "seed": data["seed"], "goal_range": data["goal_range"],
                                   "mean": data["trained"]["mean"], "ci95": data["trained"]["ci95"],
                                   "untrained_mean": data.get("untrained", {}).get("mean")}
    except (OSError, ValueError, KeyError) as error:
        raise ConfigError(f"cannot read the evaluation file ({type(error).__name__}: {error}); give the coverage.json "
                          "of `metra-pretrain evaluate` and the goal_reaching.json of `metra-pretrain goal-eval`") from None
    return result


def export_model(model, run_config: PretrainConfig, out_dir: Path, provenance: dict[str, Any]) -> Path:
    """Write a model's skill policy and phi as a skill checkpoint folder (atomically). The networks' hidden widths
    are read from the weights, so any MLP the model was built with is recorded as it is."""
    pixels = None
    if getattr(model, "pixels", False):
        venv = model.get_env()  # a model loaded from a run state has none: build one environment for its renderer
        env = venv.unwrapped.envs[0] if venv is not None else gym.make(run_config.env_id, **run_config.env_kwargs)
        c, h, w, _ = image_layout(model.observation_space["pixels"])
        pixels = pixels_entry(run_config, (h, w, c), env)
        if venv is None:
            env.close()
    tensors = skill_tensors(model)
    config = checkpoint_config(run_config, model.obs_dim, model.action_space.low, model.action_space.high,
                               provenance, pixels)
    config["actor_hidden"] = hidden_widths(tensors, "actor.latent.")
    if config["phi_hidden"] is not None:
        config["phi_hidden"] = hidden_widths(tensors, "phi.net.")
    if config.get(POSTERIOR_KEY) is not None:
        config[POSTERIOR_KEY] = hidden_widths(tensors, "skill_posterior.net.")
    return write_checkpoint(tensors, config, out_dir)


def hidden_widths(tensors: dict[str, th.Tensor], prefix: str) -> list[int]:
    """The hidden widths of an MLP's weights under ``prefix`` (``actor.latent.``: each layer of the latent is hidden;
    ``phi.net.``: the last layer is phi's output)."""
    weights = sorted((int(k[len(prefix):].split(".")[0]), v) for k, v in tensors.items()
                     if k.startswith(prefix) and k.endswith(".weight"))
    widths = [int(w.shape[0]) for _, w in weights]
    return widths if prefix == "actor.latent." else widths[:-1]


def export_skills(model, out_dir: str | Path, force: bool = False) -> Path:
    """Write the skills of a model built or loaded in Python (with its environment) as a skill checkpoint folder;
    what :meth:`pretrain.algorithms.common.algorithm.SkillAlgorithm.export_skills` calls. Its provenance records
    the model's hyperparameters (``config``: those a training config also has; ``skill_learner_kwargs``)."""
    out_dir = Path(out_dir)
    _check_out_dir(out_dir, force)
    run_config, known = model_config(model)
    provenance = {"run": None, "env_steps": int(model.num_timesteps), "epochs": None, "policy_coverage": None,
                  "wall_clock_h": None, "machine": "-", "seed": model.seed,
                  "command": f"{type(model).__name__}(...).learn(...) (Python API)", "config": known,
                  "skill_learner_kwargs": model.skill_learner_kwargs}
    return export_model(model, run_config, out_dir, provenance)


def model_config(model) -> tuple[PretrainConfig, dict[str, Any]]:
    """A training config describing a model and its environment, and the keys of it that the model says exactly
    (the rest keep their defaults).

    :raises ConfigError: for a model without an environment (loaded without one).
    """
    venv = model.get_env()
    if venv is None:
        raise ConfigError(f"the {type(model).__name__} model has no environment, which the skill checkpoint records; "
                          "load it with its environment: METRA.load(path, env=...)")
    spec = venv.get_attr("spec", [0])[0]
    if spec is None and getattr(model, "env_id", None) is None:
        raise ConfigError("the model's environment was not made with gym.make, so the skill checkpoint cannot name "
                          "it; build the model from an id or a gym.make environment")
    known: dict[str, Any] = {
        "algo": model.algo, "backbone": model.backbone_name(),
        "env_id": getattr(model, "env_id", None) or spec.id,
        "env_kwargs": {k: v for k, v in (spec.kwargs if spec is not None else {}).items() if k != "render_mode"},
        "skill_dim": model.skill_dim, "discrete_skills": model.discrete_skills, "n_envs": venv.num_envs,
        "episode_steps": (spec.max_episode_steps if spec is not None and spec.max_episode_steps
                          else model.train_freq.frequency),
        "batch_size": model.batch_size, "buffer_size": model.buffer_size, "learning_starts": model.learning_starts,
        "gamma": model.gamma, "gradient_steps": model.gradient_steps, "init": model.init,
        "timeout_done": model.timeout_done, "random_warmup": model.random_warmup, "normalizer": "none",
    }
    if venv.env_is_wrapped(NormalizeObservationPreset, [0])[0]:
        known["normalizer"] = venv.get_attr("normalizer_name", [0])[0]
        if known["normalizer"] == FITTED:
            known["normalizer_stats"] = venv.get_attr("normalizer", [0])[0].to_dict()
    for key in ("learning_rate", "tau", "alpha_learning_rate"):
        if isinstance(getattr(model, key, None), float):
            known[key] = getattr(model, key)
    if isinstance(model.seed, int):
        known["seed"] = model.seed
    net_arch = model.policy_kwargs.get("net_arch")
    actor, critic = (net_arch["pi"], net_arch["qf"]) if isinstance(net_arch, dict) else (net_arch, net_arch)
    learner = next((v for k, v in model.skill_learner_kwargs.items() if k.endswith("_net_arch")), None)
    if actor and critic and len(set(actor)) == 1 and len(set(critic)) == 1 and len(actor) == len(critic):
        known.update(net_width=actor[0], net_layers=len(actor), critic_width=critic[0])
        if learner and len(set(learner)) == 1 and len(learner) == len(actor):
            known["phi_width"] = learner[0]
    return PretrainConfig(**known), known


def pixels_entry(run_config: PretrainConfig, shape: tuple[int, int, int], env: gym.Env) -> dict[str, Any]:
    """The ``pixels`` entry of a pixel checkpoint's config.json: the stacked frames' ``(H, W, C)``, the CNN's
    channels, and the renderer of the environment's frames (``env.unwrapped.renderer``: cheap or not, frame size;
    null for an environment without one), so that the skill env draws the frames the skills were trained on."""
    return {"shape": [int(v) for v in shape], "encoder_channels": list(encoder_channels(run_config)),
            "renderer": getattr(env.unwrapped, "renderer", None)}


def export_untrained(run_config: PretrainConfig, out_dir: str | Path, force: bool = False) -> Path:
    """A skill checkpoint of freshly initialised networks (the baseline of zero-shot and downstream results),
    built from :mod:`metra_gym.networks` with the initialisation of a new training model, without training code."""
    out_dir = Path(out_dir)
    _check_out_dir(out_dir, force)
    run_config = with_fitted_normalizer(run_config)
    import_env_module(run_config.env_id)
    env = gym.make(run_config.env_id, **run_config.env_kwargs)
    observation_space, action_space = env.observation_space, env.action_space
    image = isinstance(observation_space, gym.spaces.Box) and len(observation_space.shape) == 3
    pixels = pixels_entry(run_config, observation_space.shape, env) if image else None
    env.close()
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) not in (1, 3):
        raise ConfigError(f"skill checkpoints hold flat or (H, W, C) image observations; {run_config.env_id} with "
                          f"these env_kwargs has {observation_space} observations")
    obs_dim = int(np.prod(observation_space.shape))
    th.manual_seed(run_config.seed)
    actor = SkillActor(obs_dim, run_config.skill_dim, int(action_space.shape[0]), run_config.hidden,
                       actor_activation(run_config), encoder=pixel_encoder(pixels))
    for head in (actor.mu, actor.log_std):  # as SkillSACPolicy initialises the actor's output layers
        th.nn.init.xavier_normal_(head.weight, gain=0.1)
        th.nn.init.zeros_(head.bias)
    tensors = {f"actor.{k}": v for k, v in actor.state_dict().items()}
    if has_phi(run_config):
        phi = PhiNetwork(obs_dim, run_config.skill_dim, run_config.phi_hidden, encoder=pixel_encoder(pixels))
        tensors.update({f"phi.{k}": v for k, v in phi.state_dict().items()})
    if has_skill_posterior(run_config, pixels):
        posterior = PhiNetwork(obs_dim, run_config.skill_dim, run_config.phi_hidden)
        tensors.update({f"skill_posterior.{k}": v for k, v in posterior.state_dict().items()})
    provenance = {"run": "untrained", "env_steps": 0, "epochs": 0, "policy_coverage": None, "machine": "-",
                  "command": f"metra-pretrain export --untrained --config ... {out_dir}"}
    config = checkpoint_config(run_config, obs_dim, action_space.low, action_space.high, provenance, pixels)
    return write_checkpoint({k: v.detach().float().contiguous() for k, v in tensors.items()}, config, out_dir)


def _check_out_dir(out_dir: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} is a file; give a folder for the skill checkpoint")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise ConfigError(f"{out_dir} exists and is not empty; choose another OUT_DIR or pass --force")


def has_phi(run_config: PretrainConfig) -> bool:
    """Whether the config's algorithm learns a representation phi of states (METRA, LSD), which zero-shot goal
    reaching needs."""
    return run_config.algo in ("metra", "lsd")


def has_skill_posterior(run_config: PretrainConfig, pixels: dict[str, Any] | None) -> bool:
    """Whether the checkpoint carries q(z | s) (DIAYN's discriminator, which picks a goal's skill): DIAYN on state
    observations; its width is the discriminator's (``phi_width``, else ``net_width``)."""
    return run_config.algo == "diayn" and pixels is None


def checkpoint_config(run_config: PretrainConfig, obs_dim: int, action_low: Any, action_high: Any,
                      provenance: dict[str, Any], pixels: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``config.json`` of a skill checkpoint: what the networks need and where they came from. Its format version
    is the lowest that reads it (2 for a tanh actor on unit or one-hot skills; 3 adds ReLU actors, 4 the other
    skill priors and pixels), so that older metra-gym versions load what they can and refuse what they would
    misread. ``pixels``: see :func:`pixels_entry` (None for state observations); a pixel checkpoint's normaliser is
    the identity, unused (its CNNs scale uint8 pixels by 1 / 255)."""
    activation = actor_activation(run_config)
    prior = UNIT if run_config.discrete_skills else skill_prior(run_config)
    posterior = has_skill_posterior(run_config, pixels)
    version = (FORMAT_VERSION if posterior else 4 if prior != UNIT or pixels is not None
               else 3 if activation != "tanh" else 2)
    normalizer_dim = 1 if pixels is not None else obs_dim
    return {
        "format_version": version,
        "env_id": run_config.env_id,
        "env_kwargs": run_config.env_kwargs,
        "skill_env_id": skill_env_id(run_config.env_id),
        "obs_dim": int(obs_dim),
        "action_dim": len(action_low),
        "action_low": [float(v) for v in action_low],
        "action_high": [float(v) for v in action_high],
        "skill_dim": run_config.skill_dim,
        "discrete_skills": run_config.discrete_skills,
        **({} if prior == UNIT else {"skill_prior": prior}),
        "actor_hidden": run_config.hidden,
        **({} if activation == "tanh" else {"actor_activation": activation}),
        "phi_hidden": run_config.phi_hidden if has_phi(run_config) else None,
        **({POSTERIOR_KEY: run_config.phi_hidden} if posterior else {}),
        "normalizer": {"name": run_config.normalizer, **config_normalizer(run_config, normalizer_dim).to_dict()},
        **({} if pixels is None else {PIXELS_KEY: pixels}),
        "provenance": {
            "algorithm": f"{run_config.algo.upper()} on {run_config.backbone.upper()} (metra-gym)",
            "package_version": metra_gym.__version__,
            "seed": run_config.seed,
            "config": run_config.to_dict(),
            **provenance,  # a model built in Python records the config keys it says exactly
        },
    }


def write_checkpoint(tensors: dict[str, th.Tensor], config: dict[str, Any], out_dir: Path) -> Path:
    """Write a checkpoint folder atomically (temporary folder renamed); config.json records the weights' sha256.

    A failed write (a full disk: an ``OSError``) leaves nothing behind, and the temporary folders of an earlier
    export that was killed are removed first."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(out_dir), dir=out_dir.parent))
    try:
        # Serialised in memory, then written by Python: a full disk is an OSError (safetensors' own writer reports
        # it as a SafetensorError), and the bytes hashed are the bytes written.
        weights = save(tensors, metadata={"format": "metra-gym"})
        (tmp / WEIGHTS).write_bytes(weights)
        config = {**config, "weights_sha256": hashlib.sha256(weights).hexdigest()}
        (tmp / CONFIG).write_text(json.dumps(config, indent=1))
        model_card(config, out_dir.name).save(tmp / CARD)
        give_usual_mode(tmp)  # mkdtemp makes it private; a checkpoint is meant to be shared
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
