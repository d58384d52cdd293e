"""metra-gym: pretrained METRA skills as Gymnasium environments.

``import metra_gym`` registers the ``metra/...`` ids and imports neither torch nor MuJoCo.
"""

from metra_gym.registration import register_envs
from metra_gym.version import __version__

register_envs()


def _register_in_forkserver_workers() -> None:
    """Import metra_gym in the processes a forkserver starts, so that the plain ``metra/...`` ids work there.

    SB3's ``SubprocVecEnv`` (and ``make_vec_env(..., vec_env_cls=SubprocVecEnv)``) starts its workers from a
    forkserver by default, and each worker calls ``gym.make(id)``: a worker that never imported metra_gym does not
    know the ids. A forkserver imports its preload modules once when it starts; adding metra_gym (which imports
    neither torch nor MuJoCo) makes every worker know them. Under the ``spawn`` start method nothing is preloaded:
    there, write the id as ``"metra_gym:metra/AntSkills-v0"`` (Gymnasium imports the module before the id).
    """
    try:
        from multiprocessing import forkserver
    except ImportError:  # no forkserver on this platform
        return
    server = getattr(forkserver, "_forkserver", None)
    modules = list(getattr(server, "_preload_modules", ["__main__"]))  # Python's default: ["__main__"]
    if __name__ not in modules:
        forkserver.set_forkserver_preload([*modules, __name__])


_register_in_forkserver_workers()

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
        from metra_gym.skill_checkpoint.upload import push_to_hub

        return push_to_hub
    raise AttributeError(f"module 'metra_gym' has no attribute {name!r}")
