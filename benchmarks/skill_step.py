"""What a skill env's low-level step costs over the bare env's: the target is <= 1.15x (issue 41).

One thread. Per round, the same ``--steps`` low-level steps three ways, from the same seeded resets:

- ``bare``: the low-level env (``metra/Ant-v0``), stepped with the actions the skill policy chose (recorded in a
  first, untimed rollout), so that both do the same physics;
- ``skill_env``: the skill env (``metra/AntSkills-v0``: the skill policy's forward in NumPy for single
  observations, :class:`metra_gym.networks.NumpySkillActor`), time per low-level step;
- ``skill_env_torch``: the same with the torch forward (the path before issue 41), for comparison;

and the forward alone at batch 1, torch and NumPy. Rounds interleave the variants so that a busy machine slows
them alike; the medians over rounds are reported. ``--clock process`` (the default) counts this process's CPU
seconds, which other programs on a shared machine disturb far less than the wall clock.

    python benchmarks/skill_step.py --rounds 7 --steps 2000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from measurements import append_measurement

SKILL_IDS = {"metra/Ant-v0": "metra/AntSkills-v0", "metra/HalfCheetah-v0": "metra/HalfCheetahSkills-v0"}


def skill_rollout(env, steps: int, seed: int, clock) -> tuple[float, list[np.ndarray]]:
    """Seconds per low-level step of ``steps`` low-level steps of the skill env (skills drawn with ``seed``), and the
    actions its policy took (recorded by wrapping the inner env's step)."""
    inner = env.unwrapped.env
    actions: list[np.ndarray] = []
    step = inner.step

    def recording(action):
        actions.append(action)
        return step(action)

    inner.step = recording
    env.action_space.seed(seed)
    env.reset(seed=seed)
    done, start = 0, clock()
    while done < steps:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        done += info["skill_steps"]
        if terminated or truncated:
            env.reset()
    seconds = clock() - start
    inner.step = step
    return seconds / done, actions


def bare_rollout(env, actions: list[np.ndarray], seed: int, episode_steps: int, clock) -> float:
    env.reset(seed=seed)
    start = clock()
    for i, action in enumerate(actions):
        env.step(action)
        if (i + 1) % episode_steps == 0:
            env.reset()
    return (clock() - start) / len(actions)


def forward_times(policy, clock, n: int = 2000) -> dict[str, float]:
    """Microseconds per deterministic action at batch 1: torch (a (1, obs_dim) batch) and NumPy (fixed skill)."""
    obs = policy.normalizer.mean.astype(np.float64)
    z = np.eye(policy.skill_dim, dtype=np.float32)[0]
    act = policy.fixed_skill_actor(z)
    times = {}
    for name, call in (("torch", lambda: policy.act(obs[None], z)), ("numpy", lambda: act(obs))):
        call()
        start = clock()
        for _ in range(n):
            call()
        times[name] = round((clock() - start) / n * 1e6, 1)
    return times


def main() -> None:
    import gymnasium as gym

    import metra_gym  # noqa: F401
    from metra_gym.registration import EPISODE_STEPS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=sorted(SKILL_IDS), default="metra/Ant-v0")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2000, help="low-level steps per variant and round")
    parser.add_argument("--clock", choices=["wall", "process"], default="process")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/skill_step/summary.json"))
    args = parser.parse_args()
    clock = time.process_time if args.clock == "process" else time.perf_counter
    torch.set_num_threads(1)

    bare = gym.make(args.env, max_episode_steps=-1)
    skill = gym.make(SKILL_IDS[args.env])
    torch_skill = gym.make(SKILL_IDS[args.env])
    torch_skill.unwrapped.policy._numpy_actor = None  # the torch forward for single observations too
    rounds: dict[str, list[float]] = {"bare": [], "skill_env": [], "skill_env_torch": []}
    forwards: dict[str, list[float]] = {"torch": [], "numpy": []}
    for r in range(args.rounds):
        seconds, actions = skill_rollout(skill, args.steps, r, clock)
        rounds["skill_env"].append(seconds)
        rounds["skill_env_torch"].append(skill_rollout(torch_skill, args.steps, r, clock)[0])
        rounds["bare"].append(bare_rollout(bare, actions, r, EPISODE_STEPS, clock))
        for name, value in forward_times(skill.unwrapped.policy, clock).items():
            forwards[name].append(value)
        print(f"round {r}: " + ", ".join(f"{k} {v[-1] * 1e6:.0f} us" for k, v in rounds.items()), flush=True)
    median = {k: float(np.median(v)) * 1e6 for k, v in rounds.items()}
    ratio = median["skill_env"] / median["bare"]
    measurement = {
        "env": args.env, "skill_env": SKILL_IDS[args.env], "threads": 1, "clock": args.clock, "rounds": args.rounds,
        "steps": args.steps,
        "us_per_low_level_step": {k: round(v, 1) for k, v in median.items()},
        "ratio_skill_env_to_bare": round(ratio, 3),
        "ratio_torch_forward_to_bare": round(median["skill_env_torch"] / median["bare"], 3),
        "forward_us_batch1": {k: float(np.median(v)) for k, v in forwards.items()},
        "target": "skill_env / bare <= 1.15", "met": bool(ratio <= 1.15),
        "per_round_us": {k: [round(x * 1e6, 1) for x in v] for k, v in rounds.items()},
        "command": f"python benchmarks/skill_step.py --env {args.env} --rounds {args.rounds} --steps {args.steps} "
                   f"--clock {args.clock}",
    }
    print(f"median per low-level step: bare {median['bare']:.0f} us, skill env {median['skill_env']:.0f} us "
          f"({ratio:.2f}x), skill env with the torch forward {median['skill_env_torch']:.0f} us "
          f"({measurement['ratio_torch_forward_to_bare']:.2f}x); forward at batch 1: {measurement['forward_us_batch1']}")
    append_measurement(args.out, "a skill env's low-level step against the bare env's, one thread, median of "
                       "interleaved rounds (target <= 1.15x)", measurement)


if __name__ == "__main__":
    main()
