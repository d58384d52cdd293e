"""Reference controllers of the downstream tasks: what the skills give without a learned controller, and what
untrained skills give. Together they bound what a learned controller can be expected to reach on a task.

- ``random``: a skill drawn uniformly from the skill action space every skill step (seeded per episode);
- ``untrained``: the same over skills of freshly initialised networks (:func:`untrained_checkpoint`: the skill
  checkpoint's own training config, seeded with the run's seed, as ``metra-pretrain export --untrained`` builds it);
- ``zero_shot``: METRA's zero-shot skill towards the task's goal, ``goal_skill(s, g)``, re-computed every skill
  step; ``g`` is the current pretraining observation with its position replaced by the goal's (:func:`goal_position`);
- ``zero_shot_every_step``: the same re-computed every low-level step, as the paper's zero-shot goal reaching does
  (the skill env with K = 1 over the same 200 low-level steps);
- ``lookahead``: every skill step, simulate each of ``n_candidates`` skills for K steps from the current state
  (:meth:`metra_gym.SkillEnv.save_state`: MuJoCo's integration state and the task's own state, restored after each)
  and run the best. Best = the highest task reward over the K steps; ties, which sparse rewards make the rule (no
  candidate reaches the goal within K steps), go to the most progress (:func:`progress`: the smallest distance to
  the goal after the K steps; on the hurdles the furthest x). Candidates: every skill (discrete skills), 16 unit
  vectors evenly spread on the circle (2-d unit skills), else ``n_candidates`` draws from the prior (seeded).
  Greedy over one skill step: it does not plan two skills ahead. It knows the task's future no better than a learned
  controller: the simulations of a skill step run on random generators of their own (one seeded draw, the same for
  every candidate), so a goal the task draws within the K steps (AntMultiGoals' next goal) is an imagined one;
- ``lookahead_two``: the same planning two skill steps ahead: each candidate is scored by its best follow-up among
  the same candidates (``n_candidates ** 2`` simulations a skill step; reward over both, progress after both).
  On a task where one skill step seldom pays (HalfCheetahHurdle's bars 4 m apart) the greedy look-ahead is a low
  ceiling and this one a fairer one (benchmarks/README.md);
- ``lookahead_foresight``: the one-step look-ahead simulating on the task's own random generators, so that it sees
  the goal the task will draw next before it is shown. Not attainable by a controller that sees the current goal (on
  AntMultiGoals it scores 7.68 of 10 over 8 seeds, where ``lookahead`` scores 5.89: benchmarks/README.md), so it is
  reported and not one of the references a learned controller is held to (:data:`BEST_OF`).

:class:`LookAhead` also takes ``model_noise``: its simulations then start from the state with Gaussian noise added to
the simulator's velocities, averaged over ``samples`` draws, and the chosen skill runs from the true state. It asks
how much of the look-ahead's edge needs the exact state (``benchmarks/lookahead_noise.py``); no reference uses it.

On the hurdle task the goal is a point one hurdle spacing past the next hurdle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metra_gym.skill_priors import UNIT
from pretrain.downstream.evaluation import evaluation_seeds, run_episodes
from pretrain.downstream.protocol import DEFAULT_PROTOCOL, checkpoint_config, episode_shape, skill_env

N_CANDIDATES = 16


def goal_position(task_env: Any) -> np.ndarray:
    """The task's goal as coordinates (``task_env.coordinates()``'s shape): the goal (Ant and DMC robots: x-y;
    HalfCheetah: x), or one spacing past the next hurdle."""
    if hasattr(task_env, "hurdles"):
        return np.array([task_env.next_hurdle_x() + task_env.spacing])
    if hasattr(task_env, "goal"):
        return np.atleast_1d(np.asarray(task_env.goal, dtype=np.float64))
    raise TypeError(f"{type(task_env).__name__} has no goal: not a downstream task env")


def progress(task_env: Any) -> float:
    """Higher is closer to done: minus the distance to the goal (goal tasks), or the x reached (hurdles)."""
    if hasattr(task_env, "hurdles"):
        return float(task_env.coordinates()[0])
    return -float(np.linalg.norm(task_env.coordinates() - goal_position(task_env)))


def goal_observation(env: Any, obs: np.ndarray) -> np.ndarray:
    """The goal state for ``goal_skill``: the pretraining part of ``obs`` with the position (its first entries, as in
    every metra-gym robot's observation) replaced by the goal's."""
    task_env = env.env.unwrapped
    goal = goal_position(task_env)
    state = np.array(obs[:env.policy_obs_dim], dtype=np.float64)
    state[:len(goal)] = goal
    return state


def as_action(env: Any, z: np.ndarray) -> Any:
    """A skill as the skill env's action: the index of a one-hot (discrete), else the vector."""
    return int(np.argmax(z)) if env.policy.discrete else np.asarray(z, dtype=np.float32)


class RandomSkills:
    """A uniform draw from the skill action space every skill step."""

    def __init__(self, env: Any) -> None:
        self.space = env.action_space

    def reset(self, seed: int) -> None:
        self.space.seed(seed)

    def __call__(self, env: Any, obs: np.ndarray) -> Any:
        return self.space.sample()


class ZeroShot:
    """``goal_skill(s, g)`` towards the task's goal (module docstring)."""

    def reset(self, seed: int) -> None:
        pass

    def __call__(self, env: Any, obs: np.ndarray) -> Any:
        state = np.asarray(obs[:env.policy_obs_dim], dtype=np.float64)
        try:
            z = env.policy.goal_skill(state, goal_observation(env, obs))
        except ValueError:  # phi(g) == phi(s): at the goal already; any skill will do
            z = np.eye(env.policy.skill_dim, dtype=np.float32)[0]
        return as_action(env, z)


def best_index(scores: list[tuple[float, float]]) -> int:
    """The look-ahead's choice among scored candidates: the most task reward, ties to the most progress."""
    return max(range(len(scores)), key=lambda i: scores[i])


class LookAhead:
    """Simulate candidate skills on the env's saved state and run the best (module docstring).

    :param n_candidates: continuous skills tried per skill step (discrete: every skill).
    :param foresight: simulate on the task's own random generators (restored after each candidate), seeing the
        draws the task will make; else on generators of the skill step's own imagined future.
    :param model_noise: standard deviation of the Gaussian noise added to every velocity of the simulator (``qvel``,
        in its units) before a simulation: a model that knows the state only to within that; 0: the exact state.
    :param samples: simulations a candidate's score is the mean of (with ``model_noise`` > 0).
    :param depth: skill steps planned ahead: 1 greedy; 2 scores each candidate by its best follow-up among the same
        candidates (``n_candidates ** depth`` skill-step simulations a choice).
    """

    def __init__(self, n_candidates: int = N_CANDIDATES, foresight: bool = False, model_noise: float = 0.0,
                 samples: int = 1, depth: int = 1) -> None:
        if model_noise < 0 or samples < 1 or depth < 1:
            raise ValueError(f"need model_noise >= 0, samples >= 1 and depth >= 1, got {model_noise}, {samples} and "
                             f"{depth}")
        self.n_candidates = n_candidates
        self.depth = depth
        self.foresight = foresight
        self.model_noise = model_noise
        self.samples = samples if self.perturbs else 1  # the exact state gives the same score every time
        self.reset(0)

    @property
    def perturbs(self) -> bool:
        """Whether simulations start from a perturbed state (:meth:`perturb`; a subclass may perturb otherwise)."""
        return self.model_noise > 0

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)  # the candidates (continuous skills)
        self.futures = np.random.default_rng([seed, 1])  # the imagined futures: the candidates stay those of foresight
        self.noise = np.random.default_rng([seed, 2])  # the model's errors (``model_noise``)

    def candidates(self, env: Any) -> list[Any]:
        policy, n = env.policy, self.n_candidates
        if policy.discrete:
            return list(range(policy.skill_dim))
        if policy.skill_prior == UNIT and policy.skill_dim == 2:
            angles = 2 * np.pi * np.arange(n) / n
            return [np.array([np.cos(a), np.sin(a)], dtype=np.float32) for a in angles]
        if policy.skill_prior == UNIT:
            draws = self.rng.standard_normal((n, policy.skill_dim))
            return [(v / np.linalg.norm(v)).astype(np.float32) for v in draws]
        space = env.action_space  # the other priors: uniform over the skill action space's box
        return [self.rng.uniform(space.low, space.high).astype(np.float32) for _ in range(n)]

    def score(self, env: Any, action: Any, future: int | None = None,
              followers: list[Any] | None = None) -> tuple[float, float]:
        """(task reward over the skill, progress after it) of running ``action`` from the current state (with
        ``model_noise``: their means over ``samples`` simulations from perturbed states); ``future`` seeds the task's
        random generators for the simulation (None: the task's own). With ``depth`` > 1 the reward and progress are
        those after the best follow-up among ``followers`` (default: this skill step's candidates)."""
        if followers is None:
            followers = self.candidates(env) if self.depth > 1 else []
        state = env.save_state()
        task_env = env.env.unwrapped
        values = []
        for _ in range(self.samples):
            if future is not None:  # the snapshot holds the task's generators, so restore_state puts them back
                for name, value in list(vars(task_env).items()):
                    if isinstance(value, np.random.Generator):
                        setattr(task_env, name, np.random.default_rng(future))
            if self.perturbs:
                self.perturb(task_env)
            values.append(self.rollout(env, action, followers, self.depth - 1))
            env.restore_state(state)
        return float(np.mean([v[0] for v in values])), float(np.mean([v[1] for v in values]))

    def rollout(self, env: Any, action: Any, followers: list[Any], deeper: int) -> tuple[float, float]:
        """Run ``action``, then (``deeper`` > 0, the episode not over) the best of ``followers`` from there, each tried
        on a snapshot of the state after ``action``: (reward over them, progress after them)."""
        _, reward, terminated, truncated, _ = env.step(action)
        if deeper == 0 or terminated or truncated or not followers:
            return float(reward), progress(env.env.unwrapped)
        after = env.save_state()
        best = None
        for follower in followers:
            value = self.rollout(env, follower, followers, deeper - 1)
            env.restore_state(after)
            best = value if best is None or value > best else best  # the order of best_index
        return float(reward) + best[0], best[1]

    def perturb(self, task_env: Any) -> None:
        """Add ``model_noise`` to the simulator's velocities (the positions of bodies follow from ``mj_forward``)."""
        import mujoco

        from metra_gym.envs.snapshot import mujoco_structs

        model, data = mujoco_structs(task_env)
        data.qvel[:] += self.model_noise * self.noise.standard_normal(data.qvel.shape)
        mujoco.mj_forward(model, data)

    def evaluate(self, env: Any) -> tuple[list[Any], list[tuple[float, float]]]:
        """This skill step's candidates and their :meth:`score` (one imagined future shared by all of them)."""
        candidates = self.candidates(env)
        future = None if self.foresight else int(self.futures.integers(2**63))
        followers = candidates if self.depth > 1 else []
        return candidates, [self.score(env, action, future, followers) for action in candidates]

    def __call__(self, env: Any, obs: np.ndarray) -> Any:
        candidates, scores = self.evaluate(env)
        return candidates[best_index(scores)]


