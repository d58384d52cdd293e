"""Whether the look-ahead reference's choices are a learnable function of what a controller sees (issue 41).

The look-ahead (``pretrain.downstream.reference.LookAhead``) picks each skill by simulating every candidate from the
exact simulator state. Here an MLP over a protocol's controller view (``controller_env(task, protocol)``; by default
``paper``: the normalised pretraining observation and the task information; ``paper_heading`` adds the torso's
heading on the DMC goal tasks) learns to make the same choice, by DAgger: round 0
labels the states of the look-ahead's own episodes with its choice, every later round runs the imitator and labels
the states it visits; after each round the imitator is fitted to all labels so far and evaluated on each seed's 50
shared evaluation episodes (``evaluation_seeds``), as every downstream run file. If the imitator reaches the
look-ahead's return, the choice is learnable from the controller's view and a controller's shortfall is one of
learning from reward; if it stays below the learned controller, what the look-ahead exploits is not carried by the
view at this amount of data (``benchmarks/lookahead_noise.py`` asks the same by blurring the look-ahead's model).

    python benchmarks/lookahead_imitation.py cheetah_hurdle --rounds 5 --episodes-per-round 300 \\
        --out benchmarks/results/downstream/lookahead_imitation/cheetah_hurdle.json

The imitator scores the look-ahead's candidates (every discrete skill; the 16 unit vectors of 2-d unit skills; other
priors are refused: their candidates are random draws), 2 x 256 ReLU (the bundled skills' controller width), Adam at
1e-3, batches of 256; its action is the highest-scoring candidate. It learns one of two targets (``--target``):

- ``choice``: which candidate the look-ahead ran (cross-entropy on its index);
- ``value``: what every candidate did in the look-ahead's simulation: its task reward and the progress it made
  (``pretrain.downstream.reference.progress`` after the skill minus before), each centred over the state's
  candidates and scaled by its own standard deviation over the labels (mean squared error; one scale for both lets
  the rare reward points drown the progress that decides most choices). Thirty-two numbers a state where ``choice``
  has one index: a model of what each skill does from the state, which may generalise where the argmax is
  memorised. Its action is the candidate of the most predicted reward + PROGRESS_WEIGHT x predicted progress; the run
  file records the largest progress a candidate made, to check that this keeps the look-ahead's order (a reward
  point before any progress).

Training episodes start from reset seeds 2,000,000 + 10,000 x round + i, apart from the evaluation episodes'
(10,000 + 1,000 x seed + i).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

TRAIN_SEED = 2_000_000  # the labelled episodes' reset seeds: apart from evaluation_seeds' 10,000-1,009,999
ROUND_SEEDS = 10_000  # reset seeds a round may use
PROGRESS_WEIGHT = 0.1  # a candidate's value per metre of progress: one reward point outweighs 10 m
TARGETS = ("choice", "value")


class Imitator:
    """An MLP choosing among the look-ahead's candidates from the controller's view."""

    def __init__(self, obs_dim: int, candidates: list[Any], target: str = "choice", width: int = 256,
                 seed: int = 0) -> None:
        import torch

        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}: choose one of {', '.join(TARGETS)}")
        torch.manual_seed(seed)
        self.candidates = candidates
        self.target = target
        outputs = len(candidates) * (1 if target == "choice" else 2)  # value: (reward, progress) per candidate
        self.net = torch.nn.Sequential(torch.nn.Linear(obs_dim, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                       torch.nn.ReLU(), torch.nn.Linear(width, outputs))
        self.scale = torch.ones(2)  # value: the labels' (reward, progress) standard deviations, set by fit
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.generator = torch.Generator().manual_seed(seed)

    def label(self, action: Any) -> int:
        """The index of the look-ahead's chosen candidate."""
        import numpy as np

        return next(i for i, c in enumerate(self.candidates) if np.array_equal(np.asarray(c), np.asarray(action)))

    def choose(self, x: Any) -> Any:
        """The index of the chosen candidate for each row of the tensor ``x``."""
        out = self.net(x)
        if self.target == "value":
            predicted = out.reshape(len(x), len(self.candidates), 2) * self.scale
            out = predicted[..., 0] + PROGRESS_WEIGHT * predicted[..., 1]
        return out.argmax(1)

    def __call__(self, obs: Any) -> Any:
        import torch

        with torch.no_grad():
            return self.candidates[int(self.choose(torch.as_tensor(obs, dtype=torch.float32)[None])[0])]

    def fit(self, states: list[Any], labels: list[int], values: list[Any], steps: int,
            batch: int = 256) -> dict[str, float]:
        """``steps`` Adam steps on random batches (cross-entropy on ``labels`` or squared error on the centred, scaled
        ``values``, (reward, progress) per candidate: :attr:`target`); the final loss and the share of ``labels`` (the
        look-ahead's choices) the imitator's choice matches."""
        import numpy as np
        import torch

        x = torch.as_tensor(np.array(states), dtype=torch.float32)
        y = torch.as_tensor(np.array(labels), dtype=torch.long)
        if self.target == "value":
            v = torch.as_tensor(np.array(values), dtype=torch.float32)
            v = v - v.mean(1, keepdim=True)  # only the order of a state's candidates matters
            self.scale = v.reshape(-1, 2).std(0).clamp_min(1e-8)
            v = (v / self.scale).reshape(len(v), -1)
        for _ in range(steps):
            index = torch.randint(len(x), (batch,), generator=self.generator)
            out = self.net(x[index])
            if self.target == "choice":
                loss = torch.nn.functional.cross_entropy(out, y[index])
            else:
                loss = torch.nn.functional.mse_loss(out, v[index])
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        with torch.no_grad():
            accuracy = float((self.choose(x) == y).float().mean())
        return {"loss": float(loss.detach()), "label_accuracy": accuracy}


