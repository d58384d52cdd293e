"""Speed levers for the critics' update on CPU: eager vs ``torch.compile`` vs bf16 autocast vs the twin critics
as one stacked network.

Times forward + backward + fused-Adam step of METRA's twin critics on Ant (29 + 2 + 8 = 39 inputs, 2 hidden
layers, 1 output each) at batch 256, interleaving the variants so that a busy machine slows them alike:

- ``eager``: two separate MLPs (as SB3 builds them);
- ``compile``: the same, loss through ``torch.compile``;
- ``bf16``: the same under ``torch.autocast("cpu", torch.bfloat16)`` (fast only on CPUs with AVX-512 bf16/AMX);
- ``stacked``: one network holding both critics' weights as (2, in, out) tensors, one batched matmul per layer.

    python benchmarks/network_step.py --widths 256 1024 --threads 1 --out benchmarks/results/network_step/summary.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from measurements import append_measurement
from torch import nn

INPUTS, BATCH, CRITICS = 39, 256, 2


class StackedCritics(nn.Module):
    """``CRITICS`` MLPs of the same shape evaluated with one batched matmul per layer."""

    def __init__(self, width: int) -> None:
        super().__init__()
        shapes = [(INPUTS, width), (width, width), (width, 1)]
        self.weights = nn.ParameterList(nn.Parameter(torch.randn(CRITICS, i, o) / i ** 0.5) for i, o in shapes)
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(CRITICS, 1, o)) for _, o in shapes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.unsqueeze(0).expand(CRITICS, -1, -1)
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.baddbmm(b, h, w)
            if k < len(self.weights) - 1:
                h = torch.relu(h)
        return h  # (critics, batch, 1)


def make_step(width: int, variant: str):
    torch.manual_seed(0)
    if variant == "stacked":
        net: nn.Module = StackedCritics(width)
    else:
        net = nn.ModuleList(nn.Sequential(nn.Linear(INPUTS, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                          nn.Linear(width, 1)) for _ in range(CRITICS))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-4, fused=True)
    x, y = torch.randn(BATCH, INPUTS), torch.randn(BATCH, 1)

    def loss_fn() -> torch.Tensor:
        if variant == "stacked":
            return ((net(x) - y) ** 2).mean() * CRITICS
        if variant == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return sum(((q(x).float() - y) ** 2).mean() for q in net)
        return sum(((q(x) - y) ** 2).mean() for q in net)

    compiled = torch.compile(loss_fn) if variant == "compile" else loss_fn

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = compiled()
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/network_step/summary.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    variants = ("eager", "compile", "bf16", "stacked")
    measurement = {"torch_threads": args.threads, "torch": torch.__version__, "widths": {}}
    for width in args.widths:
        steps = {v: make_step(width, v) for v in variants}
        compile_start = time.perf_counter()
        for _ in range(3):  # warm-up; the first compiled call compiles
            for step in steps.values():
                step()
        warmup_s = time.perf_counter() - compile_start
        times = {v: [] for v in variants}
        for _ in range(args.rounds):
            for v, step in steps.items():
                start = time.perf_counter()
                for _ in range(args.reps):
                    step()
                times[v].append(1e3 * (time.perf_counter() - start) / args.reps)
        medians = {v: round(float(np.median(t)), 3) for v, t in times.items()}
        measurement["widths"][str(width)] = {"ms_per_step": medians, "warmup_s_incl_compile": round(warmup_s, 1),
                                             "speedup_vs_eager": {v: round(medians["eager"] / m, 2)
                                                                  for v, m in medians.items()}}
        print(width, measurement["widths"][str(width)], flush=True)
    append_measurement(args.out, "twin critics (MLP 39-w-w-1 x 2), batch 256, forward+backward+fused Adam, ms per step "
                       "(median of rounds)", measurement)


if __name__ == "__main__":
    main()
