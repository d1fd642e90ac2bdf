"""The command line: help, --version, bounded configs (exit 2, one line, no traceback), confined outputs, bench."""

from __future__ import annotations

import configparser
import importlib
import itertools
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import roc_auc_score

from tests.browser import chromium
from torchxplain import cli
from torchxplain._config import ConfigError, ReportConfig, from_mapping, load_config, packaged_config
from torchxplain._report import MARKER, report_folder

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 600, progress: str = "0"
) -> subprocess.CompletedProcess:
    """``python -m torchxplain.cli ARGS`` importing this checkout (``PYTHONPATH``), whatever the working directory;
    ``progress`` is the process default ``TORCHXPLAIN_PROGRESS``."""
    return subprocess.run(
        [sys.executable, "-m", "torchxplain.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        timeout=timeout,
        env={"TORCHXPLAIN_PROGRESS": progress, "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


def run_main(capsys: pytest.CaptureFixture, *args: str) -> subprocess.CompletedProcess:
    """``cli.main(ARGS)`` in this process (cheaper than a subprocess), as a ``CompletedProcess``."""
    returncode = cli.main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, returncode, captured.out, captured.err)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The single stderr line of a refusal (exit 2, no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("torchxplain: error: "), result.stderr[-2000:]
    return lines[0]


@pytest.mark.slow
def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("demo", "run", "bench", "--version"):
        assert command in result.stdout


@pytest.mark.slow
def test_version_is_the_distributions():
    expected = configparser.ConfigParser()
    expected.read(ROOT / "setup.cfg")
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"torchxplain {expected['metadata']['version']}"


def test_python_dash_m_torchxplain_is_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "torchxplain", "--version"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0 and done.stdout == run_cli("--version").stdout


def test_missing_config_exits_2_with_one_line(capsys):
    line = one_line_error(run_main(capsys, "run", "configs/does-not-exist.yaml"))
    assert "configs/does-not-exist.yaml" in line


def test_misspelt_key_exits_2_naming_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("out: x\nfourier:\n  hiden: 3\n")
    assert "'hiden'" in one_line_error(run_main(capsys, "run", str(bad)))


BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")
)
BOMB += "out: *i\n"  # 9^9 ≈ 387 million strings if expanded and formatted into an error message


@pytest.mark.slow
def test_yaml_bomb_is_refused_at_once(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    assert len(BOMB) < 450
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"anchors and aliases .* are not allowed \(line 1\)"):
        load_config(bomb)
    assert time.perf_counter() - start < 1.0
    assert "anchors and aliases" in one_line_error(run_cli("run", str(bomb), timeout=60))


def test_large_deep_or_binary_configs_are_refused_without_echoing_them(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("out: " + "x" * 70_000 + "\n")
    with pytest.raises(ConfigError, match=r"70,006 bytes; a config may be at most 65,536 bytes"):
        load_config(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("families: " + "[" * 12 + "]" * 12 + "\n")
    with pytest.raises(ConfigError, match="nesting deeper than 8 levels"):
        load_config(deep)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"out: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(binary)
    long_value = tmp_path / "long.yaml"
    long_value.write_text("quick: " + "y" * 50_000 + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(long_value)
    assert "quick must be bool, got 'yyy" in str(err.value) and len(str(err.value)) < 200


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fourier: {k: 0}", "fourier: k must be an integer from 1 to 8192, got 0"),
        ("fourier: {hidden: -8}", "fourier: hidden must be an integer from 1 to 4096, got -8"),
        ("trees: {n_background: 0}", "trees: n_background must be an integer from 1 to 442, got 0"),
    ],
)
def test_semantic_errors_exit_2_with_one_line(tmp_path, capsys, text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text + "\n")
    assert one_line_error(run_main(capsys, "run", str(bad), "--out", str(tmp_path / "out"))).endswith(message)
    assert not (tmp_path / "out").exists()


def test_command_line_overrides_are_checked_like_the_file(capsys):
    line = one_line_error(run_main(capsys, "demo", "--seed", "-1"))
    assert line.endswith("seed must be an integer from 0 to 4294967295, got -1")


@pytest.mark.slow
def test_a_semantic_error_in_the_console_process_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("fourier: {k: 0}\n")
    assert one_line_error(run_cli("run", str(bad))).endswith("fourier: k must be an integer from 1 to 8192, got 0")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"fourier": {"n_background": 0}}, "n_background must be an integer from 1 to 8191, got 0"),
        ({"fourier": {"epochs": True}}, "epochs must be int, got True"),
        ({"fourier": {"n_explain": 8000, "n_background": 500}}, r"at most 8192 .* got 8000 \+ 500"),
        ({"fourier": {"target": "green"}}, "target must be one of brightness_red, .*, got 'green'"),
        ({"goals": {"n_causal": 25}}, r"n_causal must be below n_features \(25\)"),
        ({"goals": {"n_samples": 5}}, "n_samples must be an integer from 10"),
        ({"quick": True, "goals": {"n_causal": 12, "n_features": 30}}, "below 10 in quick mode"),
        ({"seed": -1}, "seed must be an integer from 0"),
        ({"families": []}, "families must list distinct method families"),
        ({"families": ["idx", "idx"]}, "families must list distinct method families"),
        ({"families": ["shap"]}, "with unknown 'shap'"),
        ({"out": "../escape"}, "out must be a folder relative to the output root"),
        ({"out": "/tmp/elsewhere"}, "out must be a folder relative to the output root"),
        ({"out": "~/elsewhere"}, "out must be a folder relative to the output root"),
    ],
)
def test_semantic_errors_name_the_key_and_value(data, message):
    with pytest.raises(ConfigError, match=message):
        from_mapping(ReportConfig, data, "cfg")


