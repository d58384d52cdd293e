"""Export a trained run into the pickle-free skill checkpoint that :mod:`metra_gym` loads, with a model card."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch as th
from huggingface_hub import ModelCard
from huggingface_hub.repocard import metadata_eval_result
from safetensors.torch import save_file

import metra_gym
from metra_gym.envs.normalization import ObservationNormalizer
from metra_gym.registration import skill_env_id
from metra_gym.skill_checkpoint.format import CARD, CONFIG, FORMAT_VERSION, WEIGHTS
from pretrain.algorithms.metra import METRA
from pretrain.run.config import ConfigError, PretrainConfig
from pretrain.run.run_state import run_state_dir
from pretrain.run.trainer import read_run_config

# SB3's SAC Actor -> metra_gym.networks.SkillActor
_ACTOR_KEYS = {"latent_pi.0.": "latent.0.", "latent_pi.2.": "latent.2.", "mu.": "mu.", "log_std.": "log_std."}


def skill_tensors(model: METRA) -> dict[str, th.Tensor]:
    """The actor and phi weights under the names of :class:`metra_gym.SkillPolicy`."""
    tensors: dict[str, th.Tensor] = {}
    for key, value in model.actor.state_dict().items():
        prefix = next((p for p in _ACTOR_KEYS if key.startswith(p)), None)
        if prefix is None:
            raise ValueError(f"unexpected actor parameter {key!r}: only 2-layer MLP actors can be exported")
        tensors["actor." + _ACTOR_KEYS[prefix] + key[len(prefix):]] = value
    for key, value in model.phi.state_dict().items():
        tensors["phi." + key] = value
    return {k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}


def model_card(config: dict[str, Any], repo_name: str) -> ModelCard:
    provenance = config["provenance"]
    metric = "policy_coverage"
    metadata = {
        "library_name": "metra-gym",
        "tags": [config["env_id"], "reinforcement-learning", "stable-baselines3", "metra", "skill-discovery",
                 "deep-reinforcement-learning"],
    }
    if provenance.get(metric) is not None:  # an untrained baseline has no measured result
        metadata.update(metadata_eval_result(
            model_pretty_name=repo_name, task_pretty_name="reinforcement-learning", task_id="reinforcement-learning",
            metrics_pretty_name="policy state coverage (1 m bins, 48 skills)", metrics_id=metric,
            metrics_value=provenance[metric], dataset_pretty_name=config["env_id"], dataset_id=config["env_id"]))
    skills = f"{config['skill_dim']} {'discrete' if config['discrete_skills'] else 'continuous (unit-length)'}"
    body = f"""
# METRA skills for {config['env_id']}

Skill policy pi(a|s,z) and representation phi(s) trained with METRA (Park, Rybkin, Levine, ICLR 2024) by
metra-gym on Stable-Baselines3 SAC. Skills: {skills}.

| | |
|---|---|
| policy coverage (48 deterministic skills, 1 m bins) | {provenance.get('policy_coverage')} |
| env steps | {provenance.get('env_steps', 0):,} ({provenance.get('epochs')} epochs) |
| training time | {provenance.get('wall_clock_h')} h on {provenance.get('machine')} |
| seed | {provenance.get('seed')} |

Training command: `{provenance.get('command')}`

## Usage

```python
import gymnasium as gym, metra_gym
env = gym.make("{config.get('skill_env_id', 'metra/AntSkills-v0')}", checkpoint="hf://ORG/NAME")
policy = metra_gym.SkillPolicy.from_pretrained("hf://ORG/NAME")
```

Files: `{WEIGHTS}` (actor and phi, float32, no pickle), `{CONFIG}` (environment, normaliser, network shape,
training configuration).
"""
    return ModelCard("---\n" + _yaml(metadata) + "---\n" + body)


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


def export_run(run_dir: str | Path, out_dir: str | Path, force: bool = False, command: str | None = None,
               machine: str = "2-core CPU, no GPU") -> Path:
    """Write ``out_dir`` (config.json, model.safetensors, README.md) from a run's latest checkpoint; atomic."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    ckpt = run_state_dir(run_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        raise ConfigError(f"{out_dir} exists and is not empty; choose another OUT_DIR or pass --force")
    run_config = read_run_config(run_dir)
    model = METRA.load(ckpt / "model.zip", device="cpu")
    state = json.loads((ckpt / "state.json").read_text())
    history_path = run_dir / "eval" / "coverage.json"
    history = json.loads(history_path.read_text()) if history_path.is_file() else []
    last_eval = next((row for row in reversed(history) if row["epoch"] <= state["epoch"]), {})
    provenance = {
        "env_steps": int(state["num_timesteps"]),
        "epochs": int(state["epoch"]),
        "policy_coverage": last_eval.get("policy_coverage"),
        "coverage_epoch": last_eval.get("epoch"),
        "wall_clock_h": round(float(state.get("wall_clock_s", 0.0)) / 3600, 2),
        "machine": machine,
        "command": command or shlex.join(["metra-pretrain", "train", "--config", "...", "--run-dir", str(run_dir)]),
    }
    return write_checkpoint(model, run_config, out_dir, provenance)


def write_checkpoint(model: METRA, run_config: PretrainConfig, out_dir: Path, provenance: dict[str, Any]) -> Path:
    """Write a METRA model's skill policy and phi as a checkpoint folder, atomically (temporary folder renamed)."""
    out_dir = Path(out_dir)
    net_arch = model.policy.net_arch
    config = {
        "format_version": FORMAT_VERSION,
        "env_id": run_config.env_id,
        "env_kwargs": run_config.env_kwargs,
        "skill_env_id": skill_env_id(run_config.env_id),
        "obs_dim": model.obs_dim,
        "action_dim": int(model.action_space.shape[0]),
        "action_low": model.action_space.low.tolist(),
        "action_high": model.action_space.high.tolist(),
        "skill_dim": model.skill_dim,
        "discrete_skills": model.discrete_skills,
        "actor_hidden": list(net_arch["pi"] if isinstance(net_arch, dict) else net_arch),
        "phi_hidden": list(model.phi_net_arch),
        "normalizer": {"name": run_config.normalizer,
                       **ObservationNormalizer.from_name(run_config.normalizer, model.obs_dim).to_dict()},
        "provenance": {
            "algorithm": "METRA on Stable-Baselines3 SAC (metra-gym)",
            "package_version": metra_gym.__version__,
            "seed": run_config.seed,
            **provenance,
            "config": run_config.to_dict(),
        },
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        save_file(skill_tensors(model), str(tmp / WEIGHTS), metadata={"format": "metra-gym"})
        (tmp / CONFIG).write_text(json.dumps(config, indent=1))
        model_card(config, out_dir.name).save(tmp / CARD)
        tmp.chmod(0o755)  # mkdtemp makes it private; a checkpoint is meant to be shared
        for path in tmp.iterdir():
            path.chmod(0o644)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def export_untrained(run_config: PretrainConfig, out_dir: Path) -> Path:
    """A checkpoint of a freshly initialised METRA model: the baseline of zero-shot and downstream results."""
    from pretrain.run.trainer import build_model, env_factory, training_env

    venv = training_env(run_config, env_factory(run_config))
    model = build_model(run_config, venv, out_dir.parent / ".untrained-run")
    provenance = {"env_steps": 0, "epochs": 0, "policy_coverage": None, "machine": "-", "command": "untrained"}
    path = write_checkpoint(model, run_config, out_dir, provenance)
    venv.close()
    return path
