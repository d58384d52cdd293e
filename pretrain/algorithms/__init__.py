"""Skill-discovery algorithms as Stable-Baselines3 extensions, one folder each (the sb3-contrib layout)."""
