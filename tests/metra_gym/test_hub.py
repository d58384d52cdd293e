"""The real Hub download code, offline: a loopback fake Hub (HF_ENDPOINT) and a pre-populated cache."""

import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import constants

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_checkpoint.hub import bundled_checkpoints, resolve_checkpoint
from metra_gym.skill_policy import SkillPolicy
from tests.metra_gym.fake_hub import FakeHub
from tests.metra_gym.helpers import BUNDLED_NAMES, broken_checkpoint, set_key

BUNDLED = Path(resolve_checkpoint("ant"))


@pytest.fixture
def hub(tmp_path, monkeypatch):
    # huggingface_hub reads HF_ENDPOINT / HF_HUB_CACHE at import; patch the constants it reads at call time.
    with FakeHub() as fake:
        monkeypatch.setattr(constants, "ENDPOINT", fake.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", fake.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        fake.cache = tmp_path / "cache"
        yield fake


def test_download_from_fake_hub_fills_the_real_cache_and_loads(hub):
    sha = hub.add_checkpoint("metra/ant-skills", BUNDLED)
    policy = SkillPolicy.from_pretrained("hf://metra/ant-skills")
    reference = SkillPolicy.from_pretrained("ant")
    obs = np.random.default_rng(0).standard_normal((4, 29)).astype(np.float32)
    np.testing.assert_array_equal(policy.act(obs, [1.0, 0.0]), reference.act(obs, [1.0, 0.0]))
    snapshot = hub.cache / "models--metra--ant-skills" / "snapshots" / sha
    assert {p.name for p in snapshot.iterdir()} == {"config.json", "model.safetensors", "README.md"}
    assert (hub.cache / "models--metra--ant-skills" / "refs" / "main").read_text() == sha


def test_revision_by_argument_and_by_at_sign(hub):
    hub.add_checkpoint("metra/ant-skills", BUNDLED, revision="main")
    sha_v1 = hub.add_checkpoint("metra/ant-skills", BUNDLED, revision="v1")
    path_a = resolve_checkpoint("hf://metra/ant-skills@v1")
    path_b = resolve_checkpoint("metra/ant-skills", revision="v1")
    assert path_a == path_b and path_a.name == sha_v1


def test_missing_revision_repo_and_file_are_clear_errors(hub):
    hub.add_checkpoint("metra/ant-skills", BUNDLED)
    with pytest.raises(CheckpointError, match="revision 'nope' does not exist in Hub repo 'metra/ant-skills'"):
        resolve_checkpoint("hf://metra/ant-skills@nope")
    with pytest.raises(CheckpointError, match="Hub repo 'metra/other' does not exist"):
        resolve_checkpoint("metra/other")
    empty = hub.cache.parent / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("no weights")
    hub.add_checkpoint("metra/not-skills", empty)
    with pytest.raises(CheckpointError, match="has no config.json; it is not a metra-gym skill checkpoint"):
        resolve_checkpoint("metra/not-skills")


def test_truncated_download_leaves_nothing_in_place(hub):
    hub.add_checkpoint("metra/ant-skills", BUNDLED)
    hub.truncate.add("model.safetensors")
    with pytest.raises(CheckpointError, match="download of model.safetensors from metra/ant-skills failed"):
        resolve_checkpoint("metra/ant-skills")
    snapshots = list((hub.cache / "models--metra--ant-skills").glob("snapshots/*/model.safetensors"))
    assert snapshots == []


def test_offline_without_cache_is_a_clear_error(hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match="cannot reach the Hugging Face Hub and no cached copy.*HF_HUB_OFFLINE "
                                              "is set, so nothing is downloaded: unset it"):
        resolve_checkpoint("metra/ant-skills")


def test_unreachable_hub_without_cache_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = time.monotonic()
    with pytest.raises(CheckpointError, match="cannot reach the Hugging Face Hub and no cached copy") as error:
        resolve_checkpoint("metra/ant-skills")
    assert "HF_HUB_OFFLINE" not in str(error.value) and "the Hub address is http://127.0.0.1:9" in str(error.value)
    # One refused connection is enough: not huggingface_hub's 5 retries with 1-8 s waits (~24 s).
    assert time.monotonic() - start < 8


def test_unreachable_hub_with_a_cached_copy_uses_it(hub, monkeypatch):
    sha = hub.add_checkpoint("metra/ant-skills", BUNDLED)
    assert resolve_checkpoint("metra/ant-skills").name == sha
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}")
    start = time.monotonic()
    assert resolve_checkpoint("metra/ant-skills").name == sha
    assert time.monotonic() - start < 8


