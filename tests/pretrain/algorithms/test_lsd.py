"""LSD: reward (phi(s') - phi(s))^T z with a spectrally normalised phi, its gradient step, export of the effective
phi, save/load, exact resume, and learning on the point mass."""

import copy

import numpy as np
import pytest
import torch as th

from metra_gym.networks import PhiNetwork
from metra_gym.skill_policy import SkillPolicy
from pretrain.algorithms.common.backbones import SkillSAC
from pretrain.algorithms.lsd import LSD, LSDLearner
from pretrain.config import load_config
from pretrain.run.trainer import train
from tests.pretrain.helpers import point_mass_coverage, skill_step_batch, tiny_model

TINY = ["algo=lsd", "net_width=32", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_every=100",
        "eval_skills=4"]


def _hand_set_learner(discrete: bool = False) -> LSDLearner:
    """phi(s) = relu(diag(1, 1/3) s): raw weights diag(3, 1) and 2 I, spectrally normalised to diag(1, 1/3) and I."""
    learner = LSDLearner(obs_dim=2, skill_dim=2, discrete_skills=discrete, phi_net_arch=[2])
    first, second = learner.lipschitz_phi.net[0], learner.lipschitz_phi.net[2]
    with th.no_grad():
        first.parametrizations.weight.original.copy_(th.diag(th.tensor([3.0, 1.0])))
        second.parametrizations.weight.original.copy_(2 * th.eye(2))
        first.bias.zero_()
        second.bias.zero_()
        for _ in range(30):  # training-mode forward passes: power iterations converge to sigma = 3 and 2
            learner.lipschitz_phi(th.ones(1, 2))
    return learner


def test_reward_is_the_normalised_phi_difference_dot_skill():
    learner = _hand_set_learner()
    obs = th.tensor([[1.0, 3.0], [2.0, 0.0]])
    next_obs = th.tensor([[2.0, 6.0], [2.0, 3.0]])
    z = th.tensor([[0.6, 0.8], [0.0, -1.0]])
    # phi steps: (1, 3/3) and (0, 3/3): 0.6 + 0.8 = 1.4 ; -1
    np.testing.assert_allclose(learner.reward(obs, next_obs, z).numpy(), [[1.4], [-1.0]], rtol=1e-5)


def test_discrete_reward_uses_the_zero_centred_skill():
    learner = _hand_set_learner(discrete=True)
    # phi step (1, 6/3) = (1, 2); z = one-hot 0 -> (1, -1) after centring and scaling by D/(D-1) = 2: 1 - 2 = -1
    reward = learner.reward(th.tensor([[1.0, 3.0]]), th.tensor([[2.0, 9.0]]), th.tensor([[1.0, 0.0]]))
    np.testing.assert_allclose(reward.numpy(), [[-1.0]], rtol=1e-5)


def test_one_phi_step_raises_the_reward_and_phi_stays_1_lipschitz():
    th.manual_seed(0)
    learner = LSDLearner(obs_dim=2, skill_dim=2, discrete_skills=False, phi_net_arch=[32, 32], phi_learning_rate=1e-3)
    obs, next_obs, z = skill_step_batch(step=0.5)
    before = learner.reward(obs, next_obs, z).mean()
    stats = learner.update(obs, next_obs, z)
    assert stats["lsd/phi_loss"].item() == pytest.approx(-before.item(), rel=1e-4)  # loss = -reward of the same phi
    assert learner.reward(obs, next_obs, z).mean() > before + 1e-4
    for _ in range(200):  # a much larger rate: the reward grows, but every step of phi stays <= the step of s
        learner.phi_optimizer.param_groups[0]["lr"] = 1e-2
        learner.update(obs, next_obs, z)
    steps = learner.phi_step(obs, next_obs).norm(dim=1)
    assert steps.max() <= 0.5 * 1.01 and learner.reward(obs, next_obs, z).mean() > 0.3


@pytest.mark.parametrize("discrete", [False, True])
def test_phi_gradient_is_that_of_the_reward_with_the_zero_centred_skill(discrete):
    """phi's step descends -E[(phi(s') - phi(s))^T z~] through the spectral normalisation, with z~ the one-hot
    zero-centred and scaled by D/(D-1) for discrete skills: the gradient is compared with one written out here."""
    d = 4
    th.manual_seed(0)
    learner = LSDLearner(obs_dim=2, skill_dim=d, discrete_skills=discrete, phi_net_arch=[16, 16])
    obs, next_obs, _ = skill_step_batch(step=1.0, n=64)
    z = th.eye(d)[th.randint(d, (64,))] if discrete else th.nn.functional.normalize(th.randn(64, d), dim=1)
    before = copy.deepcopy(learner)  # same weights and singular-vector estimates: the same power iteration
    learner.update(obs, next_obs, z)
    skill = (z - 1.0 / d) * d / (d - 1) if discrete else z
    objective = (before.phi_step(obs, next_obs) * skill).sum(dim=1).mean()
    params = list(before.lipschitz_phi.parameters())
    for param, grad in zip(learner.lipschitz_phi.parameters(), th.autograd.grad(-objective, params)):
        th.testing.assert_close(param.grad, grad, rtol=1e-4, atol=1e-7)


