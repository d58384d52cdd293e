"""A run folder under hostile conditions: config.yaml edited after the start, saves killed or stopped by a full disk
(also the very first one), leftovers of killed writers, a second process on the same folder, file modes, a resume
without the replay buffer."""

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
import yaml

from metra_gym.atomic_files import write_text_atomic
from pretrain.cli import main
from pretrain.config import ConfigError, PretrainConfig, load_config
from pretrain.run import run_state
from pretrain.run.run_config import check_config_unchanged, read_run_config, save_config
from pretrain.run.run_state import ResumeError, RunFolderLock
from pretrain.run.trainer import train

TINY = ["net_width=16", "n_envs=2", "learning_starts=100", "torch_threads=1", "eval_skills=4", "gradient_steps=5",
        "save_replay_buffer=false"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A point-mass run of one epoch, trained once under umask 022 (tests copy it)."""
    run = tmp_path_factory.mktemp("finished") / "run"
    previous = os.umask(0o022)
    try:
        train(load_config("point_mass", [*TINY, "epochs=1"]), run, verbose=0)
    finally:
        os.umask(previous)
    return run


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    return Path(shutil.copytree(finished_run, tmp_path / "run"))


def _edit_config(run: Path, **values) -> None:
    path = run / "config.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **values}, sort_keys=False))


def _cli(capsys, *args: str) -> tuple[int, str]:
    code = main([*args])
    return code, capsys.readouterr().err


# --- config.yaml edited after the run started ----------------------------------------------------------------------


@pytest.mark.parametrize(("edits", "named"), [
    ({"net_width": 64, "n_envs": 4}, "n_envs (config.yaml 4, run state 2), net_width (config.yaml 64, run state 16)"),
    ({"skill_dim": 3}, "skill_dim (config.yaml 3, run state 2)"),  # was a raw ValueError about observation spaces
])
def test_a_config_yaml_edited_after_the_start_is_refused_by_resume_and_export(run, capsys, edits, named):
    before = (run / "run_state" / "latest" / "state.json").read_text()
    _edit_config(run, **edits)
    for args in (["train", "--no-progress", "--resume", str(run), "--set", "epochs=2"],
                 ["export", str(run), str(run.parent / "ckpt")]):
        code, err = _cli(capsys, *args)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert f"config.yaml was edited after the run state was saved: {named}. Restore these values" in err
        assert "a resumed run changes only" in err and "with --set KEY=VALUE" in err
    assert (run / "run_state" / "latest" / "state.json").read_text() == before
    assert not (run.parent / "ckpt").exists()


def test_keys_a_resume_may_change_are_not_compared(run):
    """config.yaml records a resume's --set values as soon as it starts, before its first save (as metra-pretrain
    writes it; the same values edited by hand are refused: below)."""
    state = json.loads((run / "run_state" / "latest" / "state.json").read_text())
    assert state["config"]["epochs"] == 1
    save_config(read_run_config(run, {"epochs": 5, "learning_rate": 3e-4}), run)
    check_config_unchanged(state["config"], read_run_config(run).to_dict(), run, ["epochs", "learning_rate"])
    with pytest.raises(ResumeError, match=r"epochs \(config.yaml 5, run state 1\)"):
        check_config_unchanged(state["config"], read_run_config(run).to_dict(), run, ["learning_rate"])


def _edit_text(run: Path, key: str, value: str) -> None:
    """Change one value of config.yaml as a person does in an editor (its first line, the sha256, stays)."""
    path = run / "config.yaml"
    lines = [f"{key}: {value}" if line.startswith(f"{key}:") else line for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("key", "value", "named"), [
    ("epochs", "5", "epochs (config.yaml 5, run state 1)"),
    ("eval_every", "3", "eval_every (config.yaml 3, run state 20)"),
    ("learning_rate", "0.5", "learning_rate (config.yaml 0.5, run state 0.001)"),
])
def test_a_key_a_resume_may_change_edited_by_hand_is_refused_by_resume_and_export(run, capsys, key, value, named):
    """What a resume may change goes through --set (recorded at its next save); an edit in the file is refused."""
    before = (run / "run_state" / "latest" / "state.json").read_text()
    _edit_text(run, key, value)
    edited = (run / "config.yaml").read_text()
    for args in (["train", "--no-progress", "--resume", str(run)], ["export", str(run), str(run.parent / "ckpt")]):
        code, err = _cli(capsys, *args)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert f"config.yaml was edited after the run state was saved: {named}." in err
    assert (run / "config.yaml").read_text() == edited
    assert (run / "run_state" / "latest" / "state.json").read_text() == before and not (run.parent / "ckpt").exists()
    _edit_text(run, key, str(yaml.safe_load(before)["config"][key]))  # restored: the run resumes
    assert _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=2")[0] == 0


def test_a_resume_set_is_kept_when_the_run_is_killed_before_its_next_save(run, capsys):
    """A resume with --set rewrites config.yaml before its first save; killed then (SIGKILL), the next --resume
    takes it as it stands."""
    save_config(read_run_config(run, {"epochs": 3, "eval_every": 3}), run)  # what train() writes when it resumes
    assert json.loads((run / "run_state" / "latest" / "state.json").read_text())["config"]["epochs"] == 1
    assert _cli(capsys, "train", "--no-progress", "--resume", str(run))[0] == 0
    assert json.loads((run / "run_state" / "latest" / "state.json").read_text())["epoch"] == 3


def test_epochs_below_the_epoch_reached_is_refused_and_config_yaml_stays(run, capsys):
    assert _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=2")[0] == 0
    before = (run / "config.yaml").read_text()
    code, err = _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=1")
    assert code == 2 and f"the run in {run} has reached epoch 2, so epochs=1 cannot be its end; give --set epochs=2 or " \
        "more (nothing was changed)" in err
    assert (run / "config.yaml").read_text() == before


def _edit_state(run: Path, digest: bool = True, **values) -> None:
    path = run / "run_state" / "latest" / "state.json"
    state = json.loads(path.read_text())
    if not digest:  # as an older metra-gym wrote it
        del state[run_state.STATE_SHA256]
    for key, value in values.items():
        if value is None:
            del state[key]
        else:
            state[key] = value
    path.write_text(json.dumps(state))


@pytest.mark.parametrize(("digest", "values", "message"), [
    (True, {"epoch": 999}, "its entries differ from the sha256 recorded when it was written"),
    (True, {"epoch": 5}, "its entries differ from the sha256 recorded when it was written"),
    (True, {"epoch": "40"}, "epoch must be an integer >= 0, got '40'"),
    (False, {"epoch": 5}, "does not fit the run: epoch 5 of 100 steps is 500 steps, but it records 100"),
    (False, {"epoch": 999}, "does not fit the run: epoch 999 of 100 steps"),
    (False, {"env_rngs": None}, "env_rngs is missing"),
    (False, {"torch_rng": "garbled!"}, "an RNG state does not decode"),
    (False, {"torch_rng": "AAAA"}, "an RNG state cannot be restored"),
])
def test_an_edited_or_damaged_state_json_is_one_clear_error(run, capsys, digest, values, message):
    _edit_state(run, digest, **values)
    commands = [["train", "--no-progress", "--resume", str(run), "--set", "epochs=2"]]
    if "restored" not in message:  # the RNG states are read by a resume only
        commands.append(["export", str(run), str(run.parent / "ckpt")])
    for args in commands:
        code, err = _cli(capsys, *args)
        assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (run.parent / "ckpt").exists()


# --- the first save, killed or stopped by a full disk ----------------------------------------------------------------


def test_a_folder_whose_first_save_was_killed_starts_afresh(run, capsys):
    """run_state/ holding only what a killed first save left: nothing to resume, and the one command that starts
    the run again is named and works."""
    shutil.rmtree(run / "run_state")
    (run / "run_state" / ".tmp-killed").mkdir(parents=True)
    (run / "run_state" / ".tmp-killed" / "model.zip").write_bytes(b"half a zip")
    history = json.loads((run / "eval" / "coverage.json").read_text())
    (run / "eval" / "coverage.json").write_text(json.dumps([{**history[0], "policy_coverage": -1}]))
    code, err = _cli(capsys, "train", "--no-progress", "--resume", str(run))
    assert code == 2 and "its first save did not finish (killed, or the disk was full)" in err
    command = f"metra-pretrain train --config {run / 'config.yaml'} --run-dir {run}"
    assert err.strip().endswith(f"Start the run afresh in the same folder with: {command}")
    code, err = _cli(capsys, *command.split()[1:], "--no-progress")
    assert code == 0, err
    assert sorted(p.name for p in (run / "run_state").iterdir()) == ["latest"]
    rows = json.loads((run / "eval" / "coverage.json").read_text())
    assert [row["epoch"] for row in rows] == [0, 1] and rows[0]["policy_coverage"] >= 0  # not the old run's row


def test_a_full_disk_at_the_first_save_says_how_to_go_on_and_that_works(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    args = ["train", "--no-progress", "--config", "point_mass", "--run-dir", str(run),
            *[a for s in [*TINY, "epochs=1"] for a in ("--set", s)]]

    def full(path, **arrays):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    real_savez = np.savez
    monkeypatch.setattr(run_state.np, "savez", full)
    code, err = _cli(capsys, *args)
    assert code == 2 and "Traceback" not in err
    assert "cannot write the run (No space left on device: " in err
    assert err.strip().endswith("no run state was saved. Free space or fix permissions, then run the same command "
                                "again (it starts the run afresh), or choose another --run-dir")
    assert list((run / "run_state").iterdir()) == []  # the dead end of before: an empty run_state/
    monkeypatch.setattr(run_state.np, "savez", real_savez)
    code, err = _cli(capsys, *args)
    assert code == 0, err


# --- leftovers of killed saves and writers ----------------------------------------------------------------------


def _fake_state(folder: Path, epoch: int) -> None:
    """A run state folder that passes the cheap completeness check."""
    folder.mkdir(parents=True)
    (folder / "model.zip").write_bytes(b"zip")
    (folder / "state.json").write_text(json.dumps({"epoch": epoch, "files": {"model.zip": {"bytes": 3}}}))


def test_the_next_save_removes_what_killed_saves_left(tmp_path):
    root = tmp_path / "run_state"
    _fake_state(root / "latest", 4)
    _fake_state(root / "previous", 3)  # killed after its rename, before its removal
    _fake_state(root / ".tmp-finished", 4)  # killed between its two renames (an older copy of latest here)
    (root / ".tmp-unfinished").mkdir()  # killed while writing
    (root / ".tmp-file").write_text("x")
    run_state.remove_leftovers(root)
    assert sorted(p.name for p in root.iterdir()) == ["latest"]


def test_the_next_save_keeps_the_only_complete_state_when_latest_is_damaged(tmp_path):
    root = tmp_path / "run_state"
    (root / "latest").mkdir(parents=True)  # incomplete: no state.json
    _fake_state(root / "previous", 3)
    (root / ".tmp-unfinished").mkdir()
    run_state.remove_leftovers(root)
    assert sorted(p.name for p in root.iterdir()) == ["latest", "previous"]


def test_a_write_removes_the_temporary_files_a_killed_write_left(tmp_path):
    (tmp_path / ".coverage.json.tmp-killed").write_text("[")
    (tmp_path / ".coverage.csv.tmp-other").write_text("x")  # another file's: not this write's to remove
    write_text_atomic(tmp_path / "coverage.json", "[]")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".coverage.csv.tmp-other", "coverage.json"]


def test_export_removes_what_a_killed_export_left_and_a_full_disk_leaves_nothing(run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ckpt"
    (tmp_path / ".ckpt.tmp-killed").mkdir()
    (tmp_path / ".ckpt.tmp-killed" / "model.safetensors").write_bytes(b"half")
    (tmp_path / ".ckpt-backup").mkdir()  # a user's folder whose name merely starts alike
    real_write = Path.write_bytes

    def full(self, data):
        if self.name == "model.safetensors":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    code, err = _cli(capsys, "export", str(run), str(out))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "cannot write the checkpoint (No space left on device: " in err and "nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ckpt-backup", "run"]
    monkeypatch.setattr(Path, "write_bytes", real_write)
    assert _cli(capsys, "export", str(run), str(out))[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]


# --- modes, the lock, a resume without the buffer ----------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_runs_files_get_the_usual_modes_for_the_umask(finished_run):
    """Trained under umask 022: readable by the group and others, as files written with open() are."""
    for name in ("eval/coverage.json", "eval/coverage.csv", "run_state/latest/state.json",
                 "run_state/latest/model.zip", "config.yaml"):
        assert _mode(finished_run / name) == 0o644, name
    assert _mode(finished_run / "run_state" / "latest") == 0o755


@pytest.mark.parametrize(("umask", "file_mode", "folder_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750),
                                                                 (0o077, 0o600, 0o700)])
def test_temporary_files_and_folders_get_the_modes_the_umask_gives(tmp_path, umask, file_mode, folder_mode):
    from metra_gym.skill_checkpoint.writer import write_checkpoint

    previous = os.umask(umask)
    try:
        write_text_atomic(tmp_path / "coverage.json", "[]")
        import torch as th

        write_checkpoint({"actor.w": th.zeros(2)}, {"env_id": "x", "provenance": {}, "skill_dim": 2,
                                                   "discrete_skills": False}, tmp_path / "ckpt")
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "coverage.json") == file_mode
    assert _mode(tmp_path / "ckpt") == folder_mode and _mode(tmp_path / "ckpt" / "model.safetensors") == file_mode


def test_a_folder_being_trained_is_refused_to_a_second_process(run, capsys):
    """flock: a lock taken through another open file description, as another process would hold it."""
    (run.parent / "new").mkdir()
    locks = [RunFolderLock(run), RunFolderLock(run.parent / "new")]
    try:
        for args in (["--resume", str(run), "--set", "epochs=2"],
                     ["--config", "point_mass", "--run-dir", str(run.parent / "new")]):
            code, err = _cli(capsys, "train", "--no-progress", *args)
            assert code == 2 and err.count("\n") == 1, err
            assert "is being trained by another process right now; wait for it to end (or stop it)" in err
    finally:
        for lock in locks:
            lock.release()
    assert json.loads((run / "run_state" / "latest" / "state.json").read_text())["epoch"] == 1
    assert list((run.parent / "new").iterdir()) == []
    assert _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=2")[0] == 0  # released


def test_a_resume_without_a_saved_buffer_says_so(run, capsys):
    assert not (run / "run_state" / "latest" / "replay_buffer.pkl").exists()
    code, err = _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=2")
    assert code == 0, err
    assert err.count("warning:") == 1 and "Traceback" not in err
    assert "holds no replay buffer (the run was saved with save_replay_buffer=false): the resumed run trains on an " \
           "empty buffer that refills from now on, so it does not continue exactly" in err


def test_a_copied_run_logs_its_resume_into_its_own_folder(finished_run, run, capsys):
    """SB3 saves the TensorBoard folder in model.zip: a copy of a run (or a moved one) resumed elsewhere wrote into
    the original's folder, or with a relative path, into the working directory."""
    before = sorted(p.relative_to(finished_run) for p in (finished_run / "tb").rglob("*"))
    assert _cli(capsys, "train", "--no-progress", "--resume", str(run), "--set", "epochs=2")[0] == 0
    assert sorted(p.relative_to(finished_run) for p in (finished_run / "tb").rglob("*")) == before
    assert len(list((run / "tb").rglob("events.out.tfevents.*"))) == len(list((finished_run / "tb").rglob(
        "events.out.tfevents.*"))) + 1


def test_a_run_saved_before_another_algorithms_default_changed_still_resumes(run, capsys):
    """A config.yaml lists every algorithm's keys at the defaults of the metra-gym that wrote it (a METRA run from
    before CIC's k changed from 12 to 16 listed cic_knn_k: 12); they configure nothing of the run. A value edited by
    hand since the run state recorded it is still refused."""
    _edit_config(run, cic_knn_k=12)
    state_file = run / "run_state" / "latest" / "state.json"
    state = json.loads(state_file.read_text())
    state["config"]["cic_knn_k"] = 12
    state_file.write_text(json.dumps(state))
    check_config_unchanged(state["config"], read_run_config(run).to_dict(), run)  # no error
    _edit_config(run, cic_knn_k=5)
    with pytest.raises(ConfigError, match="'cic_knn_k' is an option of algo cic, but algo is 'metra'"):
        read_run_config(run)
    del state["config"]  # saved by a metra-gym that recorded no config: its config.yaml is as it wrote it
    state_file.write_text(json.dumps(state))
    assert read_run_config(run).cic_knn_k == PretrainConfig().cic_knn_k
