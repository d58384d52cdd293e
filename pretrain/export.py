"""Export a trained run into the pickle-free skill checkpoint that :mod:`metra_gym` loads, with a model card, or
write freshly initialised networks of a configuration (the baseline of evaluations).

:func:`export_run` is a straight line: the run folder opened (:class:`pretrain.run.run_folder.RunFolder`: located,
verified, its configuration and run state read once), its model loaded, its skills written
(:func:`pretrain.algorithms.common.skill_export.export_model`, by :mod:`metra_gym.skill_checkpoint.writer`).
"""

from __future__ import annotations

import json
import shlex
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th

from metra_gym.networks import PhiNetwork, SkillActor, pixel_encoder
from metra_gym.skill_checkpoint.format import CONFIG_SHA256_KEY, FIGURES_KEY, SHA256_KEY, read_config, read_weights
from metra_gym.skill_checkpoint.writer import checked_figures, write_checkpoint
from pretrain.algorithms import algorithm_class
from pretrain.algorithms.common.skill_export import (
    actor_activation,
    check_out_dir,
    export_model,
    pixels_entry,
    skill_checkpoint_config,
)
from pretrain.algorithms.common.training_env import import_env_module
from pretrain.config import ConfigError, PretrainConfig
from pretrain.project_paths import project_path
from pretrain.run.callbacks import TRAINING_TASK_KEYS
from pretrain.run.envs import with_fitted_normalizer
from pretrain.run.run_folder import RunFolder

MACHINE = "2-core CPU, no GPU"  # what the model card says the skills were trained on, unless told otherwise


def export_run(run_dir: str | Path, out_dir: str | Path, force: bool = False, command: str | None = None,
               machine: str = MACHINE, extra_provenance: dict[str, Any] | None = None,
               held_out: str | Path | None = None, goals: str | Path | None = None,
               figures: Sequence[tuple[str | Path, str]] = ()) -> Path:
    """Write a run's skills from its newest run state as a skill checkpoint folder (config.json, model.safetensors,
    README.md), atomically. The run may still be training: nothing of it is moved or written.

    :param run_dir: the run folder (``metra-pretrain train --run-dir``).
    :param out_dir: the checkpoint folder to write.
    :param force: replace a non-empty ``out_dir``.
    :param command: the training command the model card names (default: ``metra-pretrain train`` of the folder).
    :param machine: what the run was trained on, for the card.
    :param extra_provenance: more entries of the provenance.
    :param held_out: the ``coverage.json`` of ``metra-pretrain evaluate`` of the same networks.
    :param goals: the ``goal_reaching.json`` of ``metra-pretrain goal-eval`` of the same networks.
    :param figures: ``(PNG file, caption)`` pairs for the model card (the figures of ``metra-pretrain evaluate``).
    :raises ResumeError, ConfigError: for a folder without a usable run state, or an edited or damaged one.
    :raises CheckpointError: for a figure that is not a PNG file or has no caption.
    """
    out_dir = Path(out_dir)
    checked_figures(figures)  # a bad figure is refused before the run is loaded
    run = RunFolder.open(run_dir)
    check_out_dir(out_dir, force)
    model = run.load_model(device="cpu")
    last_eval = next(reversed(run.history()), {})
    provenance = {
        "run": run.path.name,
        "env_steps": int(run.state["num_timesteps"]),
        "epochs": run.epoch,
        "policy_coverage": last_eval.get("policy_coverage"),
        "coverage_epoch": last_eval.get("epoch"),
        **({"tasks_achieved": int(last_eval["tasks_achieved"])} if "tasks_achieved" in last_eval else {}),
        "wall_clock_h": round(float(run.state.get("wall_clock_s", 0.0)) / 3600, 2),
        "machine": machine,
        "command": command or shlex.join(["metra-pretrain", "train", "--config", "...", "--run-dir",
                                          project_path(run.path)]),
        # Environments with tasks (Kitchen): the run's queue and total task coverage at that evaluation.
        **({"training": {key: last_eval[key] for key in TRAINING_TASK_KEYS}}
           if "queue_tasks_achieved" in last_eval else {}),
        **(extra_provenance or {}),
    }
    provenance.update(measured_provenance(held_out, goals, of=provenance))
    return export_model(model, run.config, out_dir, provenance, figures)


