"""Where a skill checkpoint comes from: a bundled name, a local folder, or a Hugging Face Hub repository."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from metra_gym.skill_checkpoint.format import CARD, CONFIG, WEIGHTS, CheckpointError
from metra_gym.version import __version__

HUB_PREFIX = "hf://"
# The Hub's own rules (huggingface_hub's validate_repo_id), with the namespace required: "org/name", each part of
# ASCII letters, digits, "-", "_", "." that starts and ends with a letter, digit or "_"; no "--" or ".." anywhere.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"^{_PART}/{_PART}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_repo_id(text: str) -> bool:
    """Whether ``text`` is a Hub repo id ``org/name`` by the Hub's own rules."""
    return bool(_REPO_ID.match(text)) and "--" not in text and ".." not in text and not text.endswith(".git")


def _is_local_path(checkpoint: str | Path) -> bool:
    """Whether ``checkpoint`` names a local folder rather than a bundled name or a Hub repo: a Path, an existing
    path, a string that starts with ``./``, ``../``, ``/`` or ``~``, or one whose parent folder exists (``runs/x``
    with a ``runs`` folder here). ``org/name`` without such a folder stays a Hub repo id."""
    if isinstance(checkpoint, Path):
        return True
    text = str(checkpoint)
    if text.startswith(HUB_PREFIX):
        return False
    if Path(text).exists() or text.startswith(("./", "../", "/", "~", ".\\", "..\\")):
        return True
    parent = Path(text).parent
    return "/" in text.rstrip("/") and parent != Path(".") and parent.is_dir()


def bundled_checkpoints() -> list[str]:
    """Names of the checkpoints shipped inside the package."""
    root = resources.files("metra_gym") / "bundled"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / CONFIG).is_file())


def parse_hub_reference(checkpoint: str, revision: str | None = None) -> tuple[str, str | None]:
    """``hf://org/name@rev`` or ``org/name`` (with ``revision``) -> (repo_id, revision).

    :raises CheckpointError: for a malformed repo id or revision (``hf://../..``, ``hf://org/name@``, ...).
    """
    if revision is not None and not isinstance(revision, str):
        raise CheckpointError(f"revision must be a string (branch, tag or commit), got {revision!r}")
    reference = checkpoint[len(HUB_PREFIX):] if checkpoint.startswith(HUB_PREFIX) else checkpoint
    if "@" in reference:
        reference, at_revision = reference.split("@", 1)
        if revision is not None and revision != at_revision:
            raise CheckpointError(f"two revisions given for {checkpoint!r}: {at_revision!r} and {revision!r}")
        revision = at_revision
    if not is_repo_id(reference):
        raise CheckpointError(f"{checkpoint!r} is not a valid Hub repo id; write it as 'org/name' or "
                              "'hf://org/name@rev' (letters, digits, '-', '_' and '.'; no '..' or '--')")
    # A revision goes into the URL path quoted, but an empty one or one with spaces or '..' is always a mistake.
    if revision is not None and (not revision or ".." in revision or "@" in revision
                                 or any(c.isspace() or not c.isprintable() for c in revision)):
        raise CheckpointError(f"{revision!r} is not a valid revision of Hub repo {reference!r}; give a branch, tag "
                              "or commit hash")
    return reference, revision


def locate_checkpoint(checkpoint: str | Path, revision: str | None = None) -> tuple[Path, str]:
    """The local folder of a checkpoint and a reference that names exactly it from any working directory: the
    bundled name, the absolute folder path, or ``hf://org/name@<commit>`` (what a pickled policy reloads)."""
    text = str(checkpoint)
    if not text.strip():
        raise CheckpointError(f"the checkpoint name is empty; give a bundled name {bundled_checkpoints()}, a local "
                              "folder, or a Hub repo as 'org/name' or 'hf://org/name@rev'")
    if _is_local_path(checkpoint):
        folder = Path(text).expanduser()
        if not folder.exists():
            raise CheckpointError(f"no such folder: {folder} (a skill checkpoint is a folder with {CONFIG} and "
                                  f"{WEIGHTS}); check the path")
        if not folder.is_dir():
            raise CheckpointError(f"{folder} is a file; a skill checkpoint is a folder with {CONFIG} and {WEIGHTS}")
        if revision is not None:
            raise CheckpointError(f"{folder} is a local folder, which has no revisions; leave revision out, or name "
                                  f"a Hub repo ('org/name') for revision {revision!r}")
        return folder, str(folder.resolve())
    if text in bundled_checkpoints():
        if revision is not None:
            raise CheckpointError(f"{text!r} is a checkpoint bundled with metra-gym, which has no revisions; leave "
                                  f"revision out, or name a Hub repo ('org/name') for revision {revision!r}")
        return Path(str(resources.files("metra_gym") / "bundled" / text)), text
    if text.startswith(HUB_PREFIX) or _REPO_ID.match(text.split("@")[0]):
        repo_id, revision = parse_hub_reference(text, revision)
        try:
            folder = download_from_hub(repo_id, revision)
        except CheckpointError as error:
            if text.startswith(HUB_PREFIX):
                raise
            # 'runs/ckpt' reads as a Hub repo id when no 'runs' folder exists here; a mistyped path reads so too.
            raise CheckpointError(f"{error} (no local folder {text} exists either; write a local path as "
                                  f"./{text})") from None
        # The cache's snapshot folder is named by the commit: pin it, so a reload gets these very files.
        return folder, f"{HUB_PREFIX}{repo_id}@{folder.name if _COMMIT.match(folder.name) else revision or 'main'}"
    raise CheckpointError(f"unknown checkpoint {text!r}: bundled names are {bundled_checkpoints()}; "
                          "or pass checkpoint= a local folder, or a Hub repo as 'org/name' or 'hf://org/name@rev'")


