"""Bad inputs for the settings, the testing helpers, the data generators and loaders, and the top-level entry points."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import torch

import torchxplain as tx
from tests.robustness.harness import case, exempt, result_case
from torchxplain import data, testing

S, T = "torchxplain.settings.", "torchxplain.testing."
exempt("a constant", S + "DEFAULT_MAX_MEMORY", S + "MIN_MEMORY")
exempt("a typing.Literal alias", S + "DtypePolicy", S + "ValidationLevel")
exempt(
    "a subpackage (its own names are covered)",
    *(f"torchxplain.{m}" for m in ("fourier", "goals", "idx", "settings", "viz")),
)


@case(S + "max_memory", "a float budget", TypeError, "max_memory must be a number of bytes")
def _():
    tx.settings.max_memory(2.5e9)


@case(S + "parse_memory", "an unbounded string is not echoed", ValueError, r"like '2GB'.*'x{40}'$")
def _():
    tx.settings.parse_memory("x" * 10_000)


@case(S + "show_progress", "a string flag", TypeError, "show_progress must be True or False")
def _():
    tx.settings.show_progress("no")


@case(S + "validation", "an unknown level", ValueError, r"validation must be one of \['full', 'shapes'\]")
def _():
    tx.settings.validation("off")


@case(S + "dtype_policy", "an unknown policy", ValueError, r"dtype_policy must be one of")
def _():
    tx.settings.dtype_policy("float16")


@case(S + "using", "a budget under 1 MiB", ValueError, "max_memory must be at least 1 MiB")
def _():
    with tx.settings.using(max_memory=512):
        pass


def _budget_block(budget: str):
    with tx.settings.max_memory(budget):
        yield tx.settings.max_memory.value()
        yield tx.settings.max_memory.value()


@result_case(S + "max_memory", "two generators whose blocks interleave")
def _():
    default = tx.settings.DEFAULT_MAX_MEMORY
    a, b = _budget_block("8MB"), _budget_block("16MB")
    assert next(a) == 8 * 2**20 and next(b) == 16 * 2**20
    assert next(a) == 16 * 2**20  # b's block, entered later, is still open
    next(a, None)  # a's block exits first: b's stays in force
    assert tx.settings.max_memory.value() == 16 * 2**20
    next(b, None)
    next(b, None)
    assert tx.settings.max_memory.value() == default, "the budget left behind is not the default"


@result_case(S + "using", "two generators whose using() blocks interleave")
def _():
    def block(budget: str):
        with tx.settings.using(max_memory=budget, show_progress=False):
            yield

    a, b = block("8MB"), block("16MB")
    next(a), next(b), next(a, None)
    assert tx.settings.max_memory.value() == 16 * 2**20 and tx.settings.show_progress.value() is False
    next(b, None)
    assert tx.settings.max_memory.value() == tx.settings.DEFAULT_MAX_MEMORY
    assert tx.settings.show_progress.value() is tx.settings.show_progress._default()


@result_case(S + "max_memory", "one setting object entered by two threads, exited out of order")
def _():
    shared = tx.settings.max_memory("8MB")
    entered, first_out = threading.Barrier(2), threading.Event()
    seen: dict[str, object] = {}

    def worker(name: str, leaves_first: bool) -> None:
        try:
            seen[f"{name} before"] = tx.settings.max_memory.value()
            with shared:
                entered.wait(timeout=10)
                if not leaves_first:
                    first_out.wait(timeout=10)
                seen[f"{name} inside"] = tx.settings.max_memory.value()
            seen[f"{name} after"] = tx.settings.max_memory.value()
        except Exception as err:  # noqa: BLE001 - reported below
            seen[f"{name} error"] = repr(err)
        finally:
            first_out.set()

    with tx.settings.max_memory("1GB"):  # the threads do not inherit the main thread's block
        threads = [
            threading.Thread(target=worker, args=("t1", True)),
            threading.Thread(target=worker, args=("t2", False)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert tx.settings.max_memory.value() == 2**30
    default = tx.settings.DEFAULT_MAX_MEMORY
    expected = {
        f"{t} {when}": v
        for t in ("t1", "t2")
        for when, v in (("before", default), ("inside", 8 * 2**20), ("after", default))
    }
    assert seen == expected, seen
    assert tx.settings.max_memory.value() == default


@case(T + "tiny_memory_budget", "zero bytes", ValueError, "n_bytes must be a positive int")
def _():
    with testing.tiny_memory_budget(0):
        pass


@case(T + "ExplainerTestCase", "an explainer without make_explainer", NotImplementedError, "make_explainer")
def _():
    testing.ExplainerTestCase().make_explainer(torch.float32)


for name in (
    "check_batch_invariance",
    "check_captum_contract",
    "check_captum_metrics",
    "check_noise_tunnel",
    "check_shape_and_structure",
    "check_state_dict_is_own",
    "check_user_model_untouched",
):

    @case(T + name, "an object that is not an explainer", AssertionError, f"{name}: object is not an explainer")
    def _(name=name):
        check = getattr(testing, name)
        args = {"check_batch_invariance": (object(), torch.zeros(2, 2), 0.0)}.get(name, (object(), torch.zeros(2, 2)))
        if name == "check_captum_metrics":
            args = (object(), torch.zeros(2, 2), lambda x: x.sum(1))
        if name in ("check_captum_contract", "check_state_dict_is_own", "check_user_model_untouched"):
            args = (object(),)
        check(*args)


@case("torchxplain.explain_after_fit", "an unknown method", ValueError, r"method must be one of")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), method="magic")


@case("torchxplain.explain_after_fit", "X_test of another width (blamed X_train)", ValueError, r"X_test has 2 .*ted 3")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 3)), np.zeros((2, 2)))


@case("torchxplain.explain_after_fit", "a negative n_background", ValueError, r"n_background must be >= 1, got -1")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), n_background=-1)


@case("torchxplain.explain_after_fit", "a float n_background", TypeError, r"n_background must be an int, got float")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), n_background=2.0)


@case("torchxplain.explain_after_fit", "X_test columns in another order", ValueError, r"X_test has columns that differ")
def _():
    import pandas as pd

    train = pd.DataFrame(np.eye(4)[:, :3], columns=["a", "b", "c"])
    tx.explain_after_fit(lambda x: x.sum(1), train, train[["c", "b", "a"]], method="fourier")


@case("torchxplain.explain_after_fit", "a float seed", TypeError, r"seed must be a non-negative int")
def _():
    tx.explain_after_fit(lambda x: x.sum(1), np.zeros((4, 2)), np.zeros((2, 2)), seed=1.7)


D = "torchxplain.data."
exempt("a constant (the GB1 sites and the residue order of load_gb1's columns)", D + "GB1_RESIDUES", D + "GB1_SITES")
exempt("a result container built by simulate_goals_design (its fields are the library's outputs)", D + "SimulatedData")


@case(D + "load_gb1", "a dtype given as a string", TypeError, r"dtype must be a floating torch dtype")
def _():
    data.load_gb1(dtype="float32")


@case(D + "load_gb1", "a string flag", TypeError, r"measured_only must be True or False, got str 'yes'")
def _():
    data.load_gb1(measured_only="yes")


@case(D + "load_entacmaea", "an integer dtype (would truncate y)", TypeError, r"dtype must be a floating torch")
def _():
    data.load_entacmaea(dtype=torch.int64)


@case(D + "simulate_goals_design", "an integer dtype", TypeError, r"dtype must be a floating torch dtype")
def _():
    data.simulate_goals_design(n=10, n_features=4, n_causal=2, n_pcs=2, dtype=torch.int64)


@case(D + "simulate_goals_design", "a string flag", TypeError, r"standardize must be True or False")
def _():
    data.simulate_goals_design(n=10, n_features=4, n_causal=2, n_pcs=2, standardize="no")


@case(D + "simulate_goals_design", "a single allele frequency", ValueError, r"maf_range must be a pair \(low, high\)")
def _():
    data.simulate_goals_design(maf_range=0.3)


@case(D + "simulate_goals_design", "a negative sample size", ValueError, r"n must be an int >= 3, got -1")
def _():
    data.simulate_goals_design(n=-1)


@case(D + "simulate_goals_design", "more causal features than features", ValueError, r"n_causal must be at most")
def _():
    data.simulate_goals_design(n_features=3, n_causal=5)


@case(D + "simulate_goals_design", "a signal fraction above 1", ValueError, r"v2 must be a number in \[0, 1\]")
def _():
    data.simulate_goals_design(v2=1.5)


@case(D + "simulate_goals_design", "allele frequencies above 0.5", ValueError, r"maf_range must satisfy 0 < low")
def _():
    data.simulate_goals_design(maf_range=(0.3, 0.9))


@case(D + "simulate_goals_design", "a float seed", TypeError, r"seed must be a non-negative int or a torch\.Gen")
def _():
    data.simulate_goals_design(n=10, n_features=4, n_causal=2, n_pcs=2, seed=1.5)


@case(D + "load_entacmaea", "an unknown target column", ValueError, r"target must be one of \('brightness_red'")
def _():
    data.load_entacmaea("red")


# ---------------------------------------------------------------- the command line
def _cli_run(*args: str) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, torchxplain.cli as cli\n"
        "try:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = ('torch', 'torchxplain.fourier', 'torchxplain._core')\n"
        "print('imported:', sorted(m for m in heavy if m in sys.modules))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "TORCHXPLAIN_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)


@result_case("torchxplain.cli", "--version imports neither torch nor the library (it took seconds)")
def _():
    result = _cli_run("--version")
    assert result.returncode == 0 and result.stdout.startswith("torchxplain "), result.stderr[-500:]
    assert "imported: []" in result.stdout, result.stdout


@result_case("torchxplain.cli", "run CONFIG --no-progress (only demo took it)")
def _():
    from torchxplain import cli

    root = Path(__file__).resolve().parents[2]
    seen = []
    original = cli._report
    cli._report = lambda cfg, out: seen.append(cfg) or 0  # type: ignore[assignment]
    try:
        assert cli.main(["run", str(root / "configs" / "idx.yaml"), "--no-progress"]) == 0
        assert cli.main(["run", str(root / "configs" / "idx.yaml")]) == 0
    finally:
        cli._report = original
    assert [cfg.show_progress for cfg in seen] == [False, None]


@result_case(
    "torchxplain._config", "every shipped config writes to torchxplain-report/<its name>/ (trees wrote elsewhere)"
)
def _():
    from torchxplain._config import load_config

    paths = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
    assert len(paths) >= 5
    for path in paths:
        assert load_config(path).out == path.stem, path.name
        assert f"./torchxplain-report/{path.stem}/" in path.read_text(), path.name


@result_case("torchxplain.Goals", "a saved explainer loaded in a process that has not imported its class")
def _():
    save = (
        "import sys, torch, gpytorch, torchxplain as tx\n"
        "x = torch.randn(8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)\n"
        "class GP(gpytorch.models.ExactGP):\n"
        "    def __init__(self):\n"
        "        super().__init__(x, x[:, 0], gpytorch.likelihoods.GaussianLikelihood())\n"
        "        self.mean_module = gpytorch.means.ConstantMean()\n"
        "        self.covar_module = gpytorch.kernels.RBFKernel()\n"
        "    def forward(self, z):\n"
        "        return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))\n"
        "g = tx.Goals(GP().double())\n"
        "g.save(sys.argv[1])\n"
        "print(g.attribute(x[:2]).tolist())"
    )
    load = (
        "import sys\n"
        "from torchxplain._core.persistence import load_explainer\n"  # torchxplain's names load lazily
        "g = load_explainer(sys.argv[1])\n"
        "print(g.attribute(g.train_inputs[:2]).tolist())"
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "TORCHXPLAIN_PROGRESS": "0"}
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "goals.pt")
        runs = [
            subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env, timeout=300)
            for code in (save, load)
        ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-1000:]
    assert runs[0].stdout.splitlines()[-1] == runs[1].stdout.splitlines()[-1]