def test_phi_exports_the_effective_weights_under_plain_keys():
    learner = _hand_set_learner()
    u_before = learner.lipschitz_phi.net[0].parametrizations.weight[0]._u.clone()
    phi = learner.phi
    assert list(phi.state_dict()) == ["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]
    th.testing.assert_close(phi.state_dict()["net.0.weight"], th.diag(th.tensor([1.0, 1 / 3])), atol=1e-5, rtol=0)
    th.testing.assert_close(learner.lipschitz_phi.net[0].parametrizations.weight[0]._u, u_before, rtol=0, atol=0)
    runtime = PhiNetwork(2, 2, [2])
    runtime.load_state_dict(phi.state_dict())  # the runtime's module, strict
    obs = th.tensor([[1.0, 3.0], [4.0, 6.0]])
    th.testing.assert_close(runtime(obs), th.tensor([[1.0, 1.0], [4.0, 2.0]]), atol=1e-5, rtol=0)


def test_the_trained_phi_keeps_training_after_its_plain_copy_is_taken():
    """Taking the exportable phi (a snapshot, an export) must leave the spectrally normalised one as it was: still in
    its mode, still differentiable, its next training step the same as without the copy."""
    learner = _hand_set_learner()
    untouched = copy.deepcopy(learner)
    learner.lipschitz_phi.train()
    _ = learner.phi
    assert learner.lipschitz_phi.training
    obs, next_obs = th.randn(8, 2), th.randn(8, 2)
    z = th.nn.functional.normalize(th.randn(8, 2), dim=1)
    for each in (learner, untouched):
        each.update(obs, next_obs, z)
    for mine, theirs in zip(learner.lipschitz_phi.parameters(), untouched.lipschitz_phi.parameters()):
        th.testing.assert_close(mine, theirs, rtol=0, atol=0)


def test_lsd_trains_on_across_skill_snapshots(tmp_path):
    """A snapshot exports the plain phi every epoch here; training goes on after each (the first one broke it)."""
    config = load_config("point_mass", [*TINY, "epochs=3", "snapshot_every=1", "save_every=100", "gradient_steps=5"])
    train(config, tmp_path / "run", verbose=0)
    assert sorted(p.name for p in (tmp_path / "run" / "snapshots").iterdir())[-1] == "epoch_000003"


def test_an_exported_lsd_run_loads_in_the_runtime_with_its_phi(tmp_path):
    from pretrain.export import export_run

    train(load_config("point_mass", [*TINY, "epochs=2", "save_every=2", "eval_every=2"]), tmp_path / "run", verbose=0)
    export_run(tmp_path / "run", tmp_path / "ckpt")
    model = SkillSAC.load(tmp_path / "run" / "run_state" / "latest" / "model.zip", device="cpu")
    policy = SkillPolicy.from_pretrained(tmp_path / "ckpt")
    obs = np.random.default_rng(0).uniform(-5, 5, (16, 2)).astype(np.float32)
    with th.no_grad():
        expected = model.skill_learner.lipschitz_phi.eval()(th.as_tensor(obs)).numpy()
    np.testing.assert_allclose(policy.phi(obs), expected, rtol=1e-5, atol=1e-6)
    assert policy.goal_skill(obs[:1], obs[1:2]).shape == (1, 2)


def test_the_sb3_class_has_the_papers_defaults(tmp_path):
    _, config = tiny_model(tmp_path, algo="lsd")
    from pretrain.run.envs import env_factory, training_env

    model = LSD("MlpPolicy", training_env(config, env_factory(config)), phi_net_arch=[8], policy_kwargs={"net_arch": [8]})
    assert (model.learning_rate, model.learning_starts, model.gradient_steps) == (1e-4, 10_000, 50)
    assert isinstance(model.skill_learner, LSDLearner) and model.skill_learner.phi.net[0].out_features == 8


def test_lsd_point_mass_coverage_is_several_times_a_random_policy(tmp_path):
    trained, random_coverage = point_mass_coverage(tmp_path, "lsd")
    assert trained >= 3 * random_coverage, (trained, random_coverage)
