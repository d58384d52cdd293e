"""Small builders shared by the runtime tests."""

import subprocess
import sys


def heavy_modules_after(imports: str, env_id: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of ``heavy`` a fresh interpreter has loaded after ``import {imports}`` and ``gym.spec(env_id)``."""
    code = (f"import sys, gymnasium as gym, {imports}\n"
            f"gym.spec({env_id!r})\n"
            f"print(','.join(sorted(m for m in {heavy!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def random_skill_policy(obs_dim: int, action_dim: int, skill_dim: int, discrete: bool, env_id: str,
                        env_kwargs: dict, source: str = "test"):
    """A SkillPolicy of freshly initialised width-32 networks (seed 0) for ``env_id``: a checkpoint for skill ids
    whose trained skills are not bundled."""
    import torch

    from metra_gym.networks import PhiNetwork, SkillActor
    from metra_gym.skill_policy import SkillPolicy

    torch.manual_seed(0)
    weights = {f"actor.{k}": v for k, v in SkillActor(obs_dim, skill_dim, action_dim, [32]).state_dict().items()}
    weights.update({f"phi.{k}": v for k, v in PhiNetwork(obs_dim, skill_dim, [32]).state_dict().items()})
    config = {"obs_dim": obs_dim, "action_dim": action_dim, "skill_dim": skill_dim, "discrete_skills": discrete,
              "action_low": [-1.0] * action_dim, "action_high": [1.0] * action_dim, "actor_hidden": [32],
              "phi_hidden": [32], "normalizer": {"mean": [0.0] * obs_dim, "std": [1.0] * obs_dim},
              "env_id": env_id, "env_kwargs": env_kwargs}
    return SkillPolicy(config, weights, source=source)
