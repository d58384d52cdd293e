"""metra-gym: pretrained METRA skills as Gymnasium environments.

``import metra_gym`` registers the ``metra/...`` ids and imports neither torch nor MuJoCo.
"""

from metra_gym.registration import register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["__version__", "register_envs"]