def resolve_checkpoint(checkpoint: str | Path, revision: str | None = None) -> Path:
    """A local folder holding ``config.json`` and ``model.safetensors`` for any way of naming a checkpoint."""
    return locate_checkpoint(checkpoint, revision)[0]


def _hub_unreachable(repo_id: str, revision: str | None) -> bool:
    """Whether one HEAD request for the checkpoint's config.json fails before the Hub answers (connection refused,
    DNS failure, timeout after ``HF_HUB_ETAG_TIMEOUT`` seconds).

    Why: when no cached copy exists, ``hf_hub_download`` retries such a failure 5 times with 1-8 s waits (~24 s,
    or minutes when each try times out), and huggingface_hub offers no setting for it. One failed probe sends us
    to the cache instead, which either has the files or gives the clear "cannot reach" error at once.
    """
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, HTTPError


    try:
        get_hf_file_metadata(hf_hub_url(repo_id, CONFIG, revision=revision), timeout=constants.HF_HUB_ETAG_TIMEOUT,
                             library_name="metra-gym", library_version=__version__)
    except HfHubHTTPError:
        return False  # the Hub answered (404, 401, 5xx, ...): hf_hub_download reports or retries it
    except (HTTPError, OSError):
        return True
    return False


def _cache_only(repo_id: str, revision: str | None) -> bool:
    """Whether to read the checkpoint from the Hugging Face cache only: offline mode, or an unreachable Hub."""
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.is_offline_mode():
        return True
    if revision and _COMMIT.match(revision) and all(
            isinstance(try_to_load_from_cache(repo_id, name, revision=revision), str) for name in (CONFIG, WEIGHTS)):
        return False  # hf_hub_download serves a cached commit without any request
    return _hub_unreachable(repo_id, revision)


def _how_to_download() -> str:
    """What to change so that a download is tried and can succeed: offline mode, or the Hub address."""
    import os

    from huggingface_hub import constants

    if constants.is_offline_mode():
        return "HF_HUB_OFFLINE is set, so nothing is downloaded: unset it to download the checkpoint"
    endpoint = f"{constants.ENDPOINT}, set by HF_ENDPOINT" if os.environ.get("HF_ENDPOINT") else constants.ENDPOINT
    return f"connect to the network once to download it (the Hub address is {endpoint})"


def download_from_hub(repo_id: str, revision: str | None = None) -> Path:
    """Fetch a checkpoint file by file into the Hugging Face cache (which writes each file completely or not at
    all) and return its snapshot folder. Works offline from the cache with ``HF_HUB_OFFLINE=1``."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        HTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )


    where = f"{repo_id}@{revision}" if revision else repo_id
    cache_only = _cache_only(repo_id, revision)
    paths = {}
    for filename in (CONFIG, WEIGHTS, CARD):
        try:
            paths[filename] = hf_hub_download(repo_id, filename, revision=revision, library_name="metra-gym",
                                              library_version=__version__, local_files_only=cache_only)
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
                                  f"exists; {_how_to_download()}, or pass a local checkpoint folder") from None
        except EntryNotFoundError:
            if filename == CARD:
                continue
            raise CheckpointError(f"Hub repo {where} has no {filename}; it is not a metra-gym skill checkpoint") from None
        except (OSError, HfHubHTTPError, HTTPError) as error:
            # A broken or cut-short transfer: the cache only ever renames complete files into place.
            raise CheckpointError(f"download of {filename} from {where} failed ({type(error).__name__}: "
                                  f"{str(error).splitlines()[0]}); nothing was kept, try again") from None
    folders = {Path(p).parent for p in paths.values()}
    if len(folders) != 1:
        raise CheckpointError(f"the files of {where} resolved to different revisions; pass an explicit revision")
    return folders.pop()
