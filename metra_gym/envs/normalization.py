"""The preset observation normalisers of METRA (``get_normalizer_preset`` in the authors' code).

The constants were computed by the METRA authors from 10,000 random length-50 rollouts. They are plain
numpy so that :mod:`metra_gym` can normalise observations without importing torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PRESETS: dict[str, tuple[list[float], list[float]]] = {
    "ant": (
        [0.00486117, 0.011312, 0.7022248, 0.8454677, -0.00102548, -0.00300276, 0.00311523, -0.00139029,
         0.8607109, -0.00185301, -0.8556998, 0.00343217, -0.8585605, -0.00109082, 0.8558013, 0.00278213,
         0.00618173, -0.02584622, -0.00599026, -0.00379596, 0.00526138, -0.0059213, 0.27686235, 0.00512205,
         -0.27617684, -0.0033233, -0.2766923, 0.00268359, 0.27756855],
        [0.62473416, 0.61958003, 0.1717569, 0.28629342, 0.20020866, 0.20572574, 0.34922406, 0.40098143,
         0.3114514, 0.4024826, 0.31057045, 0.40343934, 0.3110796, 0.40245822, 0.31100526, 0.81786263,
         0.8166509, 0.9870919, 1.7525449, 1.7468817, 1.8596431, 4.502961, 4.4070187, 4.522444, 4.3518476,
         4.5105968, 4.3704205, 4.5175962, 4.3704395],
    ),
    "half_cheetah": (
        [-0.07861924, -0.08627162, 0.08968642, 0.00960849, 0.02950368, -0.00948337, 0.01661406,
         -0.05476654, -0.04932635, -0.08061652, -0.05205841, 0.04500197, 0.02638421, -0.04570961,
         0.03183838, 0.01736591, 0.0091929, -0.0115027],
        [0.4039283, 0.07610687, 0.23817, 0.2515473, 0.2698137, 0.26374814, 0.32229397, 0.2896734,
         0.2774097, 0.73060024, 0.77360505, 1.5871304, 5.5405455, 6.7097645, 6.8253727, 6.3142195,
         6.417641, 5.9759197],
    ),
}

# The environment each preset was computed for: a configuration's ``normalizer: auto`` takes it for that environment.
PRESET_OF_ENV: dict[str, str] = {"metra/Ant-v0": "ant", "metra/HalfCheetah-v0": "half_cheetah"}


class ObservationNormalizer:
    """``obs -> (obs - mean) / (std + 1e-8)``, in float32.

    :param mean: per-dimension mean.
    :param std: per-dimension standard deviation.
    """

    def __init__(self, mean: Any, std: Any) -> None:
        self.mean = np.asarray(mean, dtype=np.float32)
        self.std = np.asarray(std, dtype=np.float32)
        if self.mean.shape != self.std.shape or self.mean.ndim != 1:
            raise ValueError(f"mean and std must be 1-D of equal length, got {self.mean.shape} and {self.std.shape}")

    @classmethod
    def from_name(cls, name: str | None, obs_dim: int) -> ObservationNormalizer:
        """The preset ``name`` ("ant", "half_cheetah"), or the identity when ``name`` is None or "none"."""
        if name is None or name == "none":
            return cls(np.zeros(obs_dim), np.ones(obs_dim) - 1e-8)
        if name not in PRESETS:
            raise ValueError(f"unknown normaliser preset {name!r}; choose one of {sorted(PRESETS)} or 'none'")
        normalizer = cls(*PRESETS[name])
        if normalizer.mean.shape[0] != obs_dim:
            raise ValueError(
                f"normaliser preset {name!r} is for {normalizer.mean.shape[0]}-d observations, "
                f"but the environment's are {obs_dim}-d"
            )
        return normalizer

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return ((np.asarray(obs, dtype=np.float32) - self.mean) / (self.std + 1e-8)).astype(np.float32)

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}
