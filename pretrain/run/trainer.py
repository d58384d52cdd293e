"""One METRA pretraining run: environments, model, callbacks, checkpoints and resume, in a run folder.

Run folder layout::

    RUN_DIR/config.yaml                      the resolved configuration
    RUN_DIR/run_state/latest/                model.zip, replay buffer (replay_buffer.pkl + replay.*.npy),
                                             coverage.npz, state.json
    RUN_DIR/eval/coverage.csv|json           one row per evaluation
    RUN_DIR/eval/trajectories_epoch_*.png    x-y paths of the evaluation skills
    RUN_DIR/tb/                              TensorBoard scalars
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch as th
import yaml
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.vec_env import VecEnv

import metra_gym  # noqa: F401  (registers the metra/ ids)
from pretrain import algorithms
from pretrain.algorithms.common.algorithm import SkillAlgorithm
from pretrain.algorithms.common.pixel_encoder import PAPER_CHANNELS, PixelFeaturesExtractor
from pretrain.evaluation.coverage import CoverageTracker, SkillRollouts
from pretrain.run.callbacks import EpochCallback, TrainingCoverage
from pretrain.run.collector import OverlappedCollector
from pretrain.run.config import ConfigError, PretrainConfig, build_config, without_other_algorithms
from pretrain.run.env_wrappers import NormalizeObservationPreset, SkillConditioned
from pretrain.run.envs import config_normalizer, probe_env, raw_env_factory, with_fitted_normalizer
from pretrain.run.memory import check_memory
from pretrain.run.pixel_replay import FrameStackReplayBuffer
from pretrain.run.run_state import (
    RunFolderLock,
    check_config_unchanged,
    discard_unsaved_state,
    has_saved_state,
    load_run_state,
    recorded_config,
    run_state_dir,
    save_run_state,
    verify_files,
)
from pretrain.run.signals import StopOnSignal
from pretrain.run.vec_env import NoCopyDummyVecEnv


def env_factory(config: PretrainConfig) -> Callable[[], gym.Env]:
    """A function building one normalised environment of the config (raises ConfigError for an environment that
    cannot be trained on). ``info["coordinates"]`` is there when the environment or the config's ``coordinates``
    give it; without it training runs without coverage metrics."""
    space = probe_env(config)
    normalizer = None if config.normalizer == "none" else config_normalizer(config, space.shape[0])
    raw = raw_env_factory(config)

    def make() -> gym.Env:
        env = raw()
        return env if normalizer is None else NormalizeObservationPreset(env, normalizer)

    return make


def training_env(config: PretrainConfig, make: Callable[[], gym.Env]) -> VecEnv:
    """``n_envs`` skill-conditioned copies in one process (subprocesses are slower on 2 cores)."""
    prior = algorithms.skill_prior(config)  # the algorithm's prior of continuous skills

    def conditioned() -> gym.Env:
        return SkillConditioned(make(), config.skill_dim, config.discrete_skills, prior)

    return NoCopyDummyVecEnv([conditioned] * config.n_envs)


def algorithm_class(config: PretrainConfig) -> type[SkillAlgorithm]:
    """The SB3 class of a config: its algorithm on its backbone (``METRA`` for algo=metra, backbone=sac)."""
    return algorithms.algorithm_class(config.algo, config.backbone)


def encoder_channels(config: PretrainConfig) -> tuple[int, ...]:
    """The output channels of a pixel run's CNN convolutions (the paper's unless the config sets them)."""
    return tuple(config.encoder_channels or PAPER_CHANNELS)


def pixel_settings(config: PretrainConfig, venv: VecEnv) -> dict[str, Any]:
    """What a pixel run changes: the paper's CNN as the features extractor of the actor and of each Q head (every one
    its own, as in the official agent: with phi's, four CNNs), and the replay buffer that stores each frame once.
    Empty for flat observations."""
    if not isinstance(venv.observation_space, gym.spaces.Dict):
        return {}
    for key, supported in (("algo", "metra"), ("backbone", "sac"), ("collector", "sequential")):
        if getattr(config, key) != supported:
            raise ConfigError(f"pixel observations ({config.env_id}) need {key}={supported}; got {getattr(config, key)}")
    image = venv.observation_space["pixels"]  # channels-last, as the environment renders
    channels = encoder_channels(config)
    encoder = {"in_channels": int(image.shape[2]), "image_size": int(image.shape[0]),
               "image_width": int(image.shape[1]), "channels": channels}
    return {"phi_encoder": encoder, "replay_buffer_class": FrameStackReplayBuffer,
            "policy_kwargs": {"features_extractor_class": PixelFeaturesExtractor,
                              "features_extractor_kwargs": {"channels": channels},
                              "share_features_extractor": False, "features_extractor_per_q": True}}


def build_model(config: PretrainConfig, venv: VecEnv, run_dir: Path) -> SkillAlgorithm:
    """A new model of the config's algorithm on its backbone, built as a user's script builds it (the class with the
    config's keywords), plus the pixel settings and logging to ``run_dir/tb``."""
    cls = algorithm_class(config)
    kwargs = cls.config_kwargs(config)
    pixels = pixel_settings(config, venv)
    if pixels:
        kwargs["skill_learner_kwargs"] = {**kwargs["skill_learner_kwargs"], "phi_encoder": pixels["phi_encoder"]}
        kwargs["policy_kwargs"] = {**kwargs["policy_kwargs"], **pixels["policy_kwargs"]}
        kwargs["replay_buffer_class"] = pixels["replay_buffer_class"]
    model = cls("MultiInputPolicy" if pixels else "MlpPolicy", venv, tensorboard_log=str(run_dir / "tb"), **kwargs)
    model.env_id = config.env_id
    return model


def no_coverage_note(config: PretrainConfig) -> str:
    """Why a run's coverage columns are empty: its environment gives no position."""
    return (f"no coverage: {config.env_id} puts no info['coordinates'] and the config names no coordinates "
            "(observation indices, e.g. [0, 1], or info keys, e.g. [x_position, y_position])")


def save_config(config: PretrainConfig, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))


