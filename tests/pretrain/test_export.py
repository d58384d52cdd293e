import json
from pathlib import Path

import numpy as np
import pytest
import torch as th

from metra_gym.skill_checkpoint.format import CheckpointError
from metra_gym.skill_policy import SkillPolicy
from pretrain.cli import main
from pretrain.config import load_config
from pretrain.run.trainer import train


def test_export_refuses_to_overwrite_and_rejects_a_folder_without_a_run(tmp_path, capsys):
    config = load_config("point_mass", ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1",
                                        "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    out = tmp_path / "ckpt"
    assert main(["export", str(tmp_path / "run"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    assert main(["export", str(tmp_path / "run"), str(out)]) == 2
    assert "exists and is not empty; choose another OUT_DIR or pass --force" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "run"), str(out), "--force"]) == 0
    assert main(["export", str(tmp_path / "nothing"), str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert "nothing does not exist; give the folder of a run started with" in err and "resume" not in err
    (tmp_path / "empty").mkdir()
    assert main(["export", str(tmp_path / "empty"), str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert "empty has no run state to read" in err and "resume" not in err
    assert not (tmp_path / "other").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_evaluate_writes_coverage_and_figures(tmp_path, capsys):
    assert main(["evaluate", "half_cheetah", "--out", str(tmp_path), "--skills", "16"]) == 0
    result = json.loads((tmp_path / "coverage.json").read_text())
    assert result["n_skills"] == 16 and len(result["final_positions"]) == 16
    assert sorted(row["skill"] for row in result["final_positions"]) == list(range(16))
    assert result["policy_coverage"] >= 1 and (tmp_path / "trajectories.png").is_file()
    assert main(["evaluate", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown checkpoint 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(("backbone", "layers"), [("sac", 2), ("sac", 3), ("tqc", 2), ("crossq", 2)])
def test_exported_policy_acts_exactly_like_the_trained_sb3_actor(tmp_path, backbone, layers):
    from pretrain.config import load_config
    from pretrain.export import export_run
    from pretrain.run.model import algorithm_class
    from pretrain.run.trainer import train

    config = load_config("point_mass", ["epochs=3", "learning_starts=400", "net_width=32", "torch_threads=1",
                                        "eval_every=3", "save_every=3", f"backbone={backbone}", f"net_layers={layers}"])
    train(config, tmp_path / "run", verbose=0)
    export_run(tmp_path / "run", tmp_path / "ckpt")
    model = algorithm_class(config).load(tmp_path / "run" / "run_state" / "latest" / "model.zip", device="cpu")
    model.policy.set_training_mode(False)  # how actions are taken (CrossQ's batch renormalisation: running stats)
    policy = SkillPolicy.from_pretrained(tmp_path / "ckpt")
    obs = np.random.default_rng(0).uniform(-5, 5, (16, 2)).astype(np.float32)
    z = np.random.default_rng(1).standard_normal((16, 2)).astype(np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    with th.no_grad():
        expected = model.actor(th.as_tensor(np.concatenate([obs, z], 1)), deterministic=True).numpy()
        expected_phi = model.skill_learner.phi(th.as_tensor(obs)).numpy()
    np.testing.assert_allclose(policy.act(obs, z), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(policy.phi(obs), expected_phi, rtol=1e-5, atol=1e-6)
    assert policy.config["provenance"]["epochs"] == 3
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert "model-index" in card and "- metra" in card and "- stable-baselines3" in card


def test_crossq_actor_folds_its_batch_renormalisation_into_a_relu_mlp(tmp_path):
    """Non-trivial running statistics and affine parameters in every BatchRenorm layer: the exported ReLU MLP
    must still act exactly like CrossQ's actor in eval mode; the checkpoint says relu and needs format 3."""
    from gymnasium.spaces import Box
    from sb3_contrib.common.torch_layers import BatchRenorm

    from metra_gym.networks import SkillActor
    from pretrain.algorithms.common.skill_export import skill_checkpoint_config, skill_tensors
    from tests.pretrain.helpers import tiny_model

    model, config = tiny_model(tmp_path, backbone="crossq")
    generator = th.Generator().manual_seed(0)
    for layer in model.actor.latent_pi:
        if isinstance(layer, BatchRenorm):
            n = layer.num_features
            layer.ra_mean.copy_(th.randn(n, generator=generator))
            layer.ra_var.copy_(th.rand(n, generator=generator) * 3 + 0.1)
            layer.scale.data.copy_(th.randn(n, generator=generator))
            layer.bias.data.copy_(th.randn(n, generator=generator))
    model.policy.set_training_mode(False)
    actor = SkillActor(2, 2, 2, config.hidden, "relu")
    actor.load_state_dict({k[len("actor."):]: v for k, v in skill_tensors(model).items() if k.startswith("actor.")})
    features = th.randn(64, 4, generator=generator)
    with th.no_grad():
        th.testing.assert_close(actor(features[:, :2], features[:, 2:]), model.actor(features, deterministic=True))
    written = skill_checkpoint_config(config, "unit", True, 2, Box(-1.0, 1.0, (2,)), {})
    assert written["actor_activation"] == "relu" and written["format_version"] == 3
    assert "actor_activation" not in skill_checkpoint_config(load_config("point_mass"), "unit", True, 2,
                                                             Box(-1.0, 1.0, (1,)), {})


def test_exported_folder_records_held_out_results_and_loads_from_the_fake_hub(tmp_path, monkeypatch):
    """The export is Hub-ready: served by the local fake Hub it downloads and acts like the local folder."""
    from huggingface_hub import constants

    from metra_gym.skill_checkpoint.hub import resolve_checkpoint
    from pretrain.evaluation.evaluate_checkpoint import evaluate_checkpoint
    from pretrain.evaluation.goal_reaching import goal_eval
    from pretrain.export import export_run
    from tests.metra_gym.fake_hub import FakeHub

    config = load_config("point_mass", ["epochs=2", "learning_starts=200", "net_width=16", "torch_threads=1",
                                        "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    export_run(tmp_path / "run", tmp_path / "ckpt")
    evaluate_checkpoint(str(tmp_path / "ckpt"), tmp_path / "held_out", n_skills=8, seed=1000)
    goal_eval(str(tmp_path / "ckpt"), tmp_path / "goals", n_goals=4, seed=1000)
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt"), "--force", "--held-out",
                 str(tmp_path / "held_out" / "coverage.json"), "--goals",
                 str(tmp_path / "goals" / "goal_reaching.json")]) == 0
    config_json = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    held = config_json["provenance"]["held_out_coverage"]
    assert held["seed"] == 1000 and held["n_skills"] == 8
    assert config_json["provenance"]["zero_shot"]["n_goals"] == 4 and config_json["provenance"]["run"] == "run"
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert "held out" in card and "zero-shot goal reaching" in card and f"| {held['policy_coverage']} |" in card

    with FakeHub() as fake:
        fake.add_checkpoint("org/pm-skills", tmp_path / "ckpt", revision="v1")
        monkeypatch.setattr(constants, "ENDPOINT", fake.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            fake.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        downloaded = resolve_checkpoint("hf://org/pm-skills@v1")
    local, hub = SkillPolicy.from_pretrained(tmp_path / "ckpt"), SkillPolicy.from_pretrained(downloaded)
    obs, z = np.ones((3, 2), np.float32), np.array([[1.0, 0.0]] * 3, np.float32)
    np.testing.assert_array_equal(local.act(obs, z), hub.act(obs, z))
    assert (Path(downloaded) / "README.md").read_text() == card


def test_export_with_an_unreadable_evaluation_file_is_one_clear_error(tmp_path, capsys):
    config = load_config("point_mass", ["epochs=1", "learning_starts=100", "net_width=16", "torch_threads=1",
                                        "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    (tmp_path / "bad.json").write_text("{")
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt"), "--held-out", str(tmp_path / "bad.json")]) == 2
    assert "cannot read the evaluation file" in capsys.readouterr().err and not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("algo", ["diayn", "lsd"])
def test_baselines_export_and_load_in_the_runtime(tmp_path, capsys, algo):
    """Every algorithm exports to the same format; goal_skill exists where the method defines it (LSD, METRA)."""
    config = load_config("point_mass", [f"algo={algo}", "epochs=1", "learning_starts=100", "net_width=16",
                                        "torch_threads=1", "save_replay_buffer=false"])
    train(config, tmp_path / "run", verbose=0)
    assert main(["export", str(tmp_path / "run"), str(tmp_path / "ckpt")]) == 0
    policy = SkillPolicy.from_pretrained(tmp_path / "ckpt")
    assert policy.algorithm == algo and policy.act(np.zeros(2), np.array([1.0, 0.0])).shape == (2,)
    card = (tmp_path / "ckpt" / "README.md").read_text()
    assert f"# {algo.upper()} skills" in card
    written = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    if algo == "lsd":
        assert "skill_prior" not in written and written["format_version"] == 2  # unit vectors: readable since 2
        assert policy.goal_skill(np.zeros(2), np.ones(2)).shape == (2,)
        return
    # DIAYN's skills are N(0, I) draws: recorded (format 5 with its q(z | s), so that older readers refuse to project
    # them), taken as given by the runtime, and the held-out evaluation draws them from that prior
    assert written["skill_prior"] == "gaussian" and written["format_version"] == 5
    assert policy.skill_prior == "gaussian" and policy.act(np.zeros(2), np.array([3.0, -4.0])).shape == (2,)
    assert "Skills: 2 continuous (N(0, I) draws)" in card
    assert main(["evaluate", str(tmp_path / "ckpt"), "--skills", "8", "--out", str(tmp_path / "eval")]) == 0
    skills = [row["skill"] for row in json.loads((tmp_path / "eval" / "coverage.json").read_text())["final_positions"]]
    assert np.linalg.norm(skills, axis=1).std() > 0.2
    # Its zero-shot skill is the mean of its q(z | g), exported with it, whatever s.
    assert written["skill_posterior_hidden"] == [16, 16] and written["phi_hidden"] is None
    goal = np.array([1.0, -2.0])
    np.testing.assert_allclose(policy.goal_skill(np.zeros(2), goal), policy.skill_posterior(goal), rtol=1e-6)
    np.testing.assert_allclose(policy.goal_skill(np.ones(2), goal), policy.skill_posterior(goal), rtol=1e-6)
    with pytest.raises(CheckpointError, match="DIAYN skills, which have no state representation phi"):
        policy.phi(np.zeros(2))
    assert main(["goal-eval", str(tmp_path / "ckpt"), "--goals", "4", "--out", str(tmp_path / "goals")]) == 0
    assert json.loads((tmp_path / "goals" / "goal_reaching.json").read_text())["trained"]["mean"] is not None


def test_untrained_export_of_a_pixel_config_loads_and_goal_eval_refuses_it_clearly(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--untrained", "--config", "point_mass_pixels", str(out)]) == 0
    policy = SkillPolicy.from_pretrained(str(out))
    assert policy.obs_shape == (48, 48, 9) and policy.config["format_version"] == 4
    frames = np.zeros((2, 48, 48, 9), dtype=np.uint8)
    assert policy.act(frames, np.array([1.0, 0.0])).shape == (2, 2) and policy.phi(frames).shape == (2, 2)
    capsys.readouterr()
    assert main(["goal-eval", str(out), "--goals", "4", "--out", str(tmp_path / "goals")]) == 2
    err = capsys.readouterr().err
    assert "skills trained on pixels; zero-shot goal reaching" in err and err.count("error:") == 1
    assert not (tmp_path / "goals").exists()


def _png(path: Path, color: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_facecolor(color)
    fig.savefig(path)
    plt.close(fig)
    return path


def test_figures_go_beside_the_model_card_and_stay_through_an_export_in_place(tmp_path, capsys):
    untrained = tmp_path / "untrained"
    assert main(["export", "--untrained", "--config", "point_mass", str(untrained)]) == 0
    paths, tasks = _png(tmp_path / "paths.png", "red"), _png(tmp_path / "tasks.png", "blue")
    out = tmp_path / "ckpt"
    assert main(["export", str(untrained), str(out), "--figure", str(paths), "the hand's paths"]) == 0
    card = (out / "README.md").read_text()
    assert "## Figures" in card and "![the hand's paths](paths.png)" in card
    assert (out / "paths.png").read_bytes() == paths.read_bytes()
    policy = SkillPolicy.from_pretrained(out)  # the networks load as without figures
    assert policy.config["provenance"]["figures"] == [{"file": "paths.png", "caption": "the hand's paths"}]
    # In place, with a second figure: the first is kept (its file and caption), the second added after it.
    assert main(["export", str(out), str(out), "--force", "--figure", str(tasks), "which tasks each skill does"]) == 0
    card = (out / "README.md").read_text()
    assert card.index("](paths.png)") < card.index("![which tasks each skill does](tasks.png)")
    assert (out / "paths.png").read_bytes() == paths.read_bytes() and (out / "tasks.png").read_bytes() == tasks.read_bytes()
    assert SkillPolicy.from_pretrained(out).config["weights_sha256"] == policy.config["weights_sha256"]
    # Without figures, a card has no figure section.
    assert "## Figures" not in (untrained / "README.md").read_text()
    # The same name again replaces that figure (and its caption) in its place; a caption's brackets stay in the alt text.
    (tmp_path / "sub").mkdir()
    other = _png(tmp_path / "sub" / "paths.png", "green")
    assert main(["export", str(out), str(out), "--force", "--figure", str(other), "paths [new]"]) == 0
    card = (out / "README.md").read_text()
    assert "![paths \\[new\\]](paths.png)" in card and "the hand's paths" not in card
    assert card.index("](paths.png)") < card.index("](tasks.png)")
    assert (out / "paths.png").read_bytes() == other.read_bytes()
    # A copy without the figure files (a Hub download holds the networks only): exported with a warning, without them.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bare / name).write_bytes((out / name).read_bytes())
    with pytest.warns(UserWarning, match=r"lacks the figures its model card lists \(paths.png, tasks.png\)"):
        assert main(["export", str(bare), str(tmp_path / "again")]) == 0
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["README.md", "config.json", "model.safetensors"]
    assert "figures" not in SkillPolicy.from_pretrained(tmp_path / "again").config["provenance"]


@pytest.mark.parametrize("figures", ["x", [{"caption": "c"}], [{"file": "../other/x.png", "caption": "c"}],
                                     [{"file": "x.png"}], [{"file": "x.png", "caption": "a"}] * 2])
def test_a_checkpoint_whose_figure_list_is_malformed_is_one_clear_error(tmp_path, figures):
    from metra_gym.skill_checkpoint.format import config_sha256, read_config

    assert main(["export", "--untrained", "--config", "point_mass", str(tmp_path / "ckpt")]) == 0
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    config["provenance"]["figures"] = figures
    config["config_sha256"] = config_sha256(config)  # as a well-formed file would have it
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="provenance 'figures' must be a list of"):
        read_config(tmp_path / "ckpt")


@pytest.mark.parametrize(("figures", "message"), [
    ([("missing.png", "a caption")], "missing.png is not a PNG file"),
    ([("text.png", "a caption")], "text.png is not a PNG file"),
    ([("ok.png", " ")], "ok.png needs a caption of one non-empty line"),
    ([("ok.png", "two\n\n## lines")], "ok.png needs a caption of one non-empty line"),
    ([("config.json", "a caption")], "config.json: name it with letters, digits"),
    ([("my fig (1).png", "a caption")], "my fig (1).png: name it with letters, digits"),
    ([("fig[1].png", "a caption")], "fig[1].png: name it with letters, digits"),
    ([("ok.png", "a caption"), ("ok.png", "again")], "are named ok.png"),
])
def test_a_bad_figure_is_one_clear_error_and_nothing_is_written(tmp_path, capsys, figures, message):
    untrained = tmp_path / "untrained"
    assert main(["export", "--untrained", "--config", "point_mass", str(untrained)]) == 0
    for name in ("ok.png", "my fig (1).png", "fig[1].png"):
        _png(tmp_path / name, "red")
    (tmp_path / "text.png").write_text("not an image")
    (tmp_path / "config.json").write_text("{}")
    out = tmp_path / "ckpt"
    args = ["export", str(untrained), str(out)]
    for name, caption in figures:
        args += ["--figure", str(tmp_path / name), caption]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