def test_config_types_are_checked():
    with pytest.raises(ConfigError, match="quick must be bool"):
        from_mapping(ReportConfig, {"quick": "yes"}, "cfg")
    with pytest.raises(ConfigError, match="epochs must be int"):
        from_mapping(ReportConfig, {"fourier": {"epochs": 1.5}}, "cfg")


def _leaves(mapping: dict, prefix: tuple = ()) -> list[tuple[tuple, object]]:
    out = []
    for key, value in mapping.items():
        out += _leaves(value, (*prefix, key)) if isinstance(value, dict) else [((*prefix, key), value)]
    return out


def test_shipped_configs_hold_what_their_files_say():
    # the packaged demo job is exactly the documented defaults of the dataclasses
    assert load_config(packaged_config("demo")) == ReportConfig()
    paths = sorted(ROOT.joinpath("configs").glob("*.yaml"))
    assert {p.stem for p in paths} >= {"demo", "fourier", "goals", "idx", "trees"}
    for path in paths:
        cfg = load_config(path)
        raw = yaml.safe_load(path.read_text())
        for keys, value in _leaves(raw):
            loaded = cfg
            for key in keys:
                loaded = getattr(loaded, key)
            assert loaded == (tuple(value) if isinstance(value, list) else value), (path.name, keys)
        assert f"torchxplain run configs/{path.name}" in path.read_text().splitlines()[0]
        assert not Path(cfg.out).is_absolute() and ".." not in Path(cfg.out).parts


def test_demo_progress_follows_the_settings_unless_the_config_says(monkeypatch, capsys):
    from torchxplain._demo import train_mlp

    x, y = torch.rand(8, 3), torch.rand(8)
    assert ReportConfig().show_progress is None  # the demo job defers to tx.settings / TORCHXPLAIN_PROGRESS
    monkeypatch.setattr(importlib.import_module("torchxplain._core.progress"), "DELAY", 0.0)  # a quick step: bar now
    monkeypatch.setenv("TORCHXPLAIN_PROGRESS", "0")
    train_mlp(x, y, hidden=2, epochs=1, seed=0, show_progress=None)
    assert "training MLP" not in capsys.readouterr().err
    train_mlp(x, y, hidden=2, epochs=1, seed=0, show_progress=True)
    assert "training MLP" in capsys.readouterr().err


