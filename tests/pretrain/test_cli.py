"""The command line's answers that no single command owns: plain-text help, an unusable MUJOCO_GL, and Ctrl-C
while a command starts."""

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from pretrain import cli
from pretrain.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ([], ["train"], ["export"], ["sweep"], ["evaluate"], ["goal-eval"])


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text(capsys, command):
    with pytest.raises(SystemExit) as stop:
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "usage: metra-pretrain" in out
    assert not [marker for marker in ("``", "::", ":class:", ":func:", ":param") if marker in out], out


@pytest.mark.parametrize("config", ["ant", pytest.param("quadruped", marks=pytest.mark.skipif(
    find_spec("dm_control") is None, reason="needs the [dmc] extra"))])
def test_an_unknown_mujoco_gl_is_one_line_and_writes_nothing(tmp_path, config):
    done = subprocess.run([sys.executable, "-m", "pretrain", "train", "--config", config, "--run-dir", "run",
                           "--set", "epochs=1"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": "banana"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("metra-pretrain: error: MUJOCO_GL='banana' is not a rendering backend")
    assert "set MUJOCO_GL=egl" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_a_command_starts_is_one_line(monkeypatch, capsys):
    def interrupted_import(args):
        raise KeyboardInterrupt  # as a Ctrl-C arrives in the seconds of `import torch` at a command's start

    monkeypatch.setattr(cli, "_train", interrupted_import)  # (build_parser reads it when main calls it)
    try:
        code = cli.main(["train", "--config", "ant", "--run-dir", "run"])
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C left main as a KeyboardInterrupt (a traceback)")
    assert code == 130
    assert capsys.readouterr().err == "metra-pretrain: interrupted\n"


def test_the_command_line_module_imports_only_the_standard_library():
    """What the CLI imports before ``main`` runs is loaded outside its Ctrl-C guard: ``pretrain`` and the registry
    of algorithms, standard library only (the interpreter's own start-up is the window left); numpy, YAML,
    Gymnasium, metra_gym, torch and the rest load inside it."""
    code = ("import sys; import pretrain.cli; print(sorted(m for m in sys.modules if m.split('.')[0] not in "
            "sys.stdlib_module_names and m.split('.')[0] not in ('pretrain', '__main__', '_distutils_hack') "
            "and not m.startswith('__editable__')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    code = "import sys; import pretrain.cli; print(sorted(m for m in sys.modules if m.startswith('pretrain')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "['pretrain', 'pretrain.cli', 'pretrain.config', 'pretrain.config.registry']", \
        done.stdout + done.stderr


def test_ctrl_c_before_a_new_run_saved_says_nothing_was_kept(monkeypatch, capsys, tmp_path):
    """A Ctrl-C while ``train`` builds a new run (before its signal handler is in place) has no run state to point
    to: the message must not send the user to ``--resume``, which would fail."""
    import pretrain.run.trainer

    def interrupted_train(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain.run.trainer, "train", interrupted_train)
    assert main(["train", "--config", "point_mass", "--run-dir", str(tmp_path / "run")]) == 130
    err = capsys.readouterr().err
    assert err == "metra-pretrain: interrupted; no run state was saved; run the same command again to start the run\n"
