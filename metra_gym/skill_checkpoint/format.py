"""The pickle-free skill checkpoint: a folder with ``model.safetensors`` and ``config.json``.

``model.safetensors`` holds the skill actor (``actor.*``; with ``skill_dim`` 0, an exploration method's plain policy
pi(a | s)), phi (``phi.*``; METRA, LSD) and DIAYN's q(z | s) (``skill_posterior.*``) as float32 tensors;
``config.json`` says what they need (environment, observation normaliser, skill space, network shape) and
where they came from (training provenance). A model card ``README.md`` may sit beside them.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import reprlib
import warnings
from pathlib import Path
from typing import Any, NoReturn

from metra_gym.skill_priors import SKILL_PRIORS, UNIT

# Version 2 adds ``weights_sha256``, the sha256 hex digest of model.safetensors, required from then on; version 1
# checkpoints (without it) still load, with a warning that their weights cannot be checked. Version 3 adds the
# optional ``actor_activation`` (absent: tanh); an export writes 3 only when it is not tanh, so that a reader of
# version 2 refuses a ReLU actor instead of running it with tanh. Version 4 adds the optional ``skill_prior`` of
# continuous skills (absent: unit vectors), written only when it is another prior, and optional ``pixels`` (absent or
# null: state observations): skills trained on images, with the encoders' input and the renderer of their frames.
# Only such checkpoints are written as 4, so that older readers refuse them instead of projecting N(0, I) skills to
# unit length or feeding frames to a state network. Version 5 adds the optional ``skill_posterior_hidden`` (absent or
# null: none) with the tensors ``skill_posterior.net.*``: the mean of DIAYN's discriminator q(z | s) (state skills),
# which picks the skill of a goal for zero-shot goal reaching; written as 5 only when present. Version 6 allows
# ``skill_dim`` 0: the plain policy pi(a | s) of an exploration method (ICM, RND, ...), which no skill environment
# runs; only such checkpoints are written as 6, so that older readers refuse them.
#
# ``config_sha256`` (any version; written by every export from now on) is the sha256 of config.json's content
# without itself (:func:`config_sha256`), so that an edit of config.json after export is refused as
# ``weights_sha256`` refuses one of the weights. It needs no new version: a reader that does not know it ignores it
# and reads the rest correctly. Checkpoints written before it (earlier Hub uploads) load as before; in them, a key
# of a later version than the one they declare is refused (a ``relu`` actor_activation added to a version 2 file).
FORMAT_VERSION = 6
PLAIN_POLICY_VERSION = 6
POSTERIOR_KEY = "skill_posterior_hidden"
PIXELS_KEY = "pixels"
# The keys (and the value their absence means) that each later version added: a file declaring an older version
# does not hold them with another value.
KEYS_SINCE_VERSION = {"actor_activation": (3, "tanh"), "skill_prior": (4, UNIT), PIXELS_KEY: (4, None),
                      POSTERIOR_KEY: (5, None)}
ACTOR_ACTIVATIONS = ("tanh", "relu")  # the keys of metra_gym.networks.ACTIVATIONS (this module stays torch-free)
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
CARD = "README.md"
# The model card's figures (PNG files beside the card, listed with their captions in the provenance); the
# networks do not need them, so a checkpoint is read and loaded the same with or without them. Plain file names (the
# Hub's upload patterns are globs, and Markdown links end at a space or a parenthesis) and one-line captions.
FIGURES_KEY = "figures"
FIGURE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.png$")
REQUIRED_KEYS = ("format_version", "env_id", "env_kwargs", "obs_dim", "action_dim", "action_low", "action_high",
                 "skill_dim", "discrete_skills", "actor_hidden", "phi_hidden", "normalizer", "provenance")
SHA256_KEY = "weights_sha256"
CONFIG_SHA256_KEY = "config_sha256"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHORT = reprlib.Repr()
_SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother = 4, 60, 60


class CheckpointError(ValueError):
    """A skill checkpoint that cannot be used; the message names the file and the fix."""


def read_config(folder: Path) -> dict[str, Any]:
    """Read ``config.json`` of a checkpoint folder and check the type and value of every field it must have.

    :param folder: the checkpoint folder.
    :return: the parsed config.
    :raises CheckpointError: naming the file, the key and the fix, for a missing, unreadable or invalid file.
    """
    path = Path(folder) / CONFIG
    if not path.is_file():
        raise CheckpointError(f"{folder} is not a skill checkpoint: {CONFIG} is missing "
                              f"(export one with `metra-pretrain export RUN_DIR OUT_DIR`)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON ({error}); re-export or re-download the checkpoint") from None
    except RecursionError:  # arrays or objects nested deeper than Python's parser recurses
        raise CheckpointError(f"{path} nests arrays or objects too deeply to be read (a checkpoint's config.json "
                              "nests a few levels); re-export or re-download the checkpoint") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path} must hold a JSON object, got {type(config).__name__}; re-export the checkpoint")
    missing = [key for key in REQUIRED_KEYS if key not in config]
    if missing:
        raise CheckpointError(f"{path} lacks {', '.join(missing)}; re-export the checkpoint with this version")
    _check_fields(config, path)
    _check_config_sha256(config, path)
    return config


def config_sha256(config: dict[str, Any]) -> str:
    """The sha256 hex digest of a checkpoint's config.json content without ``config_sha256`` itself: of its JSON with
    sorted keys and no spaces, so that reformatting the file (indentation, key order) keeps it and a changed value
    does not."""
    content = {key: value for key, value in config.items() if key != CONFIG_SHA256_KEY}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _check_config_sha256(config: dict[str, Any], path: Path) -> None:
    """Refuse a config.json whose content is not the one its ``config_sha256`` was computed on."""
    expected = config.get(CONFIG_SHA256_KEY)
    if expected is None:  # written before config_sha256 existed
        return
    try:
        actual = config_sha256(config)
    except (RecursionError, ValueError):  # nested too deeply to write again; a value JSON cannot hold
        actual = None
    if actual != expected:
        raise CheckpointError(f"{path} does not match the {CONFIG_SHA256_KEY} it records ({expected[:12]}...): the "
                              "file was edited or damaged after export; re-download or re-export the checkpoint")


def _is_int(value: Any) -> bool:
    # JSON true/false load as bool, a subclass of int: they are never counts.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(value: Any, length: int | None = None) -> bool:
    """A list of finite numbers (of ``length`` entries when given)."""
    return (isinstance(value, list) and (length is None or len(value) == length)
            and all(_is_number(v) for v in value))


def _check_fields(config: dict[str, Any], path: Path) -> None:
    """One CheckpointError naming the first key of ``config`` whose type or value is wrong."""

    def fail(key: str, expected: str) -> NoReturn:
        value = config[key] if "." not in key else config["normalizer"].get(key.split(".")[1])
        raise CheckpointError(f"{path}: {key!r} must be {expected}, got {_SHORT.repr(value)} "
                              f"({type(value).__name__}); re-export the checkpoint (or correct {CONFIG})")

    version = config["format_version"]
    if not _is_int(version) or version < 1:
        fail("format_version", "a positive integer")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{path} has format version {version}, newer than this metra-gym reads "
                              f"({FORMAT_VERSION}); upgrade metra-gym")
    if not isinstance(config["env_id"], str) or not config["env_id"]:
        fail("env_id", "a non-empty string (a Gymnasium env id)")
    if not isinstance(config["env_kwargs"], dict):
        fail("env_kwargs", "a JSON object of keyword arguments")
    for key in ("obs_dim", "action_dim"):
        if not _is_int(config[key]) or config[key] < 1:
            fail(key, "a positive integer")
    plain_allowed = version >= PLAIN_POLICY_VERSION
    if not _is_int(config["skill_dim"]) or config["skill_dim"] < (0 if plain_allowed else 1):
        fail("skill_dim", "a positive integer" + (", or 0 for a plain policy without skills" if plain_allowed else ""))
    action_dim = config["action_dim"]
    for key in ("action_low", "action_high"):
        if not _numbers(config[key], action_dim):
            fail(key, f"a list of {action_dim} finite numbers (action_dim)")
    if not all(low <= high for low, high in zip(config["action_low"], config["action_high"])):
        fail("action_high", "at least action_low in every entry")
    if not isinstance(config["discrete_skills"], bool):
        fail("discrete_skills", "true or false (a JSON boolean, not a string)")
    if config["skill_dim"] == 0 and config["discrete_skills"]:
        fail("discrete_skills", "false for a plain policy (skill_dim 0)")
    for key in ("actor_hidden", "phi_hidden"):
        hidden = config[key]
        if key == "phi_hidden" and hidden is None:  # an algorithm without a representation (DIAYN, DADS, CIC)
            continue
        if not isinstance(hidden, list) or not hidden or not all(_is_int(w) and w >= 1 for w in hidden):
            fail(key, "a non-empty list of positive integers (hidden layer widths)"
                 + (", or null for a checkpoint without phi" if key == "phi_hidden" else ""))
    posterior = config.get(POSTERIOR_KEY)
    if posterior is not None and (not isinstance(posterior, list) or not posterior
                                  or not all(_is_int(w) and w >= 1 for w in posterior)):
        fail(POSTERIOR_KEY, "a non-empty list of positive integers (hidden layer widths), or null")
    if posterior is not None and config.get(PIXELS_KEY) is not None:
        fail(POSTERIOR_KEY, "null for skills trained on pixels (only state skills carry q(z | s))")
    if config.get("actor_activation", "tanh") not in ACTOR_ACTIVATIONS:
        fail("actor_activation", f"one of {list(ACTOR_ACTIVATIONS)}")
    if config.get("skill_prior", UNIT) not in SKILL_PRIORS:
        fail("skill_prior", f"one of {list(SKILL_PRIORS)} (the prior of continuous skills)")
    normalizer = config["normalizer"]
    if not isinstance(normalizer, dict) or not {"mean", "std"} <= normalizer.keys():
        fail("normalizer", 'a JSON object with "mean" and "std"')
    # Their length is checked against the weights by SkillPolicy: when obs_dim itself is wrong, the weights say so.
    for key in ("mean", "std"):
        if not _numbers(normalizer[key]) or not normalizer[key]:
            fail(f"normalizer.{key}", "a non-empty list of finite numbers")
    if len(normalizer["mean"]) != len(normalizer["std"]):
        fail("normalizer.std", f"as long as normalizer.mean ({len(normalizer['mean'])} entries)")
    if not all(std > 0 for std in normalizer["std"]):
        fail("normalizer.std", "positive in every entry (observations are divided by it)")
    if not isinstance(config["provenance"], dict):
        fail("provenance", "a JSON object")
    figures = config["provenance"].get(FIGURES_KEY, [])
    if not (isinstance(figures, list) and all(isinstance(entry, dict) and is_figure_entry(entry) for entry in figures)
            and len({entry["file"] for entry in figures}) == len(figures)):
        raise CheckpointError(f"{path}: provenance {FIGURES_KEY!r} must be a list of {{\"file\": a plain NAME.png, "
                              f"\"caption\": one line}}, each file once, got {_SHORT.repr(figures)}; re-export the "
                              f"checkpoint (or correct {CONFIG})")
    if SHA256_KEY not in config and version >= 2:
        raise CheckpointError(f"{path} lacks {SHA256_KEY}, the sha256 of {WEIGHTS} that format version {version} "
                              "records, so the weights cannot be checked; re-export or re-download the checkpoint")
    if config.get(PIXELS_KEY) is not None:
        _check_pixels(config[PIXELS_KEY], fail)
    if SHA256_KEY in config and not (isinstance(config[SHA256_KEY], str) and _SHA256.match(config[SHA256_KEY])):
        fail(SHA256_KEY, "the sha256 hex digest of model.safetensors (64 lowercase hex digits)")
    if CONFIG_SHA256_KEY in config and not (isinstance(config[CONFIG_SHA256_KEY], str)
                                            and _SHA256.match(config[CONFIG_SHA256_KEY])):
        fail(CONFIG_SHA256_KEY, f"the sha256 hex digest of {CONFIG} without it (64 lowercase hex digits)")
    for key, (since, absent) in KEYS_SINCE_VERSION.items():
        if config.get(key, absent) != absent and version < since:
            raise CheckpointError(f"{path} declares format version {version}, which has no {key!r} (version {since} "
                                  f"added it), but gives {key} {_SHORT.repr(config[key])}: the file was edited after "
                                  "export; re-download or re-export the checkpoint")


def is_figure_entry(entry: dict[str, Any]) -> bool:
    """Whether a model card figure's entry is ``{"file": a plain NAME.png, "caption": a non-empty line}``."""
    file, caption = entry.get("file"), entry.get("caption")
    return (isinstance(file, str) and FIGURE_NAME.match(file) is not None and isinstance(caption, str)
            and caption.strip() != "" and "\n" not in caption and "\r" not in caption)


