"""Writing a skill checkpoint folder, the counterpart of :mod:`metra_gym.skill_checkpoint.format` (which reads and
checks one): ``config.json`` (:func:`checkpoint_config`, at the lowest format version that reads it),
``model.safetensors`` and the model card ``README.md``, written atomically (:func:`write_checkpoint`). The training
stage (``metra-pretrain export``, ``SkillAlgorithm.export_skills``) gives the tensors and what they are."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch as th
from huggingface_hub import ModelCard
from huggingface_hub.repocard import metadata_eval_result
from safetensors.torch import save

from metra_gym.atomic_files import give_usual_mode, remove_temporaries, temporary_prefix
from metra_gym.skill_checkpoint.format import (
    CARD,
    CONFIG,
    CONFIG_SHA256_KEY,
    FIGURE_NAME,
    FIGURES_KEY,
    PIXELS_KEY,
    PLAIN_POLICY_VERSION,
    POSTERIOR_KEY,
    SHA256_KEY,
    WEIGHTS,
    CheckpointError,
    config_sha256,
    is_figure_entry,
)
from metra_gym.skill_priors import DESCRIPTIONS, UNIT
from metra_gym.version import __version__


def skill_env_id(env_id: str) -> str | None:
    """The registered skill-level id whose low-level environment is ``env_id`` (metra/Ant-v0 -> AntSkills)."""
    for spec in gym.registry.values():
        if spec.entry_point == "metra_gym.skill_env:SkillEnv" and spec.kwargs.get("env") == env_id:
            return spec.id
    return None


def checkpoint_config(*, env_id: str, env_kwargs: dict[str, Any], obs_dim: int, action_low: Any, action_high: Any,
                      skill_dim: int, discrete_skills: bool, skill_prior: str, actor_hidden: list[int],
                      actor_activation: str, phi_hidden: list[int] | None, normalizer: dict[str, Any],
                      provenance: dict[str, Any], pixels: dict[str, Any] | None = None,
                      skill_posterior_hidden: list[int] | None = None) -> dict[str, Any]:
    """The ``config.json`` of a skill checkpoint: what the networks need and where they came from. Its format version
    is the lowest that reads it (2 for a tanh actor on unit or one-hot skills; 3 adds ReLU actors, 4 the other
    skill priors and pixels, 5 q(z | s), 6 plain policies without skills), so that older metra-gym versions load what
    they can and refuse what they would misread.

    :param skill_dim: the size of the skill; 0 for an exploration method's plain policy pi(a | s), which no skill
        environment runs (its ``skill_env_id`` is null).
    :param skill_prior: the prior of continuous skills (one-hot skills are recorded as unit's).
    :param actor_activation: the actor's hidden activation, "tanh" or "relu".
    :param phi_hidden: phi's hidden widths (None: the checkpoint has no phi).
    :param normalizer: ``{"name": ..., "mean": [...], "std": [...]}``; a pixel checkpoint's is the identity of size 1,
        unused (its CNNs scale uint8 pixels by 1 / 255).
    :param provenance: where the networks came from (algorithm, run, configuration, ...); the package version is added.
    :param pixels: the ``pixels`` entry of a checkpoint trained on images (None: state observations).
    :param skill_posterior_hidden: the hidden widths of q(z | s) (DIAYN's, state skills; None: none).
    """
    prior = UNIT if discrete_skills else skill_prior
    plain = skill_dim == 0  # an exploration method's policy pi(a | s)
    version = (PLAIN_POLICY_VERSION if plain else 5 if skill_posterior_hidden is not None
               else 4 if prior != UNIT or pixels is not None else 3 if actor_activation != "tanh" else 2)
    return {
        "format_version": version,
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "skill_env_id": None if plain else skill_env_id(env_id),
        "obs_dim": int(obs_dim),
        "action_dim": len(action_low),
        "action_low": [float(v) for v in action_low],
        "action_high": [float(v) for v in action_high],
        "skill_dim": skill_dim,
        "discrete_skills": discrete_skills,
        **({} if prior == UNIT else {"skill_prior": prior}),
        "actor_hidden": actor_hidden,
        **({} if actor_activation == "tanh" else {"actor_activation": actor_activation}),
        "phi_hidden": phi_hidden,
        **({} if skill_posterior_hidden is None else {POSTERIOR_KEY: skill_posterior_hidden}),
        "normalizer": normalizer,
        **({} if pixels is None else {PIXELS_KEY: pixels}),
        "provenance": {"package_version": __version__, **provenance},
    }


def model_card(config: dict[str, Any], repo_name: str) -> ModelCard:
    """The Hub model card: RL Zoo-style tags, a ``model-index`` result (held-out coverage when measured) and what a
    user needs to pin what they got (run, steps, hours, held-out coverage, zero-shot distance)."""
    provenance = config["provenance"]
    held_out, goals = provenance.get("held_out_coverage"), provenance.get("zero_shot")
    # Environments with tasks (Kitchen) are measured by the tasks achieved, not by bins.
    tasks = "tasks_achieved" in (held_out or {}) or "tasks_achieved" in provenance or "training" in provenance
    if tasks:
        metric = held_out.get("tasks_achieved") if held_out else provenance.get("tasks_achieved")
        metric_name = (f"tasks achieved of {held_out['n_tasks']} ({held_out['n_skills']} skill rollouts)" if held_out
                       else "tasks achieved of 6 (48 skill rollouts)")
    else:
        metric = held_out["policy_coverage"] if held_out else provenance.get("policy_coverage")
        metric_name = "policy state coverage (1 m bins, 48 skills"
        metric_name += ", held out)" if held_out else ")"
    metadata = {
        "library_name": "metra-gym",
        "tags": [config["env_id"], "reinforcement-learning", "stable-baselines3",
                 str(provenance.get("config", {}).get("algo", "metra")),
                 "skill-discovery" if config["skill_dim"] else "exploration", "deep-reinforcement-learning"],
    }
    if metric is not None:  # an untrained baseline has no measured result
        metadata.update(metadata_eval_result(
            model_pretty_name=repo_name, task_pretty_name="reinforcement-learning", task_id="reinforcement-learning",
            metrics_pretty_name=metric_name + (", held out" if tasks and held_out else ""),
            metrics_id="tasks_achieved" if tasks else "policy_coverage", metrics_value=metric,
            dataset_pretty_name=config["env_id"], dataset_id=config["env_id"]))
    prior = DESCRIPTIONS[config.get("skill_prior", UNIT)]
    skills = f"{config['skill_dim']} {'discrete (one-hot)' if config['discrete_skills'] else f'continuous ({prior})'}"
    policy, what = "Skill policy pi(a|s,z)", "skills"
    if config["skill_dim"] == 0:
        skills = "none, a plain exploration policy (skill environments do not take it)"
        policy, what = "Policy pi(a|s)", "policy"
    algo = str(provenance.get("config", {}).get("algo", "metra")).upper()
    epochs = f" ({provenance['epochs']} epochs)" if provenance.get("epochs") is not None else ""
    hours = provenance.get("wall_clock_h")
    rows = [("run", provenance.get("run")),
            ("env steps", f"{provenance.get('env_steps', 0):,}{epochs}"),
            ("wall-clock training time (runs sharing the machine take longer)",
             f"{hours} h on {provenance.get('machine')}" if hours is not None else None),
            ("seed", provenance.get("seed")),
            *_result_rows(provenance, held_out, goals, tasks)]
    rows = [(name, value) for name, value in rows if value is not None]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    figures = "".join(f"![{_alt_text(entry['caption'])}]({entry['file']})\n\n{entry['caption']}\n\n"
                      for entry in provenance.get(FIGURES_KEY, []))
    figures = "## Figures\n\n" + figures if figures else ""
    figure_files = ", the figures above (PNG)" if figures else ""
    body = f"""
# {algo} {what} for {config['env_id']}

{policy}{" and representation phi(s)" if config.get("phi_hidden") else ""} trained with {algo} by
metra-gym ({provenance.get('algorithm')}). Skills: {skills}.

| | |
|---|---|
{table}

Training command: `{provenance.get('command')}`

{figures}## Usage

```python
{usage_snippet(config)}
```

Files: `{WEIGHTS}` (actor and phi, float32, no pickle), `{CONFIG}` (environment, normaliser, network shape, the
sha256 of the weights and of the file itself, training configuration and provenance){figure_files}.
"""
    return ModelCard("---\n" + _yaml(metadata) + "---\n" + body)


def _alt_text(caption: str) -> str:
    """A caption as a Markdown image's alternative text: its brackets escaped, so that the image link stays whole."""
    return caption.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _result_rows(provenance: dict[str, Any], held_out: dict[str, Any] | None, goals: dict[str, Any] | None,
                 tasks: bool) -> list[tuple[str, Any]]:
    """The model card's rows of measured results: coverage in 1 m bins, or on environments with tasks the tasks
    achieved (by evaluation rollouts, by the training data, by zero-shot goal reaching)."""
    if not tasks:
        rows: list[tuple[str, Any]] = [("policy coverage, training evaluation (48 skills, 1 m bins)",
                                        provenance.get("policy_coverage"))]
        if held_out:
            rows.append((f"policy coverage, held out (48 skills drawn with seed {held_out['seed']}, resets seeded "
                         f"{held_out['seed']} + i)", held_out["policy_coverage"]))
        if goals:
            rows.append((f"zero-shot goal reaching, {goals['n_goals']} goals (seed {goals['seed']}): mean final "
                         f"distance (95 % interval); untrained", f"{goals['mean']:.1f} m ({goals['ci95'][0]:.1f}-"
                         f"{goals['ci95'][1]:.1f}); {goals.get('untrained_mean', float('nan')):.1f} m"))
        return rows
    training = provenance.get("training") or {}
    rows = [("tasks achieved, training evaluation (48 skill rollouts)", provenance.get("tasks_achieved"))]
    if training:
        rows.append(("tasks achieved by the training data: last 100,000 transitions (queue); all (total)",
                     f"{training['queue_tasks_achieved']} ({training['queue_tasks'] or '-'}); "
                     f"{training['total_tasks_achieved']} ({training['total_tasks'] or '-'})"))
    if held_out:
        rows.append((f"tasks achieved, held out ({held_out['n_skills']} skill rollouts of {held_out['steps']} steps, "
                     f"resets seeded {held_out['seed']} + i)",
                     f"{held_out['tasks_achieved']} of {held_out['n_tasks']} ({', '.join(held_out['tasks']) or '-'})"))
    if goals and "reached" in goals:
        untrained = goals.get("untrained_reached")
        rows.append((f"zero-shot goal reaching, the {goals['n_goals']} tasks' goal states (skill chosen at the first "
                     f"step, seed {goals['seed']}): tasks done at the last step (at any step); untrained",
                     f"{goals['reached']} of {goals['n_goals']} ({goals['reached_any_step']})"
                     + ("" if untrained is None else f"; {untrained}")))
    return rows


def usage_snippet(config: dict[str, Any], checkpoint: str = "hf://ORG/NAME") -> str:
    """The Python lines that run these skills: the registered skill-level id of the environment when there is one,
    else :class:`metra_gym.SkillEnv` around ``gym.make`` of the environment with its keywords; for a plain policy
    (``skill_dim`` 0), ``gym.make`` and ``act(obs)``."""
    lines = ["import gymnasium as gym, metra_gym"]
    env_id, env_kwargs = config["env_id"], config.get("env_kwargs") or {}
    if config["skill_dim"] == 0:  # a plain policy: it acts in the environment itself, without a skill
        arguments = "".join(f", {key}={value!r}" for key, value in env_kwargs.items())
        return "\n".join([*lines, f'env = gym.make("{env_id}"{arguments})',
                          f'policy = metra_gym.SkillPolicy.from_pretrained("{checkpoint}")',
                          "action = policy.act(env.reset(seed=0)[0])  # raw observations (the policy normalises them)"])
    if config.get("skill_env_id"):
        lines.append(f'env = gym.make("{config["skill_env_id"]}", checkpoint="{checkpoint}"'
                     + (f", env_kwargs={env_kwargs!r}" if env_kwargs else "") + ")")
    else:
        if ":" in env_id:
            lines.append(f"# gym.make imports {env_id.split(':')[0]!r}, the package that registers the environment")
        arguments = "".join(f", {key}={value!r}" for key, value in env_kwargs.items())
        lines.append(f'env = metra_gym.SkillEnv(gym.make("{env_id}"{arguments}), checkpoint="{checkpoint}")')
    lines.append(f'policy = metra_gym.SkillPolicy.from_pretrained("{checkpoint}")')
    return "\n".join(lines)


def _yaml(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"  # the first 8 bytes of every PNG file


def checked_figures(figures: Sequence[tuple[str | Path, str]]) -> dict[str, tuple[Path, str]]:
    """The model card's figures by file name, checked before anything is written: each an existing PNG file with
    a plain name (letters, digits, ``.``, ``_``, ``-``) and a one-line caption, no two of one name.

    :param figures: ``(PNG file, caption)`` pairs, in the card's order.
    :raises CheckpointError: naming the figure and what to do.
    """
    checked: dict[str, tuple[Path, str]] = {}
    for source, caption in figures:
        source, caption = Path(source), str(caption).strip()
        if not FIGURE_NAME.match(source.name):
            raise CheckpointError(f"figure {source}: name it with letters, digits, '.', '_' and '-' only, ending in "
                                  ".png (the model card links it by its name)")
        if not source.is_file() or _first_bytes(source) != PNG_SIGNATURE:
            raise CheckpointError(f"figure {source} is not a PNG file; give an existing .png (for example the "
                                  "tasks.png or trajectories.png of metra-pretrain evaluate)")
        if not is_figure_entry({"file": source.name, "caption": caption}):
            raise CheckpointError(f"figure {source} needs a caption of one non-empty line; say in a few words what "
                                  "it shows")
        if source.name in checked:
            raise CheckpointError(f"two figures are named {source.name}; rename one of them")
        checked[source.name] = (source, caption)
    return checked


def _first_bytes(path: Path, size: int = len(PNG_SIGNATURE)) -> bytes:
    with path.open("rb") as file:
        return file.read(size)


def write_checkpoint(tensors: dict[str, th.Tensor], config: dict[str, Any], out_dir: Path,
                     figures: Sequence[tuple[str | Path, str]] = ()) -> Path:
    """Write a checkpoint folder atomically (temporary folder renamed); config.json records the weights' sha256 and
    its own (:func:`~metra_gym.skill_checkpoint.format.config_sha256`).

    A failed write (a full disk: an ``OSError``) leaves nothing behind, and the temporary folders of an earlier
    export that was killed are removed first.

    :param figures: ``(PNG file, caption)`` pairs copied beside the model card, which shows them; the provenance
        lists them (``figures``), replacing any list the given config had.
    """
    out_dir = Path(out_dir)
    figure_files = checked_figures(figures)  # before anything is written
    provenance = {key: value for key, value in config["provenance"].items() if key != FIGURES_KEY}
    if figure_files:
        provenance[FIGURES_KEY] = [{"file": name, "caption": caption} for name, (_, caption) in figure_files.items()]
    config = {**config, "provenance": provenance}
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_temporaries(out_dir)
    tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(out_dir), dir=out_dir.parent))
    try:
        # Serialised in memory, then written by Python: a full disk is an OSError (safetensors' own writer reports
        # it as a SafetensorError), and the bytes hashed are the bytes written.
        weights = save(tensors, metadata={"format": "metra-gym"})
        (tmp / WEIGHTS).write_bytes(weights)
        config = {**config, SHA256_KEY: hashlib.sha256(weights).hexdigest()}
        config[CONFIG_SHA256_KEY] = config_sha256(config)  # last: it covers every other key
        (tmp / CONFIG).write_text(json.dumps(config, indent=1))
        for name, (source, _) in figure_files.items():  # read before out_dir (maybe their folder) is replaced
            (tmp / name).write_bytes(source.read_bytes())
        model_card(config, out_dir.name).save(tmp / CARD)
        give_usual_mode(tmp)  # mkdtemp makes it private; a checkpoint is meant to be shared
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
