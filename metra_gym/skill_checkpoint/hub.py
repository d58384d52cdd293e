"""Where a skill checkpoint comes from: a bundled name, a local folder, or a Hugging Face Hub repository."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from metra_gym.skill_checkpoint.format import CARD, CONFIG, WEIGHTS, CheckpointError

HUB_PREFIX = "hf://"
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def bundled_checkpoints() -> list[str]:
    """Names of the checkpoints shipped inside the package."""
    root = resources.files("metra_gym") / "bundled"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / CONFIG).is_file())


def parse_hub_reference(checkpoint: str, revision: str | None = None) -> tuple[str, str | None]:
    """``hf://org/name@rev`` or ``org/name`` (with ``revision``) -> (repo_id, revision)."""
    reference = checkpoint[len(HUB_PREFIX):] if checkpoint.startswith(HUB_PREFIX) else checkpoint
    if "@" in reference:
        reference, at_revision = reference.split("@", 1)
        if revision is not None and revision != at_revision:
            raise CheckpointError(f"two revisions given for {checkpoint!r}: {at_revision!r} and {revision!r}")
        revision = at_revision
    if not _REPO_ID.match(reference):
        raise CheckpointError(f"{checkpoint!r} is not a Hub repo id; write it as 'org/name' or 'hf://org/name@rev'")
    return reference, revision


def resolve_checkpoint(checkpoint: str | Path, revision: str | None = None) -> Path:
    """A local folder holding ``config.json`` and ``model.safetensors`` for any way of naming a checkpoint."""
    text = str(checkpoint)
    if isinstance(checkpoint, Path) or Path(text).exists():
        folder = Path(text)
        if not folder.is_dir():
            raise CheckpointError(f"{folder} is a file; a skill checkpoint is a folder with {CONFIG} and {WEIGHTS}")
        return folder
    if text in bundled_checkpoints():
        return Path(str(resources.files("metra_gym") / "bundled" / text))
    if text.startswith(HUB_PREFIX) or _REPO_ID.match(text.split("@")[0]):
        return download_from_hub(*parse_hub_reference(text, revision))
    raise CheckpointError(f"unknown checkpoint {text!r}: bundled names are {bundled_checkpoints()}; "
                          "or give a local folder, or a Hub repo as 'org/name' or 'hf://org/name@rev'")


def download_from_hub(repo_id: str, revision: str | None = None) -> Path:
    """Fetch a checkpoint file by file into the Hugging Face cache (which writes each file completely or not at
    all) and return its snapshot folder. Works offline from the cache with ``HF_HUB_OFFLINE=1``."""
    import httpx2 as httpx
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    import metra_gym

    where = f"{repo_id}@{revision}" if revision else repo_id
    paths = {}
    for filename in (CONFIG, WEIGHTS, CARD):
        try:
            paths[filename] = hf_hub_download(repo_id, filename, revision=revision, library_name="metra-gym",
                                              library_version=metra_gym.__version__)
        except RevisionNotFoundError:
            raise CheckpointError(f"revision {revision!r} does not exist in Hub repo {repo_id!r}; "
                                  "give an existing branch, tag or commit") from None
        except RepositoryNotFoundError:
            raise CheckpointError(f"Hub repo {repo_id!r} does not exist or is private (log in with "
                                  "`hf auth login` for a private one)") from None
        except LocalEntryNotFoundError:
            if filename == CARD:
                continue
            raise CheckpointError(f"cannot reach the Hugging Face Hub and no cached copy of {filename} of {where} "
                                  "exists; connect to the network once (or unset HF_HUB_OFFLINE) to download it, "
                                  "or pass a local checkpoint folder") from None
        except EntryNotFoundError:
            if filename == CARD:
                continue
            raise CheckpointError(f"Hub repo {where} has no {filename}; it is not a metra-gym skill checkpoint") from None
        except (OSError, HfHubHTTPError, httpx.HTTPError) as error:
            # A broken or cut-short transfer: the cache only ever renames complete files into place.
            raise CheckpointError(f"download of {filename} from {where} failed ({type(error).__name__}: "
                                  f"{str(error).splitlines()[0]}); nothing was kept, try again") from None
    folders = {Path(p).parent for p in paths.values()}
    if len(folders) != 1:
        raise CheckpointError(f"the files of {where} resolved to different revisions; pass an explicit revision")
    return folders.pop()


def push_to_hub(folder: str | Path, repo_id: str, *, revision: str | None = None, private: bool = False,
                token: str | None = None, commit_message: str = "Upload METRA skill checkpoint") -> str:
    """Upload a checkpoint folder (config.json, model.safetensors, README.md) to a Hub model repo; return the
    commit URL. The folder is checked first, so a broken checkpoint is never uploaded."""
    from huggingface_hub import HfApi

    from metra_gym.skill_checkpoint.format import read_config, read_weights

    folder = Path(folder)
    read_config(folder)
    read_weights(folder)
    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    if revision:
        api.create_branch(repo_id, branch=revision, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, revision=revision,
                             allow_patterns=[CONFIG, WEIGHTS, CARD], commit_message=commit_message)
    return str(info)
