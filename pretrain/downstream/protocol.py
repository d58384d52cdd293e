"""The downstream protocol: what a high-level controller over frozen skills sees, what trains it, and the flat
baseline it is compared with.

A controller step runs a skill for K low-level steps (the skill env's ``skill_steps``: 25 for Ant and HalfCheetah,
50 control steps = 25 policy steps for Quadruped and Humanoid), 8 skill steps an episode (200 low-level steps; 400
control steps on DMC). Two named protocols (:data:`PROTOCOLS`), two ablations of them and two variants (K, a view):

- ``"paper"`` (the default; METRA appendix, and the downstream code released with later forks of the official code,
  whose ``ChildPolicyEnv`` passes the task env's normalised observation to the controller): it sees the paper's
  ``s``: the whole
  pretraining observation, normalised with the skill checkpoint's normaliser as the skill policy sees it, followed by
  the task information as it is (:class:`ControllerObservation`). SAC over continuous skills with the pretraining
  SAC settings (:class:`SACSettings`, read from the skill checkpoint's recorded config; the paper's where it has
  none), PPO over discrete skills with the paper's table (:func:`paper_ppo`); the flat baseline is SAC on the
  low-level task with the pretraining settings too.
- ``"v0.3"`` (metra-gym 0.3's settings, kept to compare): the goal tasks' controller sees the task information only
  (:class:`TaskObservation`), the hurdle task's everything unnormalised; SAC set for a few thousand transitions
  (:func:`few_transition_sac`), PPO with 10 passes over each rollout (:func:`ten_pass_ppo`); flat SAC with one
  update per low-level step (:func:`every_step_sac`).

Two ablations, each the paper's protocol with one of v0.3's differences, ask which of them makes v0.3's PPO better
on HalfCheetahGoal (8 seeds each: 7.40 against 5.17, benchmarks/README.md): ``"paper_task_view"`` (v0.3's view)
and ``"paper_ten_passes"`` (v0.3's PPO: 10 passes at lr 3e-4, where the paper's makes 5 at the pretraining lr).
The view does it: 7.28 with v0.3's view, 5.90 with its PPO (8 seeds each; benchmarks/results/downstream/ablation).

The variant ``"paper_k10"`` is the paper's protocol with K = 10 on every task: 20 skill steps an episode, the same 200
low-level steps (:func:`episode_shape`), where the released downstream code runs K = 25 over 8 (bz5989/Junior-IW
scripts/hierarchical_control/ant_multi_goal.sh l.77 ``--cp_multi_step 25``, l.53 ``--max_path_length 8``). The bundled
skills were trained from rest with z held for a whole episode; re-chosen every 25 steps a skill cannot turn the body's
momentum (issue 41), and on AntMultiGoals zero-shot ``goal_skill`` every skill step scores 4.35, 5.0 and 5.45 over
seed 0's 50 episodes at K = 25, 10 and 5. What the controller reaches with K = 10: benchmarks/README.md ("Downstream
controllers").

The variant ``"paper_heading"`` is the paper's protocol with the cosine and sine of the robot's torso heading after
the task information (the DMC goal tasks). The paper's QuadrupedGoal and HumanoidGoal controllers see pixels, which
show which way the body faces; the state observation standing in for them holds dm_control's egocentric body entries
and no heading. Quadruped episodes start facing +x, Humanoid ones any way, and without the heading a look-ahead over
the Humanoid's skills scores about zero-shot's return, with it 8.93 (benchmarks/README.md, "The look-ahead with an
inexact model").

Absolute coordinates in the paper's view: the pretraining observation holds the agent's absolute position (Ant
x-y, HalfCheetah x, the Quadruped torso x-y). It is kept, as in the paper: every episode starts at the origin, so
within an episode it is bounded by how far 200 steps of skills go (Ant's fastest skills: about 25 m, 40 standard
deviations of the normaliser's x-y); the goals and hurdles are given relative to the agent (and the next hurdle's
x absolutely) in the task information, so a controller can ignore the position. metra-gym 0.3 dropped it from the
goal tasks' view (``"v0.3"``); which does better on our skills is what the downstream campaign measures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env

import metra_gym  # noqa: F401  (registers the metra/ ids)
from metra_gym.registration import SKILL_STEPS, SKILLS_PER_EPISODE


@dataclass(frozen=True)
class Task:
    """A downstream task: its low-level id and its skill-level id (whose registered ``skill_steps`` is K and whose
    default ``checkpoint`` are the bundled skills). ``task_only``: metra-gym 0.3's controller saw the task
    information only (goal tasks) rather than everything unnormalised (the hurdles)."""

    low_level_id: str
    skill_id: str
    task_only: bool = True


TASKS: dict[str, Task] = {
    "ant_multigoals": Task("metra/AntMultiGoals-v0", "metra/AntMultiGoalsSkills-v0"),
    "cheetah_goal": Task("metra/HalfCheetahGoal-v0", "metra/HalfCheetahGoalSkills-v0"),
    # Hurdles are not a translation-invariant goal: metra-gym 0.3 gave its controller the whole observation (on the
    # task information alone PPO did no better: 1.1 hurdles after 51,200 steps, 3 seeds, against 1.2 on everything).
    "cheetah_hurdle": Task("metra/HalfCheetahHurdle-v0", "metra/HalfCheetahHurdleSkills-v0", task_only=False),
    # The reference code's hurdles (LSD's thin bars every 4 m, counted at the back foot; metra_gym.envs.tasks).
    "cheetah_hurdle_v1": Task("metra/HalfCheetahHurdle-v1", "metra/HalfCheetahHurdleSkills-v1", task_only=False),
    # The paper's QuadrupedGoal on state observations (its skills are the state Quadruped's, `quadruped_state`).
    "quadruped_goal": Task("metra/QuadrupedGoal-v0", "metra/QuadrupedGoalSkills-v0"),
    # The paper's HumanoidGoal on state observations, over the state Humanoid's skills (`humanoid_state`).
    "humanoid_goal": Task("metra/HumanoidGoal-v0", "metra/HumanoidGoalSkills-v0"),
}


def task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {sorted(TASKS)}")
    return TASKS[name]


@dataclass(frozen=True)
class Protocol:
    """A named downstream protocol (module docstring).

    :param name: its name in :data:`PROTOCOLS` and in result files.
    :param observation: ``"full"`` (:class:`ControllerObservation`), ``"full_heading"`` (the same with the torso's
        heading) or ``"v0.3"`` (:class:`TaskObservation` on the goal tasks, the raw observation on the others).
    :param sac: ``"pretraining"`` (:func:`pretraining_sac`) or ``"few_transitions"`` (:func:`few_transition_sac`).
    :param ppo: ``"paper"`` (:func:`paper_ppo`) or ``"ten_passes"`` (:func:`ten_pass_ppo`).
    :param flat: ``"pretraining"`` (:func:`pretraining_sac` on the low-level task) or ``"every_step"``
        (:func:`every_step_sac`).
    :param skill_steps: K on every task, over the same low-level episode (:func:`episode_shape`); None: the task's
        registered K.
    """

    name: str
    observation: Literal["full", "full_heading", "v0.3"]
    sac: Literal["pretraining", "few_transitions"]
    ppo: Literal["paper", "ten_passes"]
    flat: Literal["pretraining", "every_step"]
    skill_steps: int | None = None


PROTOCOLS: dict[str, Protocol] = {
    "paper": Protocol("paper", "full", "pretraining", "paper", "pretraining"),
    "v0.3": Protocol("v0.3", "v0.3", "few_transitions", "ten_passes", "every_step"),
    # ablations (module docstring): the paper's protocol with one of v0.3's differences
    "paper_task_view": Protocol("paper_task_view", "v0.3", "pretraining", "paper", "pretraining"),
    "paper_ten_passes": Protocol("paper_ten_passes", "full", "pretraining", "ten_passes", "pretraining"),
    # the paper's protocol with skills re-chosen every 10 low-level steps (module docstring)
    "paper_k10": Protocol("paper_k10", "full", "pretraining", "paper", "pretraining", skill_steps=10),
    # the paper's protocol with the DMC robot's heading in the controller's view (module docstring)
    "paper_heading": Protocol("paper_heading", "full_heading", "pretraining", "paper", "pretraining"),
}
DEFAULT_PROTOCOL = "paper"


def protocol(name: str) -> Protocol:
    if name not in PROTOCOLS:
        raise ValueError(f"unknown downstream protocol {name!r}; choose one of {sorted(PROTOCOLS)}")
    return PROTOCOLS[name]


def episode_shape(name: str, protocol_name: str = DEFAULT_PROTOCOL) -> tuple[int, int]:
    """(K, skill steps an episode) of a task's controller under a protocol: the K its skill env registers (policy
    steps: 25 control steps on Ant and HalfCheetah, 50 on DMC) and ``SKILLS_PER_EPISODE``, or the protocol's K over the
    same low-level episode (200 policy steps)."""
    registered = int(gym.spec(task(name).skill_id).kwargs.get("skill_steps", SKILL_STEPS))
    k = protocol(protocol_name).skill_steps or registered
    episode = registered * SKILLS_PER_EPISODE
    if episode % k:
        raise ValueError(f"protocol {protocol_name!r}: K = {k} does not divide {name}'s episode of {episode} steps")
    return k, episode // k


@dataclass(frozen=True)
class SACSettings:
    """SAC as the skills were pretrained: the defaults are the paper's (appendix; official ``tests/main.py``), and
    :meth:`of_checkpoint` takes what a skill checkpoint recorded of its own training. An epoch is
    ``episodes_per_epoch`` episodes, then ``gradient_steps`` updates; learning starts after ``learning_starts``
    transitions (of the agent trained: controller steps for a controller), collected with uniform random actions.

    CPU note: the paper's 2 x 1024 networks make a SAC update about 10x the cost of 2 x 256 ones on one core
    (``benchmarks/results/network_step``: 27.4 against 2.7 ms for the twin critics alone); the bundled skills were
    pretrained at 256 and record it, so their controllers are 256 wide without a deviation from the rule.
    """

    learning_rate: float = 1e-4
    batch_size: int = 256
    gamma: float = 0.99
    tau: float = 0.005
    net_width: int = 1024
    net_layers: int = 2
    alpha_init: float = 0.01
    learn_alpha: bool = True
    learning_starts: int = 10_000
    episodes_per_epoch: int = 8
    gradient_steps: int = 50
    buffer_size: int = 1_000_000
    source: str = "the paper's"

    @classmethod
    def of_checkpoint(cls, config: dict[str, Any]) -> SACSettings:
        """The settings a skill checkpoint's ``config.json`` recorded of its pretraining (``provenance.config``),
        the paper's for what it did not record. The actor's width stands for the networks' (``net_width``)."""
        recorded = config.get("provenance", {}).get("config", {}) or {}
        keys = {"episodes_per_epoch": "n_envs"}  # the pretraining's name where it differs
        values = {f.name: recorded[keys.get(f.name, f.name)] for f in fields(cls)
                  if keys.get(f.name, f.name) in recorded and f.name != "source"}
        return cls(**values, source="the skill checkpoint's" if values else "the paper's (none recorded)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def checkpoint_config(name: str, checkpoint: str | None) -> dict[str, Any]:
    """The ``config.json`` of a task's skills (the bundled ones unless ``checkpoint`` is given)."""
    from metra_gym.skill_checkpoint.format import read_config
    from metra_gym.skill_checkpoint.hub import locate_checkpoint

    folder, _ = locate_checkpoint(checkpoint or gym.spec(task(name).skill_id).kwargs["checkpoint"])
    return read_config(folder)


# --- what the controller sees -------------------------------------------------------------------------------


def task_env(env: gym.Env) -> Any:
    """The task env under a skill env (``SkillEnv.env``, unwrapped), with its ``pretraining_obs_dim``."""
    inner = env.unwrapped.env.unwrapped
    if getattr(inner, "pretraining_obs_dim", None) is None:
        raise ValueError(f"{inner} has no pretraining_obs_dim: not a downstream task env with task information")
    return inner


class ControllerObservation(gym.ObservationWrapper):
    """The paper's controller view of a task's skill env: the pretraining observation normalised with the skill
    checkpoint's normaliser (as the frozen skill policy sees it), then the task information unchanged (the official
    code appends mean 0 and std 1 for the task entries to the preset normaliser). See the module docstring for the
    absolute position it holds.

    :param heading: append the cosine and sine of the task env's ``heading()`` (the DMC robots' torso heading, which
        their state observation lacks and the paper's pixels show; ``paper_heading`` in the module docstring).
    """

    def __init__(self, env: gym.Env, heading: bool = False) -> None:
        super().__init__(env)
        self.task = task_env(env)
        self.task_start = int(self.task.pretraining_obs_dim)
        normalizer = env.unwrapped.policy.normalizer
        if normalizer.dim != self.task_start:
            raise ValueError(f"the skills' normaliser is {normalizer.dim}-d, but the task's pretraining observation "
                             f"is {self.task_start}-d; use skills trained on this task's robot")
        if heading and not hasattr(self.task, "heading"):
            raise ValueError(f"{type(self.task).__name__} has no heading(): the heading view is for the DMC robots "
                             "(QuadrupedGoal, HumanoidGoal)")
        self.normalizer, self.heading = normalizer, heading
        size = env.observation_space.shape[0] + (2 if heading else 0)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        parts = [self.normalizer(observation[:self.task_start]),
                 np.asarray(observation[self.task_start:], dtype=np.float32)]
        if self.heading:
            angle = self.task.heading()
            parts.append(np.array([np.cos(angle), np.sin(angle)], dtype=np.float32))
        return np.concatenate(parts)


class TaskObservation(gym.ObservationWrapper):
    """metra-gym 0.3's controller view of a goal task's skill env: the task information only (the entries after the
    inner env's ``pretraining_obs_dim``: Ant's goal relative to it, HalfCheetah's goal distance).

    Why it was chosen: the rest is the pretraining observation, which the frozen skill policy already acts on, and it
    was given unnormalised, with the absolute position. On AntMultiGoals at 30,000 low-level steps (seed 0, 50
    episodes, interim skills e68860310bee) the same SAC returned 4.5 on the task information and 3.4 on the whole
    raw observation (untrained 2.3 and 2.7); on HalfCheetahGoal PPO did as well on either (3.8 and 4.0).
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.task_start = int(task_env(env).pretraining_obs_dim)
        size = env.observation_space.shape[0] - self.task_start
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.task_start:]


def skill_env(name: str, checkpoint: str | None = None, **kwargs: Any) -> gym.Env:
    """A task's skill env (registered K and horizon) over the bundled skills or ``checkpoint``; ``kwargs`` go to
    ``gym.make`` (``skill_steps=``, ``max_episode_steps=``)."""
    return gym.make(task(name).skill_id, **({} if checkpoint is None else {"checkpoint": checkpoint}), **kwargs)


def controller_env(name: str, checkpoint: str | None = None, protocol_name: str = DEFAULT_PROTOCOL) -> gym.Env:
    """The env a task's high-level controller acts in (and is evaluated in) under a protocol: its skill env seen
    through :class:`ControllerObservation` (``"paper"``), or through :class:`TaskObservation` on the goal tasks and
    unwrapped on the others (``"v0.3"``)."""
    k, skills_per_episode = episode_shape(name, protocol_name)
    env = skill_env(name, checkpoint, skill_steps=k, max_episode_steps=skills_per_episode)
    view = protocol(protocol_name).observation
    if view in ("full", "full_heading"):
        return ControllerObservation(env, heading=view == "full_heading")
    return TaskObservation(env) if task(name).task_only else env


# --- the learners -------------------------------------------------------------------------------------------


class LeanSAC(SAC):
    """Stable-Baselines3's SAC, whose actor step skips the critics' weight gradients.

    SB3's ``SAC.train`` back-propagates the actor loss through the critics and computes their weight gradients too,
    which the next critic ``zero_grad`` throws away. Here the critics stop requiring gradients once their optimiser
    has stepped (the actor's loss comes next) and require them again once the actor's optimiser has stepped, so the
    updates are the same numbers in 0.92-0.93x the time (``benchmarks/results/downstream/sac_update.json``). The
    pretraining backbone does the same in its own SAC step. Only the critic optimiser's own weights are frozen: with
    ``share_features_extractor=True`` the critics hold the actor's features extractor, which the actor step trains.
    A saved agent is a plain SAC zip (``SAC.load`` reads it); loading through this class (``_setup_model`` runs again)
    registers the hooks on the new optimisers. Copies (``deepcopy``, pickling) lose the hooks with the optimisers'
    pickling: they update the same, at stock speed. ``train`` unfreezes the critics however it ends.
    """

    def _setup_model(self) -> None:
        super()._setup_model()
        self.critic.optimizer.register_step_post_hook(lambda *_: self._critic_weights_learn(False))
        self.actor.optimizer.register_step_post_hook(lambda *_: self._critic_weights_learn(True))

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        try:
            super().train(gradient_steps, batch_size)
        finally:  # an error between the critic's step and the actor's must not leave the critics frozen
            self._critic_weights_learn(True)

    def _critic_weights_learn(self, learn: bool) -> None:
        for group in self.critic.optimizer.param_groups:
            for weight in group["params"]:
                weight.requires_grad_(learn)


def pretraining_sac(env: Any, seed: int, settings: SACSettings, device: str = "cpu", **kwargs: Any) -> SAC:
    """SAC with a skill checkpoint's pretraining settings (:class:`SACSettings`; ``kwargs`` replace any): an epoch of
    ``episodes_per_epoch`` episodes, then ``gradient_steps`` updates; entropy weight from ``alpha_init`` (learned
    or fixed as in pretraining), target entropy -|A|/2 as in pretraining (A: here the controller's action, the
    skill). Over 25-step skills an episode is 8 transitions, so the paper's epoch of 8 episodes is 64 transitions
    and 50 updates; the paper's controller learns after 10,000 transitions (its SAC's minimum buffer size), which is
    250,000 low-level steps of random skills."""
    entropy = f"auto_{settings.alpha_init}" if settings.learn_alpha else settings.alpha_init
    params = dict(learning_rate=settings.learning_rate, batch_size=settings.batch_size, tau=settings.tau,
                  gamma=settings.gamma, buffer_size=settings.buffer_size, learning_starts=settings.learning_starts,
                  train_freq=(settings.episodes_per_epoch, "episode"), gradient_steps=settings.gradient_steps,
                  ent_coef=entropy, target_entropy=-env.action_space.shape[0] / 2,
                  policy_kwargs={"net_arch": [settings.net_width] * settings.net_layers})
    return LeanSAC("MlpPolicy", env, seed=seed, device=device, **{**params, **kwargs})


def few_transition_sac(env: Any, seed: int, learning_starts: int = 100, gradient_steps: int = 4,
                       learning_rate: float = 3e-4, initial_alpha: float = 0.1, width: int = 256,
                       **kwargs: Any) -> SAC:
    """metra-gym 0.3's controller SAC, set for the few transitions a 50,000-step budget gives (2,000).

    With the pretraining settings (learning after 1,000 transitions, one update per transition at lr 1e-4, alpha
    from 1.0) a controller over 25-step skills made few updates within such a budget, its entropy weight stayed near
    1 against a sparse reward, and its return stayed at the untrained one. Here it learns after 100 transitions (12
    episodes), makes 4 updates per transition at lr 3e-4, and alpha starts at 0.1 (then learned, target entropy
    -|A|/2 as in pretraining); what it reached is in ``benchmarks/README.md`` ("Downstream controllers"). Batch 256,
    tau 0.005 and gamma 0.99 (8 steps an episode) are the pretraining ones.
    """
    return LeanSAC("MlpPolicy", env, learning_rate=learning_rate, batch_size=256, tau=0.005, gamma=0.99,
               buffer_size=1_000_000, learning_starts=learning_starts, gradient_steps=gradient_steps,
               ent_coef=f"auto_{initial_alpha}", target_entropy=-env.action_space.shape[0] / 2,
               policy_kwargs={"net_arch": [width, width]}, seed=seed, device="cpu", **kwargs)


def every_step_sac(env: Any, seed: int, width: int = 256, learning_starts: int = 10_000, device: str = "cpu",
                   **kwargs: Any) -> SAC:
    """metra-gym 0.3's flat baseline: SAC with METRA's learning rate, batch, tau, gamma and target entropy, one update
    per low-level step (Stable-Baselines3's default), width 256."""
    action_dim = env.action_space.shape[0]
    return LeanSAC("MlpPolicy", env, learning_rate=1e-4, batch_size=256, tau=0.005, gamma=0.99, buffer_size=1_000_000,
               learning_starts=learning_starts, ent_coef="auto", target_entropy=-action_dim / 2,
               policy_kwargs={"net_arch": [width, width]}, seed=seed, device=device, **kwargs)


# The paper's PPO for discrete skills (appendix table): an epoch is 64 episodes, 10 gradient steps of minibatch 256,
# entropy 0.01. The steps are counted per epoch, as the released downstream code counts them: its HalfCheetahGoal and
# HalfCheetahHurdle scripts pass `--traj_batch_size 64 --trans_optimization_epochs 10 --trans_minibatch_size 256
# --alpha 0.01` (bz5989/Junior-IW scripts/hierarchical_control/half_cheetah_goal.sh l.42, 53, 56, 65 and
# half_cheetah_hurdle.sh l.43, 54, 57, 66, from the CSF fork), and its PPO makes one step on a freshly drawn
# minibatch per `trans_optimization_epochs` (jens321/csf iod/ppo.py l.72-74, iod/iod.py l.329-331). So 10 steps per epoch of 64 x 8 = 512 transitions: 5 passes over the
# rollout in Stable-Baselines3's terms. (Our reference notes' "10 per episode", read literally, is 640 steps, 320
# passes: on seed 0 it scored 2.6 on HalfCheetahGoal and 1.06 on the Hurdle; a preference fork's HalfCheetahGoal
# script makes 50 per epoch; metra-gym 0.3 made 10 passes, 20 steps: ``ten_pass_ppo``.)
PPO_EPISODES_PER_EPOCH = 64
PPO_GRADIENT_STEPS_PER_EPOCH = 10
PPO_MINIBATCH = 256


def paper_ppo(env: Any, seed: int, settings: SACSettings, skills_per_episode: int = SKILLS_PER_EPISODE,
              **kwargs: Any) -> PPO:
    """PPO with the paper's table (:data:`PPO_EPISODES_PER_EPOCH` episodes an epoch,
    :data:`PPO_GRADIENT_STEPS_PER_EPOCH` minibatch steps of :data:`PPO_MINIBATCH` per epoch, entropy 0.01, GAE
    lambda 0.95, clip 0.2); learning rate, widths and gamma are the pretraining ones (``settings``), as the paper's
    networks share one learning rate. ``skills_per_episode``: the env's episode length in controller steps."""
    rollout = PPO_EPISODES_PER_EPOCH * skills_per_episode
    passes = math.ceil(PPO_GRADIENT_STEPS_PER_EPOCH * PPO_MINIBATCH / rollout)
    params = dict(n_steps=rollout // env.num_envs, batch_size=PPO_MINIBATCH, n_epochs=passes,
                  learning_rate=settings.learning_rate, ent_coef=0.01, gae_lambda=0.95, clip_range=0.2,
                  gamma=settings.gamma, policy_kwargs={"net_arch": [settings.net_width] * settings.net_layers})
    return PPO("MlpPolicy", env, seed=seed, device="cpu", **{**params, **kwargs})


def ten_pass_ppo(env: Any, seed: int, width: int = 256, skills_per_episode: int = SKILLS_PER_EPISODE,
                 **kwargs: Any) -> PPO:
    """metra-gym 0.3's PPO: 64 episodes (of 8 skills) per update, 10 passes over them in minibatches of 256 (20
    gradient steps), entropy 0.01, GAE lambda 0.95, clip 0.2, Stable-Baselines3's learning rate (3e-4)."""
    return PPO("MlpPolicy", env, n_steps=PPO_EPISODES_PER_EPOCH * skills_per_episode // env.num_envs,
               batch_size=PPO_MINIBATCH, n_epochs=10, ent_coef=0.01, gae_lambda=0.95, clip_range=0.2, gamma=0.99,
               policy_kwargs={"net_arch": [width, width]}, seed=seed, device="cpu", **kwargs)


def hierarchical_agent(name: str, seed: int = 0, checkpoint: str | None = None, n_envs: int = 1,
                       protocol_name: str = DEFAULT_PROTOCOL, **kwargs: Any) -> BaseAlgorithm:
    """The high-level controller of a task over the bundled (or given) skills under a protocol: SAC over continuous
    skills, PPO over discrete ones; ``kwargs`` go to the learner's function (``learning_starts=``...)."""
    spec = protocol(protocol_name)
    env = make_vec_env(controller_env, n_envs=n_envs, seed=seed,
                       env_kwargs={"name": name, "checkpoint": checkpoint, "protocol_name": protocol_name})
    settings = SACSettings.of_checkpoint(checkpoint_config(name, checkpoint))
    if isinstance(env.action_space, gym.spaces.Discrete):
        per_episode = episode_shape(name, protocol_name)[1]
        if spec.ppo == "paper":
            return paper_ppo(env, seed, settings, skills_per_episode=per_episode, **kwargs)
        return ten_pass_ppo(env, seed, skills_per_episode=per_episode, **kwargs)
    if spec.sac == "pretraining":
        return pretraining_sac(env, seed, settings, **kwargs)
    return few_transition_sac(env, seed, **kwargs)


def flat_agent(name: str, seed: int = 0, protocol_name: str = DEFAULT_PROTOCOL, device: str = "cpu",
               **kwargs: Any) -> SAC:
    """The flat baseline: SAC on the low-level task environment (``device="cuda"`` where a GPU is at hand), with
    the pretraining settings of the task's bundled skills (``"paper"``) or one update per step (``"v0.3"``)."""
    env = make_vec_env(task(name).low_level_id, n_envs=1, seed=seed)
    if protocol(protocol_name).flat == "pretraining":
        settings = SACSettings.of_checkpoint(checkpoint_config(name, None))
        return pretraining_sac(env, seed, settings, device=device, **kwargs)
    return every_step_sac(env, seed, device=device, **kwargs)
