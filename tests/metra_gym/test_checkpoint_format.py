"""Broken, mistyped or tampered checkpoints are refused with one CheckpointError naming the key or file."""

import hashlib
import json

import numpy as np
import pytest
import torch

from metra_gym.skill_checkpoint.format import FORMAT_VERSION, CheckpointError, config_sha256, read_config, read_weights
from metra_gym.skill_checkpoint.hub import resolve_checkpoint
from metra_gym.skill_policy import SkillPolicy

from .helpers import BUNDLED_NAMES, broken_checkpoint, set_key


def _copy(tmp_path, edit_config=None, edit_weights=None, rehash=True):
    return broken_checkpoint(tmp_path / "ckpt", edit_config, edit_weights, rehash)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("discrete_skills", "false", "'discrete_skills' must be true or false"),
    ("obs_dim", 29.7, "'obs_dim' must be a positive integer, got 29.7"),
    ("obs_dim", True, "'obs_dim' must be a positive integer, got True"),
    ("action_dim", "8", "'action_dim' must be a positive integer"),
    ("skill_dim", 0, "'skill_dim' must be a positive integer"),
    ("format_version", "1", "'format_version' must be a positive integer"),
    ("env_id", 5, "'env_id' must be a non-empty string"),
    ("env_kwargs", [], "'env_kwargs' must be a JSON object"),
    ("action_low", [-1.0] * 7, "'action_low' must be a list of 8 finite numbers"),
    ("action_high", [-2.0] * 8, "'action_high' must be at least action_low"),
    ("actor_hidden", [256, "256"], "'actor_hidden' must be a non-empty list of positive integers"),
    ("phi_hidden", [], "'phi_hidden' must be a non-empty list of positive integers"),
    ("normalizer", None, "'normalizer' must be a JSON object"),
    ("normalizer.std", [1.0] * 28 + [0.0], "'normalizer.std' must be positive in every entry"),
    ("normalizer.std", [1.0] * 28 + [-1.0], "'normalizer.std' must be positive in every entry"),
    ("normalizer.std", [1.0] * 28 + [float("inf")], "'normalizer.std' must be a non-empty list of finite numbers"),
    ("normalizer.mean", [float("nan")] * 29, "'normalizer.mean' must be a non-empty list of finite numbers"),
    ("normalizer.std", [1.0] * 28, r"'normalizer.std' must be as long as normalizer.mean \(29 entries\)"),
    ("provenance", "x", "'provenance' must be a JSON object"),
    ("weights_sha256", "abc", "'weights_sha256' must be the sha256 hex digest"),
    ("skill_posterior_hidden", [0], "'skill_posterior_hidden' must be a non-empty list of positive integers"),
    ("skill_posterior_hidden", "256", "'skill_posterior_hidden' must be a non-empty list of positive integers"),
    ("config_sha256", 5, "'config_sha256' must be the sha256 hex digest of config.json"),
])
def test_every_config_field_is_type_and_value_checked(tmp_path, key, value, message):
    folder = _copy(tmp_path, edit_config=set_key(key, value))
    with pytest.raises(CheckpointError, match=message):
        read_config(folder)


def test_newer_format_and_non_object_config(tmp_path):
    folder = _copy(tmp_path, edit_config=set_key("format_version", FORMAT_VERSION + 1))
    with pytest.raises(CheckpointError, match=f"format version {FORMAT_VERSION + 1}, newer .* upgrade metra-gym"):
        SkillPolicy.from_pretrained(folder)
    (folder / "config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="must hold a JSON object, got list"):
        SkillPolicy.from_pretrained(folder)


def test_normaliser_of_the_wrong_length_for_the_weights(tmp_path):
    def shorten(config):
        config["normalizer"]["mean"] = config["normalizer"]["mean"][:28]
        config["normalizer"]["std"] = config["normalizer"]["std"][:28]

    with pytest.raises(CheckpointError, match="normalizer mean in .* has 28 entries, but obs_dim is 29"):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_config=shorten))


def _poison(tensors):
    tensors["actor.mu.weight"][0, 0] = float("nan")
    tensors["phi.net.0.bias"][1] = float("inf")


def test_non_finite_weights_are_refused(tmp_path):
    with pytest.raises(CheckpointError, match="tensor 'actor.mu.weight' holds 1 NaN or infinite values"):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_weights=_poison))


def test_integer_weights_are_refused(tmp_path):
    def to_int(tensors):
        tensors["actor.mu.bias"] = tensors["actor.mu.bias"].to(torch.int64)

    with pytest.raises(CheckpointError, match="tensor 'actor.mu.bias' has dtype torch.int64, but skill checkpoints "
                                              "hold float32"):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_weights=to_int))


