import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import preprocess_obs

from pretrain.algorithms.common.pixel_encoder import PixelEncoder, PixelFeaturesExtractor, conv_output_size

SMALL = (8, 16, 16, 16)  # 48 x 48 -> 23 -> 10 -> 4 -> 1: 16 features


def _pixels(shape, seed=0):
    return th.from_numpy(np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8))


def test_paper_encoder_is_the_papers_cnn():
    """64 -> 31 -> 14 -> 6 -> 2 with 48-96-192-384 channels, kernel 4, stride 2, ELU: 1536 features."""
    assert [conv_output_size(64, n) for n in range(1, 5)] == [31, 14, 6, 2]
    encoder = PixelEncoder()
    convs = [m for m in encoder.convs if isinstance(m, th.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding) for c in convs] == [
        (9, 48, (4, 4), (2, 2), (0, 0)), (48, 96, (4, 4), (2, 2), (0, 0)), (96, 192, (4, 4), (2, 2), (0, 0)),
        (192, 384, (4, 4), (2, 2), (0, 0))]
    assert sum(isinstance(m, th.nn.ELU) for m in encoder.convs) == 4
    assert encoder.output_dim == 1536
    with th.no_grad():
        assert encoder(_pixels((2, 64, 64, 9))).shape == (2, 1536)
        assert encoder(_pixels((2, 9, 64, 64))).shape == (2, 1536)


def test_small_configs_and_too_small_images():
    assert PixelEncoder(9, 48, SMALL).output_dim == 16
    assert PixelEncoder(9, 32, (8, 16, 16)).output_dim == 16 * 2 * 2
    with th.no_grad():
        assert PixelEncoder(9, 32, (8, 16, 16))(_pixels((3, 32, 32, 9))).shape == (3, 64)
        assert PixelEncoder(6, 48, SMALL)(_pixels((4, 5, 6, 48, 48))).shape == (4, 5, 16)  # leading dims kept
    with pytest.raises(ValueError, match="too small"):
        PixelEncoder(9, 32, SMALL)  # 32 -> 15 -> 6 -> 2 -> 0
    with pytest.raises(ValueError, match="pixels"):
        PixelEncoder(9, 48, SMALL)(_pixels((2, 48, 48, 6)))


def test_one_pixel_convention_uint8_divided_once_channels_last_or_first():
    """uint8 (raw) channels-last == uint8 channels-first == float/255 channels-first (what SB3's preprocess_obs
    hands a policy); a float above 1 (raw pixels cast to float: would skip the /255) raises."""
    th.manual_seed(0)
    encoder = PixelEncoder(9, 48, SMALL)
    last = _pixels((5, 48, 48, 9))
    first = last.permute(0, 3, 1, 2).contiguous()
    space = spaces.Box(0, 255, (9, 48, 48), np.uint8)
    with th.no_grad():
        reference = encoder(last)
        th.testing.assert_close(encoder(first), reference)
        th.testing.assert_close(encoder(preprocess_obs(first, space, normalize_images=True)), reference)
        with pytest.raises(ValueError, match="above 1"):
            PixelEncoder(9, 48, SMALL)(first.float())
        # the /255 matters: the raw floats would give other features
        unchecked = PixelEncoder(9, 48, SMALL, check_range=False)
        unchecked.load_state_dict(encoder.state_dict())
        assert not th.allclose(unchecked(first.float()), reference)


def test_gradients_reach_every_layer():
    th.manual_seed(0)
    extractor = PixelFeaturesExtractor(spaces.Box(0, 255, (48, 48, 9), np.uint8), channels=SMALL)
    pixels = _pixels((4, 48, 48, 9)).float() / 255
    extractor(pixels).pow(2).sum().backward()
    for name, parameter in extractor.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_dict_observation_appends_the_skill_after_the_image_features():
    th.manual_seed(0)
    skill_dim = 5
    space = spaces.Dict({"pixels": spaces.Box(0, 255, (9, 48, 48), np.uint8),
                         "skill": spaces.Box(-1, 1, (skill_dim,), np.float32)})
    extractor = PixelFeaturesExtractor(space, channels=SMALL)
    assert extractor.features_dim == 16 + skill_dim
    projected = PixelFeaturesExtractor(space, projection_dim=7, channels=SMALL)
    assert projected.features_dim == 7 + skill_dim
    obs = {"pixels": _pixels((3, 9, 48, 48)), "skill": th.randn(3, skill_dim)}
    pre = preprocess_obs(obs, space)  # as SB3's policies call it
    out = extractor(pre)
    assert out.shape == (3, 16 + skill_dim)
    th.testing.assert_close(out[:, -skill_dim:], obs["skill"])
    th.testing.assert_close(out[:, :16], extractor.encoder(obs["pixels"]))
    assert projected(pre).shape == (3, 7 + skill_dim)
    # gradient reaches the skill input too (the policy and critics are conditioned on z)
    skill = obs["skill"].clone().requires_grad_(True)
    extractor({"pixels": pre["pixels"], "skill": skill}).sum().backward()
    assert skill.grad is not None
    # the paper's size: 1536 + D
    paper = PixelFeaturesExtractor(spaces.Dict({"pixels": spaces.Box(0, 255, (64, 64, 9), np.uint8),
                                                "skill": spaces.Box(-1, 1, (2,), np.float32)}))
    assert paper.features_dim == 1538
    with pytest.raises(ValueError, match="no 'pixels'"):
        PixelFeaturesExtractor(spaces.Dict({"image": space["pixels"]}))
