"""Command line: ``torchxplain demo | run CONFIG.yaml | bench NAME``."""

from __future__ import annotations

import argparse
import dataclasses
import runpy
import sys
from pathlib import Path

from torchxplain.config import FAMILIES, ConfigError, load_config, packaged_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchxplain",
        description="PyTorch-native explanations: FourierSHAP, GOALS and IDX, Captum-compatible.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit models on built-in data, explain them, write a report folder")
    demo.add_argument("--out", default=None, help="report folder (default: ./torchxplain-report)")
    demo.add_argument("--quick", action="store_true", help="small models and short fits (about a minute)")
    demo.add_argument("--seed", type=int, default=None, help="random seed")
    demo.add_argument("--families", nargs="+", choices=FAMILIES, default=None, help="method families to run")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")
    run = sub.add_parser("run", help="run a YAML job (see configs/ in the repository)")
    run.add_argument("config", help="path of a YAML job file")
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
            cfg = load_config(packaged_config("demo"))
            overrides = {
                "out": args.out,
                "quick": args.quick or None,
                "seed": args.seed,
                "families": tuple(args.families) if args.families else None,
                "show_progress": False if args.no_progress else None,
            }
            cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
            return _report(cfg)
        if args.command == "run":
            return _report(load_config(args.config))
        return _bench(args.name, args.args)
    except ConfigError as err:
        return _fail(str(err))


def _report(cfg) -> int:  # noqa: ANN001
    from torchxplain.demo import run_report

    path = run_report(cfg)
    print(f"report written to {path.resolve()}")
    return 0


def _bench(name: str, args: list[str]) -> int:
    script = Path("benchmarks") / f"{name}.py"
    if not script.is_file():
        available = sorted(p.stem for p in Path("benchmarks").glob("*.py") if not p.stem.startswith("_"))
        hint = f"available: {', '.join(available)}" if available else "run it from a torchxplain source checkout"
        return _fail(f"no benchmark named {name!r} in ./benchmarks ({hint})")
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent.resolve().parent))
    runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
