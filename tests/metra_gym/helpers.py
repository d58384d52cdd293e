"""Small builders shared by the runtime tests (and by ``benchmarks/bad_input.py``, which runs with the root on its path)."""

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Every bundled checkpoint: today's skills and the earlier releases, which stay loadable by their version names.
BUNDLED_NAMES = ("ant", "half_cheetah", "quadruped_state", "humanoid_state", "kitchen_state", "ant-0.2", "ant-0.1", "half_cheetah-0.1")


# What builds the package: its sdist holds these and nothing else of the repository (MANIFEST.in).
PACKAGE_SOURCE = ("pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "metra_gym", "pretrain")


def package_source(destination: Path) -> Path:
    """A copy of what builds the package, so that building or installing it writes nothing (build/, *.egg-info)
    into the source tree."""
    root = Path(__file__).resolve().parents[2]
    destination.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_SOURCE:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, destination / name)
    return destination


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


def broken_checkpoint(folder: Path, edit_config: Callable[[dict], None] | None = None,
                      edit_weights: Callable[[dict], None] | None = None, rehash: bool = True) -> Path:
    """A copy of the bundled ``ant`` checkpoint in ``folder`` with its config.json and/or weights edited (both
    sha256s re-computed by default, so that the edit itself, not a hash, is what the loader meets)."""
    from safetensors.torch import load_file, save_file

    from metra_gym.skill_checkpoint.format import CONFIG_SHA256_KEY, config_sha256
    from metra_gym.skill_checkpoint.hub import resolve_checkpoint

    shutil.copytree(resolve_checkpoint("ant"), folder)
    config = json.loads((folder / "config.json").read_text())
    if edit_weights is not None:
        tensors = load_file(folder / "model.safetensors")
        edit_weights(tensors)
        save_file(tensors, folder / "model.safetensors")
        if rehash:
            config["weights_sha256"] = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    if edit_config is not None:
        edit_config(config)
    if rehash and isinstance(config.get(CONFIG_SHA256_KEY), str):  # (an edit may remove it, or make it a number)
        config[CONFIG_SHA256_KEY] = config_sha256(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def set_key(key: str, value: Any) -> Callable[[dict], None]:
    """A config edit for :func:`broken_checkpoint`: sets ``key`` (``outer.inner`` for a nested one) to ``value``."""
    def edit(config: dict) -> None:
        if "." in key:
            outer, inner = key.split(".")
            config[outer][inner] = value
        else:
            config[key] = value
    return edit


def ant_with_prior(folder: Path, prior: str) -> Path:
    """The bundled Ant checkpoint in ``folder`` relabelled as skills of another prior (config.json only, re-hashed:
    the weights' hash holds)."""
    return broken_checkpoint(folder, edit_config=lambda config: config.update(skill_prior=prior, format_version=4))