@pytest.mark.parametrize(("reference", "message"), [
    ("hf://../..", "'hf://../..' is not a valid Hub repo id"),
    ("hf://org/..", "is not a valid Hub repo id"),
    ("hf://org--x/name", "is not a valid Hub repo id"),
    ("hf://org/name/extra", "is not a valid Hub repo id"),
    ("hf://-org/name", "is not a valid Hub repo id"),
    ("hf://", "is not a valid Hub repo id"),
    ("hf://org/name@", "'' is not a valid revision of Hub repo 'org/name'"),
    ("hf://org/name@a b", "'a b' is not a valid revision"),
    ("hf://org/name@../main", "is not a valid revision"),
])
def test_malformed_hub_references_are_clear_errors(reference, message):
    with pytest.raises(CheckpointError, match=message):
        resolve_checkpoint(reference)


def test_hub_policy_pickles_pinned_to_its_commit(hub, monkeypatch):
    sha = hub.add_checkpoint("metra/ant-skills", BUNDLED)
    policy = SkillPolicy.from_pretrained("metra/ant-skills")
    assert policy.reference == f"hf://metra/ant-skills@{sha}"
    data = pickle.dumps(policy)
    hub.add_checkpoint("metra/ant-skills", resolve_checkpoint("half_cheetah"), sha="f" * 40)  # main moves on
    clone = pickle.loads(data)
    assert clone.reference == policy.reference and clone.source == "metra/ant-skills" and clone.obs_dim == 29
    assert SkillPolicy.from_pretrained("metra/ant-skills").obs_dim == 18  # while main is the new one
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # the pinned commit also comes from the cache offline
    assert pickle.loads(data).obs_dim == 29


def test_prepopulated_cache_with_hf_hub_offline_in_a_fresh_process(tmp_path):
    """What a user on an air-gapped machine does: copy the cache, set HF_HUB_OFFLINE=1 and HF_HUB_CACHE."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "cache" / "models--metra--ant-skills"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    shutil.copytree(BUNDLED, repo / "snapshots" / sha)
    code = ("import metra_gym, gymnasium as gym; env = gym.make('metra/AntSkills-v0', checkpoint='hf://metra/ant-skills');"
            "env.reset(seed=0); print(env.step(env.action_space.sample())[4]['skill_steps'])")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "cache"), "HF_ENDPOINT": "http://127.0.0.1:9"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "25"


def test_hf_endpoint_variable_in_a_fresh_process(tmp_path):
    """The user-level route: HF_ENDPOINT set before Python starts, gym.make with a Hub checkpoint."""
    with FakeHub() as fake:
        fake.add_checkpoint("metra/ant-skills", BUNDLED, revision="v2")
        code = ("import metra_gym, gymnasium as gym;"
                "env = gym.make('metra/AntSkills-v0', checkpoint='metra/ant-skills', revision='v2');"
                "print(env.reset(seed=0)[0].shape)")
        env = {**os.environ, "HF_ENDPOINT": fake.endpoint, "HF_HUB_CACHE": str(tmp_path / "cache")}
        env.pop("HF_HUB_OFFLINE", None)
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "(29,)"
        assert any("/metra/ant-skills/resolve/v2/model.safetensors" in r for r in fake.requests)


def test_bundled_names():
    assert set(BUNDLED_NAMES) <= set(bundled_checkpoints())


def test_a_mistyped_local_path_that_reads_as_a_repo_id_says_so(hub, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no 'runs' folder here: 'runs/my_ckpt' is a Hub repo id
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match=r"no cached copy.*\(no local folder runs/my_ckpt exists either; write "
                                              r"a local path as ./runs/my_ckpt\)"):
        resolve_checkpoint("runs/my_ckpt")


def test_a_hub_checkpoint_written_before_config_sha256_loads_and_an_edited_one_is_refused(hub, tmp_path):
    """Checkpoints uploaded by earlier versions record no config_sha256 and still load; one whose config.json was
    edited on the Hub after export does not, as a local one does not."""
    def older(config):
        del config["config_sha256"]

    hub.add_checkpoint("metra/old-skills", broken_checkpoint(tmp_path / "old", edit_config=older))
    obs = np.random.default_rng(0).standard_normal((4, 29)).astype(np.float32)
    np.testing.assert_array_equal(SkillPolicy.from_pretrained("metra/old-skills").act(obs, [0.0, 1.0]),
                                  SkillPolicy.from_pretrained("ant").act(obs, [0.0, 1.0]))
    edited = broken_checkpoint(tmp_path / "edited", edit_config=set_key("normalizer.std", [2.0] * 29), rehash=False)
    hub.add_checkpoint("metra/edited-skills", edited)
    with pytest.raises(CheckpointError, match="config.json does not match the config_sha256 it records"):
        SkillPolicy.from_pretrained("hf://metra/edited-skills")