def export_checkpoint(checkpoint_dir: str | Path, out_dir: str | Path, force: bool = False,
                      command: str | None = None, held_out: str | Path | None = None,
                      goals: str | Path | None = None, machine: str = MACHINE,
                      figures: Sequence[tuple[str | Path, str]] = ()) -> Path:
    """Write a skill checkpoint (a run's snapshot, ``RUN_DIR/snapshots/epoch_*``) again with the results measured on
    those networks in its provenance and model card; the weights are copied unchanged (the same sha256), and so
    are the checkpoint's figures, unless a figure given has the same file name.

    :param checkpoint_dir: the skill checkpoint folder to copy.
    :param out_dir: the checkpoint folder to write (it may be ``checkpoint_dir`` itself, with ``force``).
    :param command: the training command the model card names (a snapshot records "snapshot during training").
    :param held_out: the ``coverage.json`` of ``metra-pretrain evaluate`` of this checkpoint.
    :param goals: the ``goal_reaching.json`` of ``metra-pretrain goal-eval`` of this checkpoint.
    :param machine: what the networks were trained on, for the card (where the checkpoint does not say).
    :param figures: ``(PNG file, caption)`` pairs for the model card, after the checkpoint's own.
    :raises CheckpointError: for a damaged checkpoint or a bad figure. :raises ConfigError: for evaluation files of
        other networks.
    """
    out_dir = Path(out_dir)
    check_out_dir(out_dir, force)  # with force, the checkpoint itself may be written again in place
    config = read_config(Path(checkpoint_dir))
    tensors = read_weights(Path(checkpoint_dir), config)
    # The checkpoint's figures in their order, a figure given under the same name in its place, then the new ones.
    given = checked_figures(figures)
    listed = {entry["file"]: (Path(checkpoint_dir) / entry["file"], entry["caption"])
              for entry in config["provenance"].get(FIGURES_KEY, [])}
    absent = [name for name, (source, _) in listed.items() if name not in given and not source.is_file()]
    if absent:  # a copy from the Hub holds the networks only
        warnings.warn(f"{checkpoint_dir} lacks the figures its model card lists ({', '.join(absent)}); the checkpoint "
                      "written leaves them out (give them again with --figure)", stacklevel=2)
    merged = [given.get(name, figure) for name, figure in listed.items() if name not in absent]
    merged += [figure for name, figure in given.items() if name not in listed]
    provenance = {"machine": machine, **config["provenance"], **({"command": command} if command else {}),
                  **measured_provenance(held_out, goals, of=config["provenance"])}
    rest = {key: value for key, value in config.items() if key not in (SHA256_KEY, CONFIG_SHA256_KEY)}
    return write_checkpoint(tensors, {**rest, "provenance": provenance}, out_dir, merged)


