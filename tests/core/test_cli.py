"""The command line: help, config errors (exit 2, one line, no traceback), the demo report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchxplain.config import ConfigError, ReportConfig, from_mapping, load_config, packaged_config


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchxplain.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"TORCHXPLAIN_PROGRESS": "0", "MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
    )


def images_loaded_in_chromium(page: Path) -> tuple[int, int] | None:
    """(images, images loaded) as headless Chromium sees the page; None when Chromium is not installed."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    probe = page.with_name("probe.html")
    script = (
        '<script>window.addEventListener("load",()=>{const im=[...document.images];'
        'document.body.setAttribute("data-images",im.length);document.body.setAttribute("data-loaded",'
        "im.filter(i=>i.complete&&i.naturalWidth>0).length)})</script></body>"
    )
    probe.write_text(page.read_text().replace("</body>", script))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={page.parent / 'chromium-profile'}",
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    match = re.search(r'data-images="(\d+)" data-loaded="(\d+)"', dom)
    assert match, "Chromium did not render the report"
    return int(match.group(1)), int(match.group(2))


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("demo", "run", "bench"):
        assert command in result.stdout


def test_missing_config_exits_2_with_one_line():
    result = run_cli("run", "configs/does-not-exist.yaml")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "configs/does-not-exist.yaml" in lines[0]
    assert "Traceback" not in result.stderr


def test_misspelt_key_exits_2_naming_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("out: x\nfourier:\n  hiden: 3\n")
    result = run_cli("run", str(bad))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'hiden'" in lines[0] and "Traceback" not in result.stderr


def test_unknown_benchmark_exits_2(tmp_path):
    result = run_cli("bench", "nope", cwd=tmp_path)
    assert result.returncode == 2 and "nope" in result.stderr


def test_config_types_are_checked():
    with pytest.raises(ConfigError, match="quick must be bool"):
        from_mapping(ReportConfig, {"quick": "yes"}, "cfg")
    with pytest.raises(ConfigError, match="epochs must be int"):
        from_mapping(ReportConfig, {"fourier": {"epochs": 1.5}}, "cfg")


def test_packaged_and_example_configs_load():
    assert isinstance(load_config(packaged_config("demo")), ReportConfig)
    for path in Path(__file__).resolve().parents[2].joinpath("configs").glob("*.yaml"):
        assert isinstance(load_config(path), ReportConfig), path


def test_quick_demo_writes_a_report_with_valid_pngs(tmp_path):
    result = run_cli("demo", "--quick", "--out", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr
    out = tmp_path / "report"
    assert str(out / "report.html") in result.stdout
    html = (out / "report.html").read_text()
    images = [line.split('src="')[1].split('"')[0] for line in html.split("<img")[1:]]
    assert images, "the report shows no figures"
    for name in images:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    loaded = images_loaded_in_chromium(out / "report.html")
    if loaded is not None:
        assert loaded == (len(images), len(images)), f"Chromium loaded {loaded[1]} of {loaded[0]} images"
    assert {"fourier_beeswarm.png", "trees_beeswarm.png", "goals_importance.png", "idx_play_outside.png"} <= set(images)
    numbers = json.loads((out / "numbers.json").read_text())
    fourier = numbers["FourierSHAP: MLP on the Entacmaea fluorescence landscape"]
    assert fourier["surrogate R2 on all genotypes"] > 0.9
    assert fourier["max efficiency error (vs surrogate)"] < 1e-4
    trees = numbers["Trees: exact interventional SHAP of a random forest"]
    assert trees["max efficiency error"] < 1e-8
    goals = numbers["GOALS: variable importance of a Gaussian process with posterior uncertainty"]
    assert goals["ROC-AUC of causal features"] > 0.5
    for name in ("fourier_shap_values", "tree_shap_values", "goals_global_importance", "idx_relations"):
        assert (out / f"{name}.csv").stat().st_size > 0