@dataclass(frozen=True)
class Reference:
    """A reference controller: which controller, over which skills, re-computed how often.

    :param controller: ``"random"``, ``"zero_shot"`` or ``"lookahead"``.
    :param untrained_skills: over freshly initialised skills (:func:`untrained_checkpoint`).
    :param every_step: choose a skill every low-level step (K = 1) over the same episode length.
    :param foresight: the look-ahead sees the task's future draws (:class:`LookAhead`).
    :param depth: skill steps the look-ahead plans ahead (:class:`LookAhead`).
    """

    controller: str
    untrained_skills: bool = False
    every_step: bool = False
    foresight: bool = False
    depth: int = 1


REFERENCES: dict[str, Reference] = {
    "random": Reference("random"),
    "untrained": Reference("random", untrained_skills=True),
    "zero_shot": Reference("zero_shot"),
    "zero_shot_every_step": Reference("zero_shot", every_step=True),
    "lookahead": Reference("lookahead"),
    "lookahead_two": Reference("lookahead", depth=2),
    "lookahead_foresight": Reference("lookahead", foresight=True),
}
# The references a learned controller is measured against for "within 20 % of the better reference": those that know
# no more of the task than the controller (not lookahead_foresight).
ZERO_SHOT = ("zero_shot", "zero_shot_every_step")  # goal_skill every skill step, every low-level step
BEST_OF = (*ZERO_SHOT, "lookahead", "lookahead_two")  # those a task has run


