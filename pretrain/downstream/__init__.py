"""Downstream tasks over frozen skills: the protocol a high-level controller is trained with
(:mod:`~pretrain.downstream.protocol`), the reference controllers that bound what it can reach
(:mod:`~pretrain.downstream.reference`), the shared evaluation episodes (:mod:`~pretrain.downstream.evaluation`),
one run of a controller (:mod:`~pretrain.downstream.runs`), the resumable sweep of runs
(:mod:`~pretrain.downstream.sweep`) and the verdicts over seeds (:mod:`~pretrain.downstream.verdict`)."""

from pretrain.downstream.protocol import (
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    TASKS,
    ControllerObservation,
    SACSettings,
    TaskObservation,
    controller_env,
    flat_agent,
    hierarchical_agent,
    task,
)

__all__ = ["DEFAULT_PROTOCOL", "PROTOCOLS", "TASKS", "ControllerObservation", "SACSettings", "TaskObservation",
           "controller_env", "flat_agent", "hierarchical_agent", "task"]