def _check_pixels(pixels: Any, fail: Any) -> None:
    """The ``pixels`` entry of a pixel checkpoint: ``{"shape": [H, W, C], "encoder_channels": [...], "renderer":
    {"cheap_render": bool, "frame_size": int} or null}`` (null: an environment without a renderer choice)."""
    expected = ('a JSON object {"shape": [H, W, C], "encoder_channels": [positive integers], "renderer": '
                '{"cheap_render": true or false, "frame_size": a positive integer} or null}')
    if not isinstance(pixels, dict) or not {"shape", "encoder_channels", "renderer"} <= pixels.keys():
        fail(PIXELS_KEY, expected)
    for key, length in (("shape", 3), ("encoder_channels", None)):
        value = pixels[key]
        if not isinstance(value, list) or not value or (length and len(value) != length) \
                or not all(_is_int(v) and v >= 1 for v in value):
            fail(PIXELS_KEY, expected)
    renderer = pixels["renderer"]
    if renderer is not None and not (isinstance(renderer, dict) and isinstance(renderer.get("cheap_render"), bool)
                                     and _is_int(renderer.get("frame_size")) and renderer["frame_size"] >= 1):
        fail(PIXELS_KEY, expected)


def read_weights(folder: Path, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load ``model.safetensors`` as torch tensors, turning a missing, truncated, corrupted, tampered or
    non-finite file into one error.

    :param folder: the checkpoint folder.
    :param config: its parsed ``config.json``; read from the folder when None and the file exists. When it records
        ``weights_sha256`` (format version 2), the file must have that sha256.
    :return: the tensors by name (``actor.*``, ``phi.*``), float32 and finite.
    :raises CheckpointError: naming the file and the fix.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load

    from metra_gym.networks import single_threaded

    path = Path(folder) / WEIGHTS
    if not path.is_file():
        raise CheckpointError(f"{path} is missing; re-export or re-download the checkpoint")
    if config is None and (Path(folder) / CONFIG).is_file():
        config = read_config(folder)
    data = path.read_bytes()  # read once: the bytes hashed are the bytes loaded
    try:
        # One torch thread: a parallel copy would start OpenMP's pool, which hangs processes forked later.
        with single_threaded():
            tensors = load(data)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or corrupted ({error}); delete it and re-download or "
                              "re-export the checkpoint") from None
    # Checked after parsing, so that a cut-short file is reported as such; a file that parses but differs from
    # the one exported is reported here.
    expected = (config or {}).get(SHA256_KEY)
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise CheckpointError(f"{path} does not match the sha256 recorded in {CONFIG} ({expected[:12]}...): the "
                              "file was changed or damaged after export; re-download or re-export the checkpoint")
    if config is not None and expected is None:  # format version 1 (a later one without it fails in read_config)
        warnings.warn(f"{Path(folder) / CONFIG} records no {SHA256_KEY} (format version 1), so {WEIGHTS} cannot be "
                      "checked against corruption or tampering; re-export it with this version", stacklevel=2)
    _check_tensors(tensors, path)
    if config is not None:
        check_shapes(config, {name: tuple(tensor.shape) for name, tensor in tensors.items()}, Path(folder))
    return tensors


