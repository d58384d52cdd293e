"""Evaluation of skills: coverage metrics, plots, checkpoint evaluation and zero-shot goal reaching."""
