"""metra-gym: pretrained METRA skills as Gymnasium environments.

``import metra_gym`` registers the ``metra/...`` ids and imports neither torch nor MuJoCo.
"""

from metra_gym.registration import register_envs

__version__ = "0.2.0"

register_envs()

__all__ = ["SkillEnv", "SkillPolicy", "__version__", "push_to_hub", "register_envs"]


def __getattr__(name: str):
    # Lazy exports: importing metra_gym must not import torch or MuJoCo.
    if name == "SkillPolicy":
        from metra_gym.skill_policy import SkillPolicy

        return SkillPolicy
    if name == "SkillEnv":
        from metra_gym.skill_env import SkillEnv

        return SkillEnv
    if name == "push_to_hub":
        from metra_gym.skill_checkpoint.hub import push_to_hub

        return push_to_hub
    raise AttributeError(f"module 'metra_gym' has no attribute {name!r}")