def measured_provenance(held_out: str | Path | None, goals: str | Path | None,
                        of: dict[str, Any] | None = None) -> dict[str, Any]:
    """Held-out coverage and zero-shot results of evaluation files, for a checkpoint's provenance. On environments
    with tasks (Kitchen) the held-out entry adds the tasks the rollouts achieved, and the zero-shot entry counts the
    tasks' goal states reached instead of distances.

    :param of: the provenance of the networks being written; an evaluation file that records another run or epoch is
        refused (``metra-pretrain evaluate`` records the checkpoint's provenance).
    """
    result: dict[str, Any] = {}
    evaluated: dict[str, Any] = {}  # the provenance the held-out evaluation recorded of what it evaluated
    try:
        if held_out is not None:
            data = json.loads(Path(held_out).read_text())
            result["held_out_coverage"] = {k: data[k] for k in ("policy_coverage", "n_skills", "steps", "seed")}
            if "tasks_achieved" in data:
                result["held_out_coverage"].update(tasks_achieved=data["tasks_achieved"], n_tasks=len(data["tasks"]),
                                                   tasks=[task for task, done in data["tasks"].items() if done])
            evaluated = dict(data.get("provenance", {}))
        if goals is not None:
            data = json.loads(Path(goals).read_text())
            trained, untrained = data["trained"], data.get("untrained", {})
            if "reached" in trained:  # the tasks' goal states (Kitchen)
                result["zero_shot"] = {"goals": data["goals"], "seed": data["seed"], "n_goals": len(trained["tasks"]),
                                       "reached": trained["reached"], "reached_any_step": trained["reached_any_step"],
                                       "untrained_reached": untrained.get("reached")}
            else:
                result["zero_shot"] = {"n_goals": data["n_goals"], "seed": data["seed"],
                                       "goal_range": data["goal_range"], "mean": trained["mean"],
                                       "ci95": trained["ci95"], "untrained_mean": untrained.get("mean")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(f"cannot read the evaluation file ({type(error).__name__}: {error}); give the coverage.json "
                          "of `metra-pretrain evaluate` and the goal_reaching.json of `metra-pretrain goal-eval`") from None
    for key in ("run", "epochs") if of is not None else ():
        if key in evaluated and evaluated[key] != of.get(key):
            raise ConfigError(f"{held_out} evaluated {key} {evaluated[key]!r}, but the checkpoint written is of {key} "
                              f"{of.get(key)!r}; evaluate this checkpoint (metra-pretrain evaluate)")
    return result


def export_untrained(run_config: PretrainConfig, out_dir: str | Path, force: bool = False,
                     figures: Sequence[tuple[str | Path, str]] = ()) -> Path:
    """A skill checkpoint of freshly initialised networks (the baseline of zero-shot and downstream results),
    built from :mod:`metra_gym.networks` with the initialisation of a new training model, without training code.

    :param figures: ``(PNG file, caption)`` pairs for the model card.
    """
    out_dir = Path(out_dir)
    checked_figures(figures)
    check_out_dir(out_dir, force)
    run_config = with_fitted_normalizer(run_config)
    import_env_module(run_config.env_id)
    env = gym.make(run_config.env_id, **run_config.env_kwargs)
    observation_space, action_space = env.observation_space, env.action_space
    image = isinstance(observation_space, gym.spaces.Box) and len(observation_space.shape) == 3
    pixels = pixels_entry(run_config.encoder_channels, observation_space.shape, env) if image else None
    env.close()
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) not in (1, 3):
        raise ConfigError(f"skill checkpoints hold flat or (H, W, C) image observations; {run_config.env_id} with "
                          f"these env_kwargs has {observation_space} observations")
    obs_dim = int(np.prod(observation_space.shape))
    learner = algorithm_class(run_config.algo, run_config.backbone).learner_class
    th.manual_seed(run_config.seed)
    actor = SkillActor(obs_dim, run_config.skill_dim, int(action_space.shape[0]), run_config.hidden,
                       actor_activation(run_config.backbone), encoder=pixel_encoder(pixels))
    for head in (actor.mu, actor.log_std):  # as SkillSACPolicy initialises the actor's output layers
        th.nn.init.xavier_normal_(head.weight, gain=0.1)
        th.nn.init.zeros_(head.bias)
    tensors = {f"actor.{k}": v for k, v in actor.state_dict().items()}
    if learner.has_phi:
        phi = PhiNetwork(obs_dim, run_config.skill_dim, run_config.phi_hidden, encoder=pixel_encoder(pixels))
        tensors.update({f"phi.{k}": v for k, v in phi.state_dict().items()})
    posterior = run_config.phi_hidden if learner.has_skill_posterior and pixels is None else None
    if posterior is not None:  # DIAYN's q(z | s), of the discriminator's width (phi_width, else net_width)
        q = PhiNetwork(obs_dim, run_config.skill_dim, posterior)
        tensors.update({f"skill_posterior.{k}": v for k, v in q.state_dict().items()})
    provenance = {"run": "untrained", "env_steps": 0, "epochs": 0, "policy_coverage": None, "machine": "-",
                  "command": f"metra-pretrain export --untrained --config ... {out_dir}"}
    config = skill_checkpoint_config(run_config, learner.skill_prior, learner.has_phi, obs_dim, action_space,
                                     provenance, pixels, skill_posterior_hidden=posterior)
    return write_checkpoint({k: v.detach().float().contiguous() for k, v in tensors.items()}, config, out_dir, figures)