def test_weights_that_do_not_match_the_recorded_sha256_are_refused(tmp_path):
    def nudge(tensors):
        tensors["actor.mu.weight"][0, 0] += 1e-3

    folder = _copy(tmp_path, edit_weights=nudge, rehash=False)
    with pytest.raises(CheckpointError, match="model.safetensors does not match the sha256 recorded in config.json "
                                              r"\(.*\).*re-download or re-export"):
        SkillPolicy.from_pretrained(folder)
    with pytest.raises(CheckpointError, match="does not match the sha256"):
        read_weights(folder)  # without a config argument it reads the folder's config.json


def test_bundled_checkpoints_are_format_2_with_their_hashes():
    for name in BUNDLED_NAMES:
        folder = resolve_checkpoint(name)
        config = read_config(folder)
        assert config["format_version"] == 2 <= FORMAT_VERSION  # tanh actors: the lowest version that reads them
        assert config["weights_sha256"] == hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        # Re-hashed deliberately when config_sha256 came: their weights and every other key are unchanged.
        assert config["config_sha256"] == config_sha256(config)


def test_a_bundled_cards_figures_are_beside_it_and_shown():
    for name in BUNDLED_NAMES:
        folder = resolve_checkpoint(name)
        card = (folder / "README.md").read_text()
        for entry in read_config(folder)["provenance"].get("figures", []):
            assert (folder / entry["file"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f"]({entry['file']})" in card
    assert read_config(resolve_checkpoint("kitchen_state"))["provenance"]["figures"]  # issue 40: paths and tasks


def test_the_current_bundled_cards_are_what_the_writer_writes_today():
    """A card regenerated from its config (``model_card``) after the writer changes, so that bundled cards do not
    drift from exported ones; the released versions (``NAME-0.x``) keep the cards they shipped with."""
    from metra_gym.skill_checkpoint.writer import model_card

    for name in (name for name in BUNDLED_NAMES if "-0." not in name):
        folder = resolve_checkpoint(name)
        assert (folder / "README.md").read_text() == str(model_card(read_config(folder), name)), name


@pytest.mark.parametrize("edit", [
    {"actor_activation": "relu", "format_version": 3},  # tanh weights run as a ReLU actor (issue 45), versions agree
    {"normalizer.std": [1.0] * 29},  # a valid value, another normaliser
    {"env_kwargs": {"reset_noise_scale": 0.5}},
    {"provenance.seed": 7},  # the record of where the skills came from is covered too
], ids=lambda edit: next(iter(edit)))
def test_a_config_json_edited_after_export_is_refused(tmp_path, edit):
    def apply(config):
        for key, value in edit.items():
            set_key(key, value)(config)

    folder = _copy(tmp_path, edit_config=apply, rehash=False)
    with pytest.raises(CheckpointError, match=r"config.json does not match the config_sha256 it records \(.*\): the "
                                              "file was edited or damaged after export; re-download or re-export"):
        SkillPolicy.from_pretrained(folder)


def test_config_sha256_ignores_formatting_and_an_export_records_it(tmp_path):
    folder = _copy(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    reordered = dict(reversed(list(config.items())))
    (folder / "config.json").write_text(json.dumps(reordered, indent=4, sort_keys=False))
    assert read_config(folder) == config  # reformatted and reordered, same content: loads
    from safetensors.torch import load_file

    from metra_gym.skill_checkpoint.writer import write_checkpoint

    bundled = resolve_checkpoint("ant")
    written = write_checkpoint(load_file(bundled / "model.safetensors"), {**config, "actor_activation": "relu",
                                                                          "format_version": 3}, tmp_path / "x")
    # As every export writes it: hashed last, so the file's own hash covers the weights' hash and every other key.
    config = json.loads((written / "config.json").read_text())
    assert config["actor_activation"] == "relu" and config["config_sha256"] == config_sha256(config)
    assert read_config(written) == config


def test_a_checkpoint_written_before_config_sha256_loads_and_refuses_keys_of_later_versions(tmp_path):
    def older(config):
        del config["config_sha256"]

    policy = SkillPolicy.from_pretrained(_copy(tmp_path / "a", edit_config=older))  # earlier Hub uploads
    obs = np.zeros((2, 29), dtype=np.float32)
    np.testing.assert_array_equal(policy.act(obs, [1.0, 0.0]), SkillPolicy.from_pretrained("ant").act(obs, [1.0, 0.0]))
    for key, value, since in (("actor_activation", "relu", 3), ("skill_prior", "gaussian", 4),
                              ("pixels", {"shape": [64, 64, 9], "encoder_channels": [8], "renderer": None}, 4),
                              ("skill_posterior_hidden", [64], 5)):
        folder = _copy(tmp_path / key, edit_config=lambda c, k=key, v=value: (older(c), c.update({k: v})))
        with pytest.raises(CheckpointError, match=f"declares format version 2, which has no '{key}' .version {since} "
                                                  "added it."):
            read_config(folder)
    # The value a key's absence means is no edit: tanh in a version 2 file loads.
    assert read_config(_copy(tmp_path / "tanh", edit_config=lambda c: c.update(actor_activation="tanh")))


def test_a_config_json_nested_too_deeply_is_one_clear_error(tmp_path):
    folder = _copy(tmp_path)
    text = (folder / "config.json").read_text()
    (folder / "config.json").write_text(text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CheckpointError, match="nests arrays or objects too deeply to be read"):
        SkillPolicy.from_pretrained(folder)


def test_format_1_checkpoint_without_a_hash_still_loads(tmp_path):
    def version_1(config):
        config["format_version"] = 1
        del config["weights_sha256"]

    with pytest.warns(UserWarning, match="records no weights_sha256 .format version 1., so model.safetensors cannot "
                                         "be checked"):
        policy = SkillPolicy.from_pretrained(_copy(tmp_path, edit_config=version_1))
    obs = np.zeros((2, 29), dtype=np.float32)
    np.testing.assert_array_equal(policy.act(obs, [1.0, 0.0]), SkillPolicy.from_pretrained("ant").act(obs, [1.0, 0.0]))


def test_a_checkpoint_with_an_unknown_actor_activation_is_one_clear_error(tmp_path):
    def banana(config):
        config["actor_activation"] = "banana"

    with pytest.raises(CheckpointError, match=r"actor_activation.*one of \['tanh', 'relu'\]"):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_config=banana))


def test_the_torch_free_format_names_the_activations_the_networks_build():
    from metra_gym.networks import ACTIVATIONS
    from metra_gym.skill_checkpoint.format import ACTOR_ACTIVATIONS

    assert tuple(ACTIVATIONS) == ACTOR_ACTIVATIONS


def test_a_format_2_checkpoint_without_its_hash_is_refused(tmp_path):
    """Removing weights_sha256 would otherwise switch the check off without a word."""
    folder = _copy(tmp_path, edit_config=lambda config: config.pop("weights_sha256"))
    with pytest.raises(CheckpointError, match="config.json lacks weights_sha256, the sha256 of model.safetensors that "
                                              "format version 2 records, so the weights cannot be checked"):
        SkillPolicy.from_pretrained(folder)


@pytest.mark.parametrize(("key", "value", "tensor"), [
    ("obs_dim", 10**9, r"actor.latent.0.weight: the weights hold \[256, 31\], config.json describes \[256, 1000000002\]"),
    ("actor_hidden", [10**9, 256], r"actor.latent.0.weight: the weights hold \[256, 31\], config.json describes "
                                   r"\[1000000000, 31\]"),
    ("phi_hidden", [256, 10**9], r"phi.net.2.weight: the weights hold \[256, 256\], config.json describes "
                                 r"\[1000000000, 256\]"),
])
def test_absurd_sizes_are_checked_against_the_weights_before_any_allocation(tmp_path, monkeypatch, key, value, tensor):
    from metra_gym import skill_policy

    def no_networks(*args, **kwargs):
        raise AssertionError("a network was built before the sizes were checked")

    monkeypatch.setattr(skill_policy, "SkillActor", no_networks)
    monkeypatch.setattr(skill_policy, "PhiNetwork", no_networks)
    with pytest.raises(CheckpointError, match="do not fit together: size mismatch for " + tensor):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_config=set_key(key, value)))


def test_tensors_missing_or_extra_for_the_config_are_named(tmp_path):
    def swap(tensors):
        tensors["actor.extra"] = tensors.pop("phi.net.4.bias")

    with pytest.raises(CheckpointError, match="missing tensors phi.net.4.bias; unexpected tensors actor.extra"):
        SkillPolicy.from_pretrained(_copy(tmp_path, edit_weights=swap))


def test_a_skill_posterior_must_fit_its_weights(tmp_path):
    """DIAYN's q(z | s) (format 5): config.json's widths and the ``skill_posterior.*`` tensors must agree."""
    folder = _copy(tmp_path, edit_config=lambda config: config.update(skill_posterior_hidden=[64], format_version=5))
    with pytest.raises(CheckpointError, match="missing tensors skill_posterior.net.0.weight"):
        read_weights(folder, read_config(folder))
