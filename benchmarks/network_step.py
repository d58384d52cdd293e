"""Speed levers for one network update on CPU: eager vs ``torch.compile`` vs bf16 autocast.

Times forward + backward + fused-Adam step of the MLP shape METRA's critics use (Ant: 29 + 2 + 8 = 39 inputs,
2 hidden layers, 1 output) at batch 256, interleaving the variants so that a busy machine slows them alike,
and writes the medians to ``benchmarks/results/network_step.json``.

    python benchmarks/network_step.py --widths 256 1024 --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn


def make_step(width: int, variant: str):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(39, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-4, fused=True)
    x, y = torch.randn(256, 39), torch.randn(256, 1)

    def loss_fn() -> torch.Tensor:
        if variant == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return ((net(x).float() - y) ** 2).mean()
        return ((net(x) - y) ** 2).mean()

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
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/network_step.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    variants = ("eager", "compile", "bf16")
    results = {"machine": f"{platform.machine()}, {args.threads} torch thread(s)", "torch": torch.__version__,
               "what": "MLP 39-w-w-1, batch 256, forward+backward+fused Adam, ms per step (median of rounds)",
               "widths": {}}
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
        results["widths"][str(width)] = {"ms_per_step": medians, "warmup_s_incl_compile": round(warmup_s, 1),
                                         "speedup_vs_eager": {v: round(medians["eager"] / m, 2)
                                                              for v, m in medians.items()}}
        print(width, results["widths"][str(width)], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