def test_run_writes_under_the_default_root_that_gitignore_covers(tmp_path, capsys, monkeypatch):
    job = tmp_path / "job.yaml"
    job.write_text("families: [idx]\nout: idx\n")
    monkeypatch.chdir(tmp_path)
    result = run_main(capsys, "run", str(job))
    assert result.returncode == 0, result.stderr[-2000:]
    report = tmp_path / "torchxplain-report" / "idx" / "report.html"
    assert result.stdout.strip() == f"report written to {report}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.yaml", "torchxplain-report"]
    assert "torchxplain-report/" in ROOT.joinpath(".gitignore").read_text().splitlines()


def test_out_never_overwrites_unrelated_files(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text("families: [idx]\n")
    precious = tmp_path / "project"
    precious.mkdir()
    (precious / "numbers.json").write_text("mine")
    line = one_line_error(run_main(capsys, "run", str(job), "--out", str(precious)))
    assert "already holds files that are not a torchxplain report" in line
    assert (precious / "numbers.json").read_text() == "mine" and len(list(precious.iterdir())) == 1
    escape = tmp_path / "escape.yaml"
    escape.write_text("families: [idx]\nout: ../outside\n")
    one_line_error(run_main(capsys, "run", str(escape), "--out", str(tmp_path / "root")))
    assert not (tmp_path / "outside").exists() and not (tmp_path / "root").exists()


def test_report_folder_is_confined_and_reusable(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError, match="leads out of --out through a symbolic link"):
        report_folder(tmp_path / "root", "link/report")
    assert not (tmp_path / "report").exists()
    first = report_folder(tmp_path / "root", "a/b")
    assert first == tmp_path / "root" / "a" / "b" and (first / MARKER).is_file()
    (first / "report.html").write_text("old")
    assert report_folder(tmp_path / "root", "a/b") == first  # an earlier report may be overwritten
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        report_folder(tmp_path, "file")


@pytest.mark.slow
def test_bench_runs_only_scripts_inside_benchmarks(tmp_path, capsys):
    outside = tmp_path / "x.py"
    outside.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('ran')\n")
    relative = os.path.relpath(tmp_path / "x", ROOT / "benchmarks")
    line = one_line_error(run_cli("bench", relative, cwd=tmp_path))
    assert "no benchmark named" in line and "available: blackbox," in line
    for name in (str(tmp_path / "x"), "_data", "nope", "../benchmarks/blackbox"):
        line = one_line_error(run_main(capsys, "bench", name))
        assert "no benchmark named" in line and "available: blackbox," in line
    assert not (tmp_path / "ran").exists()


def test_bench_passes_arguments_and_refuses_symlinks_out(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "hello.py").write_text("import sys\nprint('hello', sys.argv[1:])\n")
    (folder / "evil.py").symlink_to(tmp_path / "x.py")
    (tmp_path / "x.py").write_text("print('escaped')\n")
    monkeypatch.setattr(cli, "benchmark_folder", lambda: folder)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert cli.main(["bench", "hello", "--quick", "7"]) == 0
    assert capsys.readouterr().out == "hello ['--quick', '7']\n"
    assert cli.main(["bench", "evil"]) == 2
    captured = capsys.readouterr()
    assert "escaped" not in captured.out and "no benchmark named 'evil'" in captured.err


def images_loaded_in_chromium(page: Path) -> tuple[int, int] | None:
    """(images, images loaded) as headless Chromium sees the page; None when Chromium is not installed."""
    command = chromium(page.parent / "chromium-profile")
    if command is None:
        return None
    probe = page.with_name("probe.html")
    script = (
        '<script>window.addEventListener("load",()=>{const im=[...document.images];'
        'document.body.setAttribute("data-images",im.length);document.body.setAttribute("data-loaded",'
        "im.filter(i=>i.complete&&i.naturalWidth>0).length)})</script></body>"
    )
    probe.write_text(page.read_text().replace("</body>", script))
    dom = subprocess.run([*command, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'data-images="(\d+)" data-loaded="(\d+)"', dom)
    assert match, "Chromium did not render the report"
    return int(match.group(1)), int(match.group(2))


def brute_force_shap(predict, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Interventional Shapley values of one row by enumerating all 2^n coalitions (the definition)."""
    n = x.shape[0]
    masks = np.array(list(itertools.product([False, True], repeat=n)))
    value = predict(np.where(masks[:, None, :], x, background[None]).reshape(-1, n)).reshape(len(masks), -1).mean(1)
    index = {tuple(m): k for k, m in enumerate(masks)}
    phi = np.zeros(n)
    for k, mask in enumerate(masks):
        size = int(mask.sum())
        weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n) if size < n else 0.0
        for j in np.flatnonzero(~mask):
            phi[j] += weight * (value[index[tuple(mask | (np.arange(n) == j))]] - value[k])
    return phi


@pytest.mark.slow
def test_quick_demo_writes_a_report_whose_numbers_match_independent_references(tmp_path):
    result = run_cli("demo", "--quick", "--no-progress", "--out", str(tmp_path / "report"), progress="1")
    assert result.returncode == 0, result.stderr
    assert "%|" not in result.stderr, result.stderr[-2000:]  # --no-progress silences the library's bars too
    out = tmp_path / "report"
    assert result.stdout.strip() == f"report written to {out / 'report.html'}"
    html = (out / "report.html").read_text()
    images = [line.split('src="')[1].split('"')[0] for line in html.split("<img")[1:]]
    assert {"fourier_beeswarm.png", "trees_beeswarm.png", "goals_importance.png", "idx_play_outside.png"} <= set(images)
    for name in images:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    loaded = images_loaded_in_chromium(out / "report.html")
    if loaded is not None:
        assert loaded == (len(images), len(images)), f"Chromium loaded {loaded[1]} of {loaded[0]} images"
    numbers = json.loads((out / "numbers.json").read_text())
    fourier = numbers["FourierSHAP: MLP on the Entacmaea fluorescence landscape"]
    assert fourier["surrogate R2 on all genotypes"] > 0.9
    assert fourier["max efficiency error (vs surrogate)"] < 1e-4
    shap_table = pd.read_csv(out / "fourier_shap_values.csv", dtype={"genotype": str})
    assert list(shap_table.columns) == ["genotype", *[f"site{j}" for j in range(13)]] and len(shap_table) == 40
    assert shap_table["genotype"].str.fullmatch("[01]{13}").all() and shap_table["genotype"].is_unique
    # the forest's exact values against the Shapley definition on scikit-learn's own predictions; the demo's
    # forest and rows: quick mode's 10 trees of depth 4, seed 0, background and queries from a seed-0 permutation
    data = load_diabetes()
    forest = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(data.data, data.target)
    rows = torch.randperm(len(data.data), generator=torch.Generator().manual_seed(0)).numpy()
    background, queries = data.data[rows[:100]], data.data[rows[-100:]]
    trees = pd.read_csv(out / "tree_shap_values.csv")
    assert list(trees.columns) == list(data.feature_names) and len(trees) == 100
    for i in range(3):
        reference = brute_force_shap(forest.predict, queries[i], background)
        np.testing.assert_allclose(trees.iloc[i].to_numpy(), reference, atol=1e-8)
    # GOALS: the reported ROC-AUC is the one of the table's scores (causal features are marked *), and the
    # caption promises intervals exactly when the table has them
    goals = numbers["GOALS: variable importance of a Gaussian process with posterior uncertainty"]
    table = pd.read_csv(out / "goals_global_importance.csv")
    auc = roc_auc_score(table["feature"].str.endswith("*"), table["score"])
    assert goals["ROC-AUC of causal features"] == pytest.approx(auc) and auc >= 0.9
    assert ("lower" in table) == ("with 95% posterior intervals" in html)
    assert (table["lower"] <= table["score"]).all() and (table["score"] <= table["upper"]).all()
    # IDX: every relation of the first input of Table 2 (Rago et al. 2021): w=l, t=l, p=l
    relations = pd.read_csv(out / "idx_relations.csv")
    first = relations[relations["input"] == 0]
    md = {(r.relation, r.influencer, r.influencee) for r in first[first["kit"] == "md"].itertuples()}
    assert md == {("support", "p", "r"), ("attack", "w", "o"), ("support", "r", "o")}
    assert sorted(relations["input"].unique()) == list(range(18))
