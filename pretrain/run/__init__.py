"""A training run: its configuration, environments, model, trainer, callbacks and the run state that --resume
reads."""
