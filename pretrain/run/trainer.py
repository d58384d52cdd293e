"""One METRA pretraining run: environments, model, callbacks, checkpoints and resume, in a run folder.

Run folder layout::

    RUN_DIR/config.yaml                      the resolved configuration
    RUN_DIR/run_state/latest/                model.zip, replay_buffer.pkl, coverage.npz, state.json
    RUN_DIR/eval/coverage.csv|json           one row per evaluation
    RUN_DIR/eval/trajectories_epoch_*.png    x-y paths of the evaluation skills
    RUN_DIR/tb/                              TensorBoard scalars
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch as th
import yaml
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.vec_env import DummyVecEnv

import metra_gym  # noqa: F401  (registers the metra/ ids)
from pretrain.algorithms.metra import METRA
from pretrain.evaluation.coverage import CoverageTracker, SkillRollouts
from pretrain.run.callbacks import EpochCallback, TrainingCoverage
from pretrain.run.config import ConfigError, PretrainConfig, build_config
from pretrain.run.env_wrappers import NormalizeObservationPreset, SkillConditioned
from pretrain.run.run_state import load_run_state, run_state_dir, save_run_state
from pretrain.run.vec_env import NoCopyDummyVecEnv


def env_factory(config: PretrainConfig) -> Callable[[], gym.Env]:
    """A function building one normalised environment of the config (raises ConfigError for a bad id)."""
    if config.env_id not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("metra/"))
        raise ConfigError(f"unknown environment id {config.env_id!r}; metra-gym registers {known} "
                          "(any registered Gymnasium id with info['coordinates'] works)")

    def make() -> gym.Env:
        env = gym.make(config.env_id, max_episode_steps=config.episode_steps, **config.env_kwargs)
        return NormalizeObservationPreset(env, config.normalizer)

    try:
        probe = make()
    except (TypeError, ValueError) as error:
        raise ConfigError(f"cannot build {config.env_id!r} with this config: {error}") from None
    probe.close()
    return make


def training_env(config: PretrainConfig, make: Callable[[], gym.Env]) -> DummyVecEnv:
    """``n_envs`` skill-conditioned copies in one process (subprocesses are slower on 2 cores)."""
    def conditioned() -> gym.Env:
        return SkillConditioned(make(), config.skill_dim, config.discrete_skills)

    return NoCopyDummyVecEnv([conditioned] * config.n_envs)


def policy_kwargs(config: PretrainConfig) -> dict[str, Any]:
    """Network shape and optimiser of a config. Fused Adam: about 12 % faster per step at width 256 on CPU."""
    return {"net_arch": config.hidden, "optimizer_kwargs": {"fused": True}}


def build_model(config: PretrainConfig, venv: DummyVecEnv, run_dir: Path) -> METRA:
    return METRA(
        "MlpPolicy",
        venv,
        skill_dim=config.skill_dim,
        discrete_skills=config.discrete_skills,
        phi_net_arch=config.hidden,
        phi_learning_rate=config.learning_rate,
        dual_learning_rate=config.dual_learning_rate,
        alpha_learning_rate=config.alpha_learning_rate,
        init=config.init,
        random_warmup=config.random_warmup,
        dual_slack=config.dual_slack,
        dual_lam_init=config.dual_lam_init,
        timeout_done=config.timeout_done,
        learning_rate=config.learning_rate,
        buffer_size=config.buffer_size,
        learning_starts=config.learning_starts,
        batch_size=config.batch_size,
        tau=config.tau,
        gamma=config.gamma,
        train_freq=(config.episode_steps, "step"),
        gradient_steps=config.gradient_steps,
        ent_coef=f"auto_{config.alpha_init}" if config.learn_alpha else config.alpha_init,
        target_entropy=config.target_entropy,
        policy_kwargs=policy_kwargs(config),
        tensorboard_log=str(run_dir / "tb"),
        seed=config.seed,
        device=config.device,
    )


def save_config(config: PretrainConfig, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))


# Keys a resumed run may change; every other key is baked into the saved model, buffer or environments.
RESUMABLE_KEYS = frozenset({"epochs", "eval_every", "eval_skills", "save_every", "save_replay_buffer",
                            "torch_threads", "device", "learning_rate"})


def read_run_config(run_dir: Path, overrides: dict[str, Any] | None = None) -> PretrainConfig:
    """The config of an existing run, with the overrides a resumed run may apply."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run folder: {path} is missing")
    saved = yaml.safe_load(path.read_text())
    fixed = sorted(k for k, v in (overrides or {}).items() if k not in RESUMABLE_KEYS and saved.get(k, v) != v)
    if fixed:
        raise ConfigError(f"cannot change {', '.join(fixed)} when resuming (the saved model depends on it); "
                          f"a resumed run may change {', '.join(sorted(RESUMABLE_KEYS))}, or start a new --run-dir")
    return build_config({**saved, **(overrides or {})})


def set_learning_rate(model: METRA, learning_rate: float) -> None:
    """Apply a (resumed) run's learning rate to the networks' optimisers: SAC's through its schedule, and phi's."""
    model.learning_rate = model.phi_learning_rate = learning_rate
    model._setup_lr_schedule()
    for optimizer in (model.phi_optimizer,):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate


def train(config: PretrainConfig, run_dir: str | Path, resume: bool = False, progress_bar: bool = False,
          verbose: int = 1) -> list[dict[str, float]]:
    """Train (or continue) a run until ``config.epochs``; return its evaluation history."""
    run_dir = Path(run_dir)
    th.set_num_threads(config.torch_threads)
    make = env_factory(config)
    probe = make()
    tracker = CoverageTracker(n_coordinates=len(probe.reset(seed=0)[1]["coordinates"]))
    probe.close()
    venv = training_env(config, make)
    start_epoch, start_wall_clock = 0, 0.0
    if resume:
        ckpt = run_state_dir(run_dir)
        model = METRA.load(ckpt / "model.zip", env=venv, device=config.device)
        start_epoch = load_run_state(ckpt, model, tracker)
        set_learning_rate(model, config.learning_rate)
        start_wall_clock = json.loads((ckpt / "state.json").read_text()).get("wall_clock_s", 0.0)
    else:
        if (run_dir / "run_state").exists():
            raise ConfigError(f"{run_dir} already holds a run; continue it with --resume or choose a new --run-dir")
        model = build_model(config, venv, run_dir)
    save_config(config, run_dir)

    rollouts = SkillRollouts(make, config.eval_skills, config.episode_steps)

    def save(epoch: int) -> None:  # called by the callback below, so `epochs` exists by then
        save_run_state(run_dir, model, tracker, epoch, config.save_replay_buffer,
                        extra={"wall_clock_s": epochs.wall_clock()})

    epochs = EpochCallback(run_dir, config.steps_per_epoch, rollouts, tracker, config.eval_every,
                           config.save_every, save=save, start_epoch=start_epoch,
                           start_wall_clock=start_wall_clock, seed=config.seed, verbose=verbose)
    remaining = config.epochs * config.steps_per_epoch - model.num_timesteps
    if remaining > 0:
        model.learn(remaining, callback=CallbackList([TrainingCoverage(tracker), epochs]), tb_log_name="metra",
                    reset_num_timesteps=not resume, progress_bar=progress_bar)
    rollouts.close()
    venv.close()
    return epochs.history
