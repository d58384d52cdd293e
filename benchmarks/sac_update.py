"""What skipping the critics' weight gradients in the actor's step saves a downstream SAC update
(:class:`pretrain.downstream.protocol.LeanSAC` against Stable-Baselines3's stock ``SAC``).

The agents are the paper protocol's own (``hierarchical_agent`` for a controller, ``flat_agent`` for flat SAC);
the stock one is the same agent loaded back as a plain ``SAC``. Both draw minibatches from one replay buffer of
random transitions; per round each makes ``--updates`` updates (``train``), the rounds interleave the two so that a
busy machine slows them alike (each first in every other round), and the medians of the process's CPU milliseconds
per update are reported.

    python benchmarks/sac_update.py --rounds 7 --updates 100
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from measurements import append_measurement

ROOT = Path(__file__).resolve().parents[1]
AGENTS = (("ant_multigoals", "controller"), ("humanoid_goal", "controller"), ("humanoid_goal", "flat"))
TRANSITIONS = 5000


def per_update_ms(agent, updates: int) -> float:
    start = time.process_time()
    agent.train(gradient_steps=updates, batch_size=agent.batch_size)
    return (time.process_time() - start) / updates * 1e3


def fill(agent, transitions: int) -> None:
    """Random transitions of the agent's spaces in its replay buffer (the update's cost does not depend on them)."""
    rng = np.random.default_rng(0)
    obs_shape, n_actions = agent.observation_space.shape, agent.action_space.shape[0]
    for _ in range(transitions):
        obs, next_obs = rng.normal(size=(2, 1, *obs_shape)).astype(np.float32)
        action = rng.uniform(-1, 1, (1, n_actions)).astype(np.float32)
        agent.replay_buffer.add(obs, next_obs, action, rng.normal(size=1), np.zeros(1), [{}])


def main() -> None:
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.logger import Logger

    from pretrain.downstream import flat_agent, hierarchical_agent

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "downstream" / "sac_update.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, kind in AGENTS:
        lean = hierarchical_agent(name) if kind == "controller" else flat_agent(name)
        with tempfile.TemporaryDirectory() as folder:
            lean.save(Path(folder) / "agent.zip")
            stock = SAC.load(Path(folder) / "agent.zip", env=lean.get_env())
        fill(lean, TRANSITIONS)
        stock.replay_buffer = lean.replay_buffer
        agents = {"lean": lean, "stock": stock}
        times: dict[str, list[float]] = {variant: [] for variant in agents}
        for agent in agents.values():
            agent.set_logger(Logger(None, []))
        for round_ in range(args.rounds):
            order = list(agents.items())
            for variant, agent in order if round_ % 2 == 0 else order[::-1]:  # each goes first every other round
                times[variant].append(per_update_ms(agent, args.updates))
        medians = {variant: round(float(np.median(values)), 2) for variant, values in times.items()}
        rows.append({"task": name, "agent": kind, "obs_dim": int(lean.observation_space.shape[0]),
                     "action_dim": int(lean.action_space.shape[0]), "width": lean.policy_kwargs["net_arch"][0],
                     "batch_size": lean.batch_size, "ms_per_update": medians,
                     "ratio": round(medians["lean"] / medians["stock"], 3),
                     "per_round_ms": {variant: [round(v, 2) for v in values] for variant, values in times.items()}})
        print(f"{name} {kind}: {medians['lean']} ms an update, stock SAC {medians['stock']} ({rows[-1]['ratio']}x)",
              flush=True)
    append_measurement(args.out, __doc__.split("\n\n")[0], {"clock": "process", "threads": 1, "rounds": args.rounds,
                                                            "updates": args.updates, "agents": rows})


if __name__ == "__main__":
    main()
