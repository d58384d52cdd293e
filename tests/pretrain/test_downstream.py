"""The high-level controllers over skills train (SAC and PPO) and the flat baseline."""

from pretrain.downstream import flat_agent, hierarchical_agent


def test_short_hierarchical_sb3_runs_complete():
    sac = hierarchical_agent("ant_multigoals", seed=0, learning_starts=16)
    sac.learn(48)
    assert sac.num_timesteps == 48 and sac._n_updates > 0
    ppo = hierarchical_agent("cheetah_hurdle", seed=0, n_envs=8)
    ppo.learn(512)
    assert ppo.num_timesteps == 512
    flat = flat_agent("cheetah_goal", seed=0, learning_starts=100)
    flat.learn(200)
    assert flat._n_updates > 0