@dataclass
class TrainResult:
    """How a call of :func:`train` ended: the evaluation history, the last epoch saved or reached, and the name of
    the signal that stopped it early (None when it reached ``epochs``)."""

    history: list[dict[str, float]]
    epoch: int
    stopped_by: str | None = None


# Keys a resumed run may change; every other key is baked into the saved model, buffer or environments.
RESUMABLE_KEYS = frozenset({"epochs", "eval_every", "eval_skills", "save_every", "snapshot_every",
                            "save_replay_buffer", "torch_threads", "device", "learning_rate"})


def read_run_config(run_dir: Path, overrides: dict[str, Any] | None = None) -> PretrainConfig:
    """The config of an existing run, with the overrides a resumed run may apply."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run folder: {path} is missing")
    try:
        saved = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid YAML ({str(error).splitlines()[0]}); restore it, or start a new "
                          "--run-dir") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{path} must be a mapping of config keys to values, got {type(saved).__name__}; "
                          "restore it, or start a new --run-dir")
    fixed = sorted(k for k, v in (overrides or {}).items() if k not in RESUMABLE_KEYS and saved.get(k, v) != v)
    if fixed:
        raise ConfigError(f"cannot change {', '.join(fixed)} when resuming (the saved model depends on it); "
                          f"a resumed run may change {', '.join(sorted(RESUMABLE_KEYS))}, or start a new --run-dir")
    if has_saved_state(run_dir):  # lists the other algorithms' keys at the defaults of the metra-gym that saved it
        saved = without_other_algorithms(saved, recorded_config(run_dir))
    return build_config({**saved, **(overrides or {})})


def set_learning_rate(model: SkillAlgorithm, learning_rate: float) -> None:
    """Apply a (resumed) run's learning rate to the networks' optimisers: the backbone's through its schedule,
    the learner's through its own rule (METRA: phi follows, lambda keeps its rate)."""
    model.learning_rate = learning_rate
    model._setup_lr_schedule()
    model.skill_learner.set_learning_rate(learning_rate)


def attach_collector(model: SkillAlgorithm, config: PretrainConfig) -> None:
    """Give the model an overlapped collector when the config asks for one (sequential: SB3's own loop)."""
    if config.collector == "overlapped":
        model.collector = OverlappedCollector(config, model.actor, config.collector_workers)


def resolve_device(config: PretrainConfig) -> str:
    """The torch device of a config, refusing one that does not exist here instead of silently using the CPU."""
    device = config.device
    try:
        resolved = th.device(device if device != "auto" else ("cuda" if th.cuda.is_available() else "cpu"))
    except RuntimeError:
        raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}") from None
    if resolved.type == "cuda" and not th.cuda.is_available():
        raise ConfigError(f"device={device!r} but this machine has no CUDA GPU; use device=cpu")
    if resolved.type == "cuda" and (resolved.index or 0) >= th.cuda.device_count():
        raise ConfigError(f"device={device!r} but this machine has {th.cuda.device_count()} CUDA device(s)")
    if resolved.type not in ("cpu", "cuda"):
        raise ConfigError(f"device must be cpu, cuda, cuda:N or auto, got {device!r}")
    return str(resolved)