def reference(name: str) -> Reference:
    if name not in REFERENCES:
        raise ValueError(f"unknown reference controller {name!r}; choose one of {sorted(REFERENCES)}")
    return REFERENCES[name]


def make_controller(name: str, env: Any) -> Callable[[Any, np.ndarray], Any]:
    spec = reference(name)
    if spec.controller == "random":
        return RandomSkills(env)
    return ZeroShot() if spec.controller == "zero_shot" else LookAhead(foresight=spec.foresight, depth=spec.depth)


def untrained_checkpoint(task_name: str, seed: int, cache: Path) -> str:
    """A skill checkpoint of untrained networks shaped as the task's bundled skills (their recorded training config,
    seeded with ``seed``), written once under ``cache``."""
    from pretrain.config import build_config, without_other_algorithms
    from pretrain.export import export_untrained

    out = Path(cache) / f"{task_name}-untrained-seed={seed}"
    if not (out / "config.json").is_file():
        recorded = checkpoint_config(task_name, None)["provenance"]["config"]
        export_untrained(build_config(without_other_algorithms({**recorded, "seed": seed})), out, force=True)
    return str(out)


def reference_returns(task_name: str, name: str, seed: int, episodes: int, cache: Path,
                      checkpoint: str | None = None, protocol_name: str = DEFAULT_PROTOCOL) -> list[float]:
    """The returns of a reference controller on a seed's evaluation episodes (:func:`evaluation_seeds`).

    :param cache: where untrained skill checkpoints are written.
    :param checkpoint: the trained skills (default: the task's bundled ones).
    :param protocol_name: whose K the controller chooses skills at (:func:`episode_shape`; every-step references: 1).
    """
    spec = reference(name)
    if spec.untrained_skills:
        checkpoint = untrained_checkpoint(task_name, seed, cache)
    k, skills_per_episode = episode_shape(task_name, protocol_name)
    if spec.every_step:
        k, skills_per_episode = 1, k * skills_per_episode
    env = skill_env(task_name, checkpoint, skill_steps=k, max_episode_steps=skills_per_episode)
    controller = make_controller(name, env.unwrapped)
    try:
        return run_episodes(env, lambda obs: controller(env.unwrapped, obs), evaluation_seeds(seed, episodes),
                            on_reset=controller.reset)
    finally:
        env.close()