def expected_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor the networks of a checked ``config.json`` hold (the layout of
    :class:`metra_gym.networks.SkillActor` and :class:`~metra_gym.networks.PhiNetwork`: linear layers at even
    indices of a ``Sequential``, activations between them)."""

    def mlp(prefix: str, in_dim: int, hidden: list[int], out_dim: int) -> dict[str, tuple[int, ...]]:
        sizes = [in_dim, *hidden, out_dim]
        shapes: dict[str, tuple[int, ...]] = {}
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            shapes[f"{prefix}{2 * i}.weight"], shapes[f"{prefix}{2 * i}.bias"] = (b, a), (b,)
        return shapes

    obs_dim, skill_dim, action_dim = config["obs_dim"], config["skill_dim"], config["action_dim"]
    actor_hidden = config["actor_hidden"]
    encoders: dict[str, tuple[int, ...]] = {}
    pixels = config.get(PIXELS_KEY)
    if pixels is not None:  # each network reads the frames through its own CNN (metra_gym.networks.PixelEncoder)
        encoders, obs_dim = _encoder_shapes(pixels)
    shapes = mlp("actor.latent.", obs_dim + skill_dim, actor_hidden[:-1], actor_hidden[-1])
    shapes.update({f"actor.{name}": shape for name, shape in encoders.items()})
    for head in ("mu", "log_std"):
        shapes[f"actor.{head}.weight"], shapes[f"actor.{head}.bias"] = (action_dim, actor_hidden[-1]), (action_dim,)
    if config["phi_hidden"] is not None:
        shapes.update(mlp("phi.net.", obs_dim, config["phi_hidden"], skill_dim))
        shapes.update({f"phi.{name}": shape for name, shape in encoders.items()})
    if config.get(POSTERIOR_KEY) is not None:  # phi's layout (metra_gym.networks.PhiNetwork), state only
        shapes.update(mlp("skill_posterior.net.", obs_dim, config[POSTERIOR_KEY], skill_dim))
    return shapes


def _encoder_shapes(pixels: dict[str, Any]) -> tuple[dict[str, tuple[int, ...]], int]:
    """The tensors of one pixel encoder of a ``pixels`` entry (``encoder.convs.N.weight|bias``), and the size of its
    output features, computed from the sizes alone."""
    from metra_gym.networks import PAPER_KERNEL, conv_output_size

    height, width, channels = pixels["shape"]
    shapes: dict[str, tuple[int, ...]] = {}
    previous = channels
    for i, depth in enumerate(pixels["encoder_channels"]):
        shapes[f"encoder.convs.{2 * i}.weight"] = (depth, previous, PAPER_KERNEL, PAPER_KERNEL)
        shapes[f"encoder.convs.{2 * i}.bias"] = (depth,)
        previous = depth
    layers = len(pixels["encoder_channels"])
    return shapes, previous * conv_output_size(height, layers) * conv_output_size(width, layers)


def check_shapes(config: dict[str, Any], shapes: dict[str, tuple[int, ...]], folder: Path) -> None:
    """Compare the weights' tensors with the networks ``config.json`` describes, before any network is built: a
    size that does not fit (even an absurd one, 10**9 units) is one error naming the tensors, not an allocation.

    :param config: the checked ``config.json``.
    :param shapes: the shape of every tensor in ``model.safetensors``, by name.
    :param folder: the checkpoint folder, for the message.
    :raises CheckpointError: naming the tensors whose names or sizes differ.
    """
    expected = expected_shapes(config)
    problems = [f"size mismatch for {name}: the weights hold {list(shapes[name])}, config.json describes "
                f"{list(shape)}" for name, shape in expected.items() if name in shapes and shapes[name] != shape]
    missing = [name for name in expected if name not in shapes]
    unexpected = sorted(name for name in shapes if name not in expected)
    if missing:
        problems.append(f"missing tensors {', '.join(missing)}")
    if unexpected:
        problems.append(f"unexpected tensors {', '.join(unexpected)}")
    if problems:
        details = "; ".join(problems)
        details = details if len(details) <= 400 else details[:400] + " ..."
        raise CheckpointError(f"the weights in {folder} ({WEIGHTS}) and its {CONFIG} do not fit together: {details}; "
                              "re-export the checkpoint")


def _check_tensors(tensors: dict[str, Any], path: Path) -> None:
    """Every tensor float32 and finite (checked in numpy, which never starts torch's OpenMP pool)."""
    import numpy as np
    import torch

    for name, tensor in sorted(tensors.items()):  # sorted: safetensors returns them in no fixed order
        if tensor.dtype != torch.float32:
            raise CheckpointError(f"{path}: tensor {name!r} has dtype {tensor.dtype}, but skill checkpoints hold "
                                  "float32 weights; re-export the checkpoint")
        bad = int(np.count_nonzero(~np.isfinite(tensor.numpy())))
        if bad:
            raise CheckpointError(f"{path}: tensor {name!r} holds {bad} NaN or infinite values (a diverged "
                                  "training run or a damaged file); re-export from a healthy training checkpoint")
