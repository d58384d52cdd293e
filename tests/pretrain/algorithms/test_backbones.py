"""What a backbone does with a skill learner on every minibatch: relabel with the learner's reward *after* its
update, hand it the done flags, train alpha towards the target entropy -|A|/2; and refuse an environment that draws
skills from another prior than the algorithm's."""

import copy

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.common.skill_conditioned import SkillConditioned
from pretrain.algorithms.common.vec_env import NoCopyDummyVecEnv
from pretrain.algorithms.diayn import DIAYN
from pretrain.config import load_config
from pretrain.run.envs import env_factory
from tests.pretrain.helpers import tiny_model


def _batch(model, n: int = 64, seed: int = 0) -> ReplayBufferSamples:
    """A minibatch of ``[obs, z]`` transitions with skills of the model's prior and every fourth one done."""
    gen = th.Generator().manual_seed(seed)
    obs = th.randn(n, model.obs_dim, generator=gen) * 3
    th.manual_seed(seed)
    z = model.skill_learner.sample_skills(n)
    next_obs = obs + th.randn(n, model.obs_dim, generator=gen)
    dones = (th.arange(n) % 4 == 3).float().unsqueeze(1)
    actions = th.rand(n, model.action_space.shape[0], generator=gen) * 2 - 1
    return ReplayBufferSamples(th.cat([obs, z], 1), actions, th.cat([next_obs, z], 1), dones, th.zeros(n, 1))


@pytest.mark.parametrize("algo", ["metra", "lsd", "diayn", "cic"])
def test_the_minibatch_is_relabelled_with_the_learner_after_its_update(tmp_path, algo):
    """The reward of a minibatch comes from the networks its own learner step has just updated (Algorithm 1 of the
    METRA paper; the official code's order): equal to the updated learner's reward, not the one before."""
    model, _ = tiny_model(tmp_path, algo=algo)
    learner = model.skill_learner
    for name in learner.optimizer_names:  # a large step, so that before and after differ clearly
        for group in getattr(learner, name).param_groups:
            group["lr"] = 1e-2
    batch = _batch(model)
    (obs, z), (next_obs, _) = model.split(batch.observations), model.split(batch.next_observations)
    before = copy.deepcopy(learner).reward(obs, next_obs, z)
    by_hand = copy.deepcopy(learner)  # the same steps by hand (LSD: the same power iterations too)
    by_hand.update(obs, next_obs, z, dones=batch.dones)
    after = by_hand.reward(obs, next_obs, z)
    assert not th.allclose(before, after, rtol=1e-3, atol=1e-4)
    reward, _ = model._skill_step(batch)
    th.testing.assert_close(reward, after)


def test_the_learner_step_gets_the_minibatchs_done_flags(tmp_path):
    """(DADS leaves the terminal transitions out of its model's loss.)"""
    model, _ = tiny_model(tmp_path, algo="dads")
    seen = []
    update = model.skill_learner.update

    def recording_update(obs, next_obs, z, dones=None):
        seen.append(dones)
        return update(obs, next_obs, z, dones=dones)

    model.skill_learner.update = recording_update
    batch = _batch(model)
    model._skill_step(batch)
    assert len(seen) == 1 and seen[0] is not None
    th.testing.assert_close(seen[0], batch.dones, rtol=0, atol=0)


@pytest.mark.parametrize("backbone", ["sac", "crossq", "tqc"])
def test_the_target_entropy_is_minus_half_the_action_dimension(tmp_path, backbone):
    """METRA's (and its baselines') -|A|/2 on every backbone unless the config names one (point mass: |A| = 2; its
    config names -1.0 itself, null here)."""
    model, config = tiny_model(tmp_path, backbone=backbone, target_entropy="null")
    assert config.target_entropy is None and model.target_entropy == -1.0
    model, _ = tiny_model(tmp_path, backbone=backbone, target_entropy=-0.25)
    assert model.target_entropy == -0.25


def test_alpha_descends_towards_the_target_entropy(tmp_path):
    """SAC's alpha loss -log alpha * (log pi + target): two copies that differ only in the target get gradients of
    log alpha that differ by exactly the difference of the targets, with the sign that raises alpha for the higher
    target (more entropy wanted)."""
    model, _ = tiny_model(tmp_path)
    batch = _batch(model)
    grads = []
    for target in (-1.0, 2.0):
        copy_ = copy.deepcopy(model)
        copy_.target_entropy = target
        th.manual_seed(1)
        copy_._sac_step(batch, th.zeros(len(batch.dones), 1), update_target=False)
        grads.append(copy_.log_ent_coef.grad.item())
    assert grads[1] - grads[0] == pytest.approx(-(2.0 - (-1.0)), rel=1e-5)


def test_an_environment_drawing_skills_of_another_prior_is_refused():
    config = load_config("point_mass", ["algo=diayn"])
    make = env_factory(config)
    unit = NoCopyDummyVecEnv([lambda: SkillConditioned(make(), 2, False)])  # METRA's unit vectors
    with pytest.raises(ValueError, match="DIAYNLearner trains on gaussian skills, but the environment draws unit ones"):
        DIAYN("MlpPolicy", unit, policy_kwargs={"net_arch": [8]}, discriminator_net_arch=[8])
    gaussian = NoCopyDummyVecEnv([lambda: SkillConditioned(make(), 2, False, prior="gaussian")])
    assert isinstance(DIAYN("MlpPolicy", gaussian, policy_kwargs={"net_arch": [8]}, discriminator_net_arch=[8]),
                      SkillSAC)
    obs, _ = SkillConditioned(make(), 2, False, prior="gaussian").reset(seed=0)
    assert np.isfinite(obs).all()


def test_an_interrupted_actor_step_leaves_the_critics_learning(tmp_path):
    """The actor step freezes the critics' weights; however it ends, they learn again (a KeyboardInterrupt caught in
    a notebook, then ``learn`` again, must not train on with frozen critics)."""
    model, _ = tiny_model(tmp_path, algo="metra")
    batch = _batch(model)

    def interrupted_step(*args, **kwargs):
        raise KeyboardInterrupt

    model.actor.optimizer.step = interrupted_step
    with pytest.raises(KeyboardInterrupt):
        model._sac_step(batch, th.zeros(len(batch.dones), 1), update_target=False)
    assert all(weight.requires_grad for weight in model.critic.parameters())
