"""Overlapped collection: the next epoch's episodes are collected in worker processes while the learner runs the
current epoch's gradient steps.

Sequential (SB3's own loop): collect epoch k with policy k, then train on it, giving policy k+1.
Overlapped: while the learner trains on epoch k, the workers collect epoch k+1 with a copy of the policy taken at
the previous epoch boundary (policy k), so the data lags the learner by one epoch; the copy is synced at every
epoch boundary. On a 2-core CPU one worker steps the environments on one core while the learner uses the other;
on a many-core or GPU machine several workers split the environments (``collector_workers``).

The replay buffer gets exactly SB3's layout and counters (one slot per vec-step, ``timeouts`` for time limits).
Exact resume: the run state records what the collection in flight at the epoch boundary started from (the policy
copy and every environment's RNG state before its reset), and a resumed run collects it again.

Workers are started with ``forkserver`` (not ``fork``): a process that forks after torch has started its OpenMP
threads can deadlock in the child.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.torch_layers import FlattenExtractor
from stable_baselines3.common.type_aliases import RolloutReturn

from metra_gym.registration import TASK_SUCCESS_KEY
from pretrain.config import ConfigError, PretrainConfig, build_config
from pretrain.run.envs import env_factory, training_env

if TYPE_CHECKING:
    from pretrain.algorithms.common.algorithm import SkillAlgorithm


@dataclass
class Batch:
    """One epoch of transitions, time-major: ``obs[t, i]`` is environment i at vec-step t."""

    obs: np.ndarray
    next_obs: np.ndarray  # the true next observation (the terminal one at an episode's end)
    actions: np.ndarray  # in the policy's [-1, 1] scale, as SB3 stores them
    rewards: np.ndarray
    dones: np.ndarray
    truncated: np.ndarray  # time-limit ends (SB3's "TimeLimit.truncated")
    coordinates: np.ndarray
    tasks: np.ndarray  # task flags (info[TASK_SUCCESS_KEY], in task_names order); (steps, envs, 0) without tasks
    rngs_after: list[dict[str, Any]]  # each environment's RNG state before its last reset
    task_names: list[str]

    def infos(self, t: int) -> list[dict[str, Any]]:
        """What SB3's callbacks and replay buffer read of vec-step ``t``'s infos: positions, time-limit ends and, on
        environments with tasks, the task flags."""
        return [{"coordinates": c, "TimeLimit.truncated": bool(truncated),
                 **({TASK_SUCCESS_KEY: dict(zip(self.task_names, flags.tolist()))} if self.task_names else {})}
                for c, truncated, flags in zip(self.coordinates[t], self.truncated[t], self.tasks[t])]


# The per-step arrays of a Batch, time-major.
BATCH_ARRAYS = ("obs", "next_obs", "actions", "rewards", "dones", "truncated", "coordinates", "tasks")


def _worker(conn, config: dict[str, Any], actor_bytes: bytes, env_ids: list[int], seed: int) -> None:
    """Hold ``env_ids`` of the training environments and collect an epoch whenever asked."""
    import io

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the learner, which stops us
    th.set_num_threads(1)
    run_config = build_config({**config, "n_envs": len(env_ids)})
    venv = training_env(run_config, env_factory(run_config))
    # The workers step environments on the CPU: a learner on a GPU sends a CUDA actor, which would meet CPU observations
    # (and start CUDA in every worker). The weights of each epoch come as CPU tensors too (`collect`).
    actor = th.load(io.BytesIO(actor_bytes), map_location="cpu", weights_only=False)
    actor.set_training_mode(False)
    low, high = venv.action_space.low, venv.action_space.high
    obs = None
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:  # the learner is gone
                break
            if message[0] == "close":
                break
            _, weights, rngs, start_timesteps, learning_starts, random_warmup, total_envs, steps, epoch_seed = message
            actor.load_state_dict(weights)
            if obs is None or rngs is not None:
                if rngs is None:  # a new run: the environments' first reset is seeded as SB3 seeds a vec env
                    venv.seed(seed + env_ids[0])
                else:  # the collection a resumed run left in flight: the same resets again
                    for env, state in zip(venv.envs, rngs):
                        env.unwrapped.np_random.bit_generator.state = state
                    venv._reset_seeds()
                obs = venv.reset()
            th.manual_seed(epoch_seed)
            rng = np.random.default_rng(epoch_seed)
            record: dict[str, list[np.ndarray]] = {k: [] for k in BATCH_ARRAYS}
            task_names: list[str] = []
            for t in range(steps):
                if random_warmup and start_timesteps + t * total_envs < learning_starts:
                    scaled = rng.uniform(-1.0, 1.0, (len(env_ids), *low.shape)).astype(np.float32)
                else:
                    with th.no_grad():
                        scaled = actor(th.as_tensor(obs), deterministic=False).numpy()
                new_obs, rewards, dones, infos = venv.step(low + 0.5 * (scaled + 1.0) * (high - low))
                next_obs = new_obs.copy()
                for i, done in enumerate(dones):
                    if done:
                        next_obs[i] = infos[i]["terminal_observation"]
                record["obs"].append(obs)
                record["next_obs"].append(next_obs)
                record["actions"].append(scaled)
                record["rewards"].append(rewards)
                record["dones"].append(dones)
                record["truncated"].append(np.array([info.get("TimeLimit.truncated", False) for info in infos]))
                # An environment without coordinates (no coverage metrics) records empty positions.
                record["coordinates"].append(np.stack([info.get("coordinates", np.zeros(0)) for info in infos]))
                task_names = list(infos[0].get(TASK_SUCCESS_KEY, ()))  # environments with tasks (Kitchen)
                record["tasks"].append(np.array([[bool(info[TASK_SUCCESS_KEY][name]) for name in task_names]
                                                 for info in infos], dtype=bool).reshape(len(infos), len(task_names)))
                obs = new_obs
            conn.send(Batch(**{k: np.stack(v) for k, v in record.items()}, rngs_after=list(venv.pre_reset_rngs),
                            task_names=task_names))
    except (BrokenPipeError, ConnectionResetError):  # the learner was killed mid-epoch: no one to report to
        pass
    finally:
        venv.close()


class OverlappedCollector:
    """Collect each epoch in ``n_workers`` processes while the learner trains on the previous one.

    :param config: the run's configuration (a :class:`pretrain.config.PretrainConfig`).
    :param actor: the model's actor (copied into the workers once; its weights are sent at each epoch).
    :param n_workers: processes; ``config.n_envs`` must be a multiple of it.
    """

    def __init__(self, config, actor: th.nn.Module, n_workers: int = 1) -> None:
        import io

        if not isinstance(actor.features_extractor, FlattenExtractor):
            raise ConfigError("collector=overlapped supports flat observations; pixel runs use collector=sequential")
        self.n_envs, self.steps, self.seed = config.n_envs, config.episode_steps, config.seed
        buffer = io.BytesIO()
        th.save(actor, buffer)
        context = mp.get_context("forkserver")
        per_worker = self.n_envs // n_workers
        self._conns, self._procs = [], []
        for w in range(n_workers):
            parent, child = context.Pipe()
            env_ids = list(range(w * per_worker, (w + 1) * per_worker))
            proc = context.Process(target=_worker, args=(child, config.to_dict(), buffer.getvalue(), env_ids,
                                                          config.seed), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        # What the collection in flight started from (saved with the run state, see in_flight()).
        self._in_flight: dict[str, Any] | None = None
        self._resume: dict[str, Any] | None = None

    # --- the run state -------------------------------------------------------------------------------------

    def in_flight(self) -> dict[str, Any] | None:
        """The inputs of the collection in flight: its policy weights, start step and environment RNG states."""
        return self._in_flight

    def resume_from(self, in_flight: dict[str, Any]) -> None:
        """Make the next collection the one a saved run had in flight."""
        self._resume = in_flight

    # --- collection ----------------------------------------------------------------------------------------

    def _launch(self, model, weights: dict[str, th.Tensor], rngs: list[dict] | None, start_timesteps: int) -> None:
        epoch = start_timesteps // (self.n_envs * self.steps)
        epoch_seed = int(np.random.SeedSequence([self.seed, epoch]).generate_state(1)[0])
        per_worker = self.n_envs // len(self._conns)
        for w, conn in enumerate(self._conns):
            worker_rngs = None if rngs is None else rngs[w * per_worker:(w + 1) * per_worker]
            conn.send(("collect", weights, worker_rngs, start_timesteps, model.learning_starts, model.random_warmup,
                       self.n_envs, self.steps, epoch_seed + w))
        self._in_flight = {"weights": weights, "rngs": rngs, "start_timesteps": start_timesteps}

    def _receive(self) -> Batch:
        parts = [conn.recv() for conn in self._conns]
        fields = {k: np.concatenate([getattr(p, k) for p in parts], axis=1) for k in BATCH_ARRAYS}
        return Batch(**fields, rngs_after=[rng for p in parts for rng in p.rngs_after], task_names=parts[0].task_names)

    def collect(self, model, callback: BaseCallback) -> RolloutReturn:
        """One epoch for SB3's learn loop: receive the epoch collected in the background, start the next one with
        the current weights, and store the received one in the replay buffer (with SB3's counters and callbacks)."""
        callback.on_rollout_start()  # epoch-boundary work first (evaluation, saving the run state)
        weights = {k: v.detach().cpu().clone() for k, v in model.actor.state_dict().items()}
        if self._in_flight is None:  # the first epoch of this process
            start = self._resume or {"weights": weights, "rngs": None, "start_timesteps": model.num_timesteps}
            self._launch(model, start["weights"], start["rngs"], start["start_timesteps"])
            self._resume = None
        batch = self._receive()
        self._launch(model, weights, batch.rngs_after, model.num_timesteps + self.n_envs * self.steps)
        return self._store(model, callback, batch)

    def _store(self, model, callback: BaseCallback, batch: Batch) -> RolloutReturn:
        buffer = model.replay_buffer
        for t in range(len(batch.obs)):
            infos = batch.infos(t)
            model.num_timesteps += self.n_envs
            callback.update_locals({"infos": infos, "dones": batch.dones[t], "rewards": batch.rewards[t]})
            if not callback.on_step():  # a stop asked at the epoch boundary: nothing of this epoch is stored
                model.num_timesteps -= self.n_envs
                return RolloutReturn(0, 0, continue_training=False)
            buffer.add(batch.obs[t], batch.next_obs[t], batch.actions[t], batch.rewards[t], batch.dones[t], infos)
        model._episode_num += int(batch.dones.sum())
        callback.on_rollout_end()
        return RolloutReturn(len(batch.obs) * self.n_envs, int(batch.dones.sum()), continue_training=True)

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


def attach_collector(model: SkillAlgorithm, config: PretrainConfig) -> None:
    """Give the model an overlapped collector when the config asks for one (sequential: SB3's own loop)."""
    if config.collector == "overlapped":
        model.collector = OverlappedCollector(config, model.actor, config.collector_workers)
