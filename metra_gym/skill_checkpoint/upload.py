"""Where a skill checkpoint goes: uploading a checkpoint folder to a Hugging Face Hub model repo, checked first."""

from __future__ import annotations

from pathlib import Path

from metra_gym.skill_checkpoint.format import CARD, CONFIG, FIGURES_KEY, WEIGHTS, CheckpointError
from metra_gym.skill_checkpoint.hub import is_repo_id
from metra_gym.skill_policy import SkillPolicy


def push_to_hub(folder: str | Path, repo_id: str, *, revision: str | None = None, private: bool = False,
                token: str | None = None, commit_message: str = "Upload METRA skill checkpoint") -> str:
    """Upload a checkpoint folder (config.json, model.safetensors, README.md and the card's figures) to a Hub model
    repo; return the commit URL. The folder is checked first, so a broken checkpoint is never uploaded."""
    from huggingface_hub import HfApi

    if not is_repo_id(repo_id):
        raise CheckpointError(f"{repo_id!r} is not a valid Hub repo id; write it as 'org/name' (letters, digits, "
                              "'-', '_' and '.'; no '..' or '--')")
    folder = Path(folder)
    # Loading it checks config.json, the weights, their sha256 and that they fit together.
    policy = SkillPolicy.from_pretrained(folder)
    figures = [entry["file"] for entry in policy.config["provenance"].get(FIGURES_KEY, [])]
    missing = [name for name in figures if not (folder / name).is_file()]
    if missing:
        raise CheckpointError(f"{folder} lacks the figures its model card shows ({', '.join(missing)}); export it "
                              "again with metra-pretrain export --figure")
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    if revision:
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, revision=revision,
                             allow_patterns=[CONFIG, WEIGHTS, CARD, *figures], commit_message=commit_message)
    return str(info)
