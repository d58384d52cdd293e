"""Seconds per 1,600 Ant env steps (200 vec-steps of 8 envs) through SB3's DummyVecEnv and our NoCopyDummyVecEnv.

Times them interleaved (median of 5), so a busy machine slows both alike. That both step identically is
checked by ``tests/pretrain/test_vec_env.py``.

    python benchmarks/vec_env_step.py
"""

from __future__ import annotations

import time

import numpy as np
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.algorithms.common.vec_env import NoCopyDummyVecEnv
from pretrain.config import load_config
from pretrain.run.envs import env_factory


def main() -> None:
    torch.set_num_threads(1)
    config = load_config("ant")
    make = env_factory(config)
    envs = {name: cls([lambda: SkillConditioned(make(), 2, False)] * 8)
            for name, cls in (("DummyVecEnv", DummyVecEnv), ("NoCopyDummyVecEnv", NoCopyDummyVecEnv))}
    actions = np.random.default_rng(0).uniform(-1, 1, (400, 8, 8)).astype(np.float32)
    for venv in envs.values():
        venv.seed(0)
        venv.reset()
        for a in actions[:50]:  # warm-up
            venv.step(a)
    times: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(5):
        for name, venv in envs.items():
            start = time.perf_counter()
            for a in actions[:200]:
                venv.step(a)
            times[name].append(time.perf_counter() - start)
    for name, t in times.items():
        print(f"{name:18s} {np.median(t):.3f} s per 1,600 env steps (median of 5)")


if __name__ == "__main__":
    main()
