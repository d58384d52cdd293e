"""What the skill-discovery algorithms share: skill priors and the pieces of their gradient steps."""
