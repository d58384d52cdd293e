"""Environments of metra_gym. Importing this package imports MuJoCo; ``import metra_gym`` does not."""