def train(config: PretrainConfig, run_dir: str | Path, resume: bool = False, progress_bar: bool = False,
          verbose: int = 1, on_evaluation: Callable[[dict[str, float]], object] | None = None) -> TrainResult:
    """Train (or continue) a run until ``config.epochs``, or until SIGINT / SIGTERM asks it to stop after the
    current epoch (then the run state is saved first). ``on_evaluation(row)`` is called with every evaluation
    row (e.g. to report it to Ray Tune). Returns the evaluation history and how it ended."""
    run_dir = Path(run_dir)
    device = resolve_device(config)
    th.set_num_threads(config.torch_threads)
    config = with_fitted_normalizer(config)  # a new run's fitted normaliser, saved in its config.yaml below
    make = env_factory(config)
    probe = make()
    info = probe.reset(seed=0)[1]
    probe.close()
    tracker = CoverageTracker(n_coordinates=len(info.get("coordinates", ())))
    coverage_note = None if "coordinates" in info else no_coverage_note(config)
    check_memory(config, probe.observation_space, probe.action_space, device)  # before hours of nothing
    start_epoch, start_wall_clock = 0, 0.0
    if resume:
        run_state_dir(run_dir, recover=False, resume=True)  # the clear error for a folder without a run state
    else:
        existing = next((p for p in (run_dir, *run_dir.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            where = "it is a file" if existing == run_dir else f"{existing} is a file"
            raise ConfigError(f"--run-dir {run_dir} must be a folder for the run, but {where}; choose another path")
        if has_saved_state(run_dir):  # (a folder whose first save never finished holds nothing to resume)
            raise ConfigError(f"{run_dir} already holds a run; continue it with --resume or choose a new --run-dir")
    created = [p for p in (run_dir, *run_dir.parents) if not p.exists()]
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = None
    try:
        if not os.access(run_dir, os.W_OK):
            raise ConfigError(f"cannot write to the run folder {run_dir}; choose a writable --run-dir")
        lock = RunFolderLock(run_dir)  # held until training ends: no second process trains this folder
        if resume:
            folder = run_state_dir(run_dir)  # (moves a state left by a killed save back into place)
            check_config_unchanged(verify_files(folder), config.to_dict(), run_dir, RESUMABLE_KEYS)
        else:
            discard_unsaved_state(run_dir)  # a first save that never finished: start afresh
        venv = training_env(config, make)
        if resume:
            try:
                model = algorithm_class(config).load(folder / "model.zip", env=venv, device=device)
            except ValueError as error:  # SB3: the spaces differ (config.yaml edited, state saved before it was recorded)
                raise ConfigError(f"{run_dir / 'config.yaml'} does not fit the saved model ({error}); restore the "
                                  "values the run was started with, or start a new run") from None
            model.tensorboard_log = str(run_dir / "tb")  # the saved one is where the run folder was (moved, copied)
            attach_collector(model, config)
            state = load_run_state(folder, model, tracker)
            start_epoch, start_wall_clock = int(state["epoch"]), float(state.get("wall_clock_s", 0.0))
            set_learning_rate(model, config.learning_rate)
        else:
            model = build_model(config, venv, run_dir)
            attach_collector(model, config)
        save_config(config, run_dir)
    except BaseException:
        if lock is not None:
            lock.release()
        for folder_made in created:  # a run that never started leaves no empty folders behind
            try:
                folder_made.rmdir()
            except OSError:
                break
        raise

    rollouts = SkillRollouts(make, config.eval_skills, config.episode_steps)

    def save(epoch: int) -> None:  # called by the callback below, so `epochs` exists by then
        save_run_state(run_dir, model, tracker, epoch, config.save_replay_buffer,
                       extra={"wall_clock_s": epochs.wall_clock(), "config": config.to_dict()})

    def snapshot(epoch: int) -> None:  # a small skill checkpoint, for evaluations held out from training's
        from pretrain.export import export_model

        export_model(model, config, run_dir / "snapshots" / f"epoch_{epoch:06d}",
                     {"run": run_dir.name, "env_steps": int(model.num_timesteps), "epochs": epoch,
                      "policy_coverage": None, "wall_clock_h": round(epochs.wall_clock() / 3600, 3),
                      "command": "snapshot during training"})

    epochs = EpochCallback(run_dir, config.steps_per_epoch, rollouts, tracker, config.eval_every,
                           config.save_every, save=save, snapshot=snapshot, snapshot_every=config.snapshot_every,
                           start_epoch=start_epoch,
                           start_wall_clock=start_wall_clock, seed=config.seed, verbose=verbose,
                           on_evaluation=on_evaluation, coverage_note=coverage_note)
    remaining = config.epochs * config.steps_per_epoch - model.num_timesteps
    try:
        with StopOnSignal() as stop:
            epochs.stop_requested = stop.requested
            if remaining > 0:
                callbacks = [epochs] if coverage_note else [TrainingCoverage(tracker), epochs]
                model.learn(remaining, callback=CallbackList(callbacks),
                            tb_log_name="metra", reset_num_timesteps=not resume, progress_bar=progress_bar)
    finally:
        if model.collector is not None:
            model.collector.close()
        rollouts.close()
        venv.close()
        lock.release()
    return TrainResult(epochs.history, epochs.last_epoch, stop.signal_name)
