import os

# Headless MuJoCo rendering for the env checker; must be set before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

import torch  # noqa: E402

# One thread: the suite's small networks gain nothing from more, and it keeps runs beside it undisturbed.
torch.set_num_threads(1)
