"""A training run: its configuration, environments, trainer, callbacks and the run state that --resume reads."""
