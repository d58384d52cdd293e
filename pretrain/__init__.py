"""The training stage of metra-gym: METRA on Stable-Baselines3, its CLI, metrics and skill export."""
