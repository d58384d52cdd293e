"""Uploading a skill checkpoint: the folder is checked before anything reaches the Hub."""

import shutil
from pathlib import Path

import pytest

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_checkpoint.hub import resolve_checkpoint
from metra_gym.skill_checkpoint.upload import push_to_hub

BUNDLED = Path(resolve_checkpoint("ant"))


def test_push_to_hub_checks_the_folder_then_uploads_it(tmp_path, monkeypatch):
    calls = []

    class RecordingApi:
        def __init__(self, token=None):
            calls.append(("init", token))

        def create_repo(self, repo_id, private, exist_ok):
            calls.append(("create_repo", repo_id, private))

        def create_branch(self, repo_id, branch, exist_ok):
            calls.append(("create_branch", repo_id, branch))

        def upload_folder(self, folder_path, repo_id, revision, allow_patterns, commit_message):
            calls.append(("upload_folder", Path(folder_path), repo_id, revision, sorted(allow_patterns)))
            return "https://hub/commit/1"

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    assert push_to_hub(BUNDLED, "me/ant", revision="v1") == "https://hub/commit/1"
    assert calls[-1] == ("upload_folder", BUNDLED, "me/ant", "v1", ["README.md", "config.json", "model.safetensors"])
    broken = tmp_path / "broken"
    shutil.copytree(BUNDLED, broken)
    (broken / "model.safetensors").write_bytes(b"\x00" * 10)
    calls.clear()
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        push_to_hub(broken, "me/ant")
    assert calls == []


def test_push_to_hub_uploads_the_cards_figures_and_refuses_a_folder_without_them(tmp_path, monkeypatch):
    import huggingface_hub

    from metra_gym.skill_checkpoint.format import read_config, read_weights
    from metra_gym.skill_checkpoint.writer import write_checkpoint

    uploaded = []

    class RecordingApi:
        def __init__(self, token=None):
            pass

        def create_repo(self, repo_id, private, exist_ok):
            pass

        def upload_folder(self, folder_path, repo_id, revision, allow_patterns, commit_message):
            uploaded.append(sorted(allow_patterns))
            return "https://hub/commit/2"

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    figure = tmp_path / "paths.png"
    figure.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    config = read_config(BUNDLED)
    folder = write_checkpoint(read_weights(BUNDLED, config), config, tmp_path / "ckpt", [(figure, "the paths")])
    assert push_to_hub(folder, "me/ant") == "https://hub/commit/2"
    assert uploaded == [["README.md", "config.json", "model.safetensors", "paths.png"]]
    (folder / "paths.png").unlink()
    with pytest.raises(CheckpointError, match=r"lacks the figures its model card shows \(paths.png\)"):
        push_to_hub(folder, "me/ant")
    assert len(uploaded) == 1
