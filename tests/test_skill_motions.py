"""``benchmarks/skill_motions.py``: the joints it reads off a model and the posture it reads off a free root."""

import mujoco
import numpy as np
import pytest

from tests.benchmark_scripts import benchmark_script

# A free-floating torso with one unlimited hinge (turns countable) and one limited hinge (not).
MODEL = """
<mujoco>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom size="0.1"/>
      <body name="arm">
        <joint name="spin" type="hinge" axis="0 0 1"/>
        <joint name="bend" type="hinge" axis="0 1 0" range="-30 30"/>
        <geom size="0.05" pos="0.2 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def motions():
    return benchmark_script("skill_motions")


def test_the_free_root_and_the_unlimited_hinges_are_found(motions):
    model = mujoco.MjModel.from_xml_string(MODEL)
    assert motions.free_root(model) == 0  # the free joint's 7 entries come first
    assert motions.unlimited_hinges(model) == {"spin": 7}


def test_a_model_without_a_free_root_has_none(motions):
    model = mujoco.MjModel.from_xml_string(MODEL.replace("<freejoint/>", ""))
    assert motions.free_root(model) is None


def test_posture_counts_upside_down_states_and_the_highest_root(motions):
    c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)
    quaternions = [(1.0, 0.0, 0.0, 0.0),    # upright
                   (0.0, 1.0, 0.0, 0.0),    # half a turn about x: upside down
                   (c, s, 0.0, 0.0),        # tilted 60 degrees about x: not upside down
                   (0.0, 0.0, 1.0, 0.0),    # half a turn about y: upside down
                   (0.0, 0.0, 0.0, 1.0)]    # half a turn about z (the vertical): upright
    heights = [0.5, 0.2, 2.0, 0.9, 0.6]
    qpos = np.array([[3.0, -4.0, h, *q, 0.0, 0.0] for h, q in zip(heights, quaternions)])
    upside_down, highest = motions.root_posture(qpos, root=0)
    assert upside_down == pytest.approx(2 / 5)
    assert highest == pytest.approx(2.0)
    # The root's address is honoured: the same states behind two leading entries read the same.
    shifted = np.concatenate([np.zeros((5, 2)), qpos], axis=1)
    assert motions.root_posture(shifted, root=2) == (upside_down, highest)
