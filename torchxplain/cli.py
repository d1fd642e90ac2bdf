"""Command line: ``torchxplain demo | run CONFIG.yaml | bench NAME`` and ``--version``.

Reports go to ``--out`` (default ``./torchxplain-report``, which the repository's ``.gitignore`` covers); a
config's ``out:`` is a folder inside it. ``demo`` and ``run`` take ``--no-progress``. Every refusal is one line on
stderr with exit status 2. This module imports neither torch nor the library until a command needs them, so
``--version`` answers at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import runpy
import sys
from pathlib import Path
from typing import Any

from torchxplain._config import DEFAULT_ROOT, FAMILIES, ConfigError, ReportConfig, load_config, packaged_config

BENCH_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # a benchmark is benchmarks/NAME.py; _private helpers excluded


def version() -> str:
    """``torchxplain X.Y.Z`` from the installed distribution's metadata (the package's ``__version__`` otherwise)."""
    from importlib import metadata

    try:
        return f"torchxplain {metadata.version('torchxplain')}"
    except metadata.PackageNotFoundError:
        import torchxplain

        return f"torchxplain {torchxplain.__version__}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchxplain",
        description="PyTorch-native explanations: FourierSHAP, GOALS and IDX, Captum-compatible.",
    )
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True)
    out_help = f"output folder (default: ./{DEFAULT_ROOT}); it must be new, empty or an earlier report"
    demo = sub.add_parser("demo", help="fit models on built-in data, explain them, write a report folder")
    demo.add_argument("--out", default=DEFAULT_ROOT, help=out_help)
    demo.add_argument("--quick", action="store_true", help="small models and short fits (about a minute)")
    demo.add_argument("--seed", type=int, default=None, help="random seed (0 to 2**32 - 1)")
    demo.add_argument("--families", nargs="+", choices=FAMILIES, default=None, help="method families to run")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")
    run = sub.add_parser("run", help="run a YAML job (see configs/ in the repository)")
    run.add_argument("config", help="path of a YAML job file; its out: names a folder inside --out")
    run.add_argument("--out", default=DEFAULT_ROOT, help=out_help.replace("output folder", "output root"))
    run.add_argument("--no-progress", action="store_true", help="hide progress bars (overrides the config)")
    bench = sub.add_parser("bench", help="run benchmarks/NAME.py of a source checkout (extra args are passed on)")
    bench.add_argument("name", help="benchmark name, e.g. fourier_values")
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the benchmark")
    return parser


def _fail(message: str) -> int:
    print(f"torchxplain: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``torchxplain`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            overrides: dict[str, Any] = {
                "quick": args.quick or None,
                "seed": args.seed,
                "families": tuple(args.families) if args.families else None,
                "show_progress": False if args.no_progress else None,
            }
            cfg = load_config(packaged_config("demo"))
            cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
            return _report(cfg, args.out)
        if args.command == "run":
            cfg = load_config(args.config)
            return _report(dataclasses.replace(cfg, show_progress=False) if args.no_progress else cfg, args.out)
        return _bench(args.name, args.args)
    except ConfigError as err:
        return _fail(str(err))
    except KeyboardInterrupt:
        print("torchxplain: interrupted", file=sys.stderr)
        return 130


def _report(cfg: ReportConfig, root: str) -> int:
    from torchxplain._demo import run_report

    try:
        path = run_report(cfg, root)
    except ModuleNotFoundError as err:
        return _fail(f"the report needs the module {err.name!r}, which is not installed (pip install it and retry)")
    print(f"report written to {path.resolve()}")
    return 0


def benchmark_folder() -> Path | None:
    """``benchmarks/`` of the source checkout torchxplain is imported from, else of the checkout in the working
    directory, else ``None`` (a folder counts only next to ``setup.cfg`` and the ``torchxplain/`` package, i.e. in a
    checkout: an installed wheel's ``site-packages`` has no ``setup.cfg``)."""
    import torchxplain

    for checkout in (Path(torchxplain.__file__).resolve().parents[1], Path.cwd()):
        marks = (checkout / "setup.cfg", checkout / "torchxplain" / "__init__.py")
        if (checkout / "benchmarks").is_dir() and all(p.is_file() for p in marks):
            return (checkout / "benchmarks").resolve()
    return None


def _bench(name: str, args: list[str]) -> int:
    folder = benchmark_folder()
    if folder is None:
        return _fail("no benchmarks/ folder: run bench from a torchxplain source checkout")
    available = sorted(p.stem for p in folder.glob("*.py") if BENCH_NAME.fullmatch(p.stem))
    script = folder / f"{name}.py"
    if not BENCH_NAME.fullmatch(name) or not script.is_file() or script.resolve().parent != folder:
        return _fail(f"no benchmark named {name[:40]!r} in {folder} (available: {', '.join(available) or 'none'})")
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(folder.parent))
    runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