def label_episodes(env: Any, lookahead: Any, imitator: Imitator, seeds: list[int], follow_lookahead: bool,
                   states: list[Any], labels: list[int], values: list[Any]) -> float:
    """Run one episode per reset seed, acting with the look-ahead (``follow_lookahead``) or the imitator, and append
    every visited controller state with the look-ahead's choice there and its candidates' values (module docstring);
    the largest progress a candidate made."""
    import numpy as np

    from pretrain.downstream.reference import best_index, progress

    task_env = env.unwrapped.env.unwrapped
    largest = 0.0
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        lookahead.reset(seed)
        done = False
        while not done:
            before = progress(task_env)
            candidates, scores = lookahead.evaluate(env.unwrapped)
            choice = candidates[best_index(scores)]
            gains = np.array([after - before for _, after in scores])
            largest = max(largest, float(np.abs(gains).max()))
            states.append(obs.copy())
            labels.append(imitator.label(choice))
            values.append(np.stack([[reward for reward, _ in scores], gains], axis=1))
            obs, _, terminated, truncated, _ = env.step(choice if follow_lookahead else imitator(obs))
            done = terminated or truncated
    return largest


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from metra_gym.skill_priors import UNIT
    from pretrain.downstream.evaluation import evaluation_seeds, run_episodes
    from pretrain.downstream.protocol import PROTOCOLS, TASKS, controller_env
    from pretrain.downstream.reference import LookAhead
    from pretrain.downstream.runs import write_atomic
    from pretrain.downstream.verdict import interval

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS), default="paper", help="the controller view to imitate from")
    parser.add_argument("--rounds", type=int, default=5, help="DAgger rounds (round 0 follows the look-ahead)")
    parser.add_argument("--episodes-per-round", type=int, default=300)
    parser.add_argument("--target", choices=TARGETS, default="choice", help="what the imitator learns (module docstring)")
    parser.add_argument("--train-steps", type=int, default=3000, help="Adam steps after each round")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes per seed")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.rounds < 1 or not 1 <= args.episodes_per_round <= ROUND_SEEDS or args.train_steps < 1:
        parser.error(f"need rounds >= 1, 1 <= episodes-per-round <= {ROUND_SEEDS} and train-steps >= 1, got "
                     f"{args.rounds}, {args.episodes_per_round} and {args.train_steps}")

    torch.set_num_threads(1)
    env = controller_env(args.task, protocol_name=args.protocol)
    policy = env.unwrapped.policy
    if not policy.discrete and not (policy.skill_prior == UNIT and policy.skill_dim == 2):
        parser.error(f"{args.task}'s skills are neither discrete nor 2-d unit vectors: the look-ahead's candidates "
                     "are random draws there, with no fixed set to choose among")
    lookahead = LookAhead()
    imitator = Imitator(env.observation_space.shape[0], lookahead.candidates(env.unwrapped), args.target)
    row: dict[str, Any] = {
        "task": args.task, "protocol": args.protocol, "target": args.target, "progress_weight": PROGRESS_WEIGHT,
        "candidates": len(imitator.candidates), "rounds": [],
        "command": shlex.join(["python", "benchmarks/lookahead_imitation.py", *(sys.argv[1:] if argv is None else argv)])}
    states: list[Any] = []
    labels: list[int] = []
    values: list[Any] = []
    largest = 0.0
    start = time.process_time()
    for k in range(args.rounds):
        seeds = [TRAIN_SEED + ROUND_SEEDS * k + i for i in range(args.episodes_per_round)]
        largest = max(largest, label_episodes(env, lookahead, imitator, seeds, k == 0, states, labels, values))
        fit = imitator.fit(states, labels, values, args.train_steps)
        means = [float(np.mean(run_episodes(env, imitator, evaluation_seeds(seed, args.episodes))))
                 for seed in args.seeds]
        result = interval(means)
        row["rounds"].append({"round": k, "labelled_states": len(states), **fit, "held_out": result,
                              "cpu_seconds": round(time.process_time() - start, 1)})
        print(f"{args.task} round {k}: {len(states)} labelled states, label accuracy {fit['label_accuracy']:.2f}, "
              f"held-out return {result['mean']:.2f} ({result['low']:.2f}-{result['high']:.2f})", flush=True)
    env.close()
    row["largest_progress"] = round(largest, 3)
    write_atomic(args.out, row)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
