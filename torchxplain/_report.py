"""Report folders: ``report.md`` + ``report.html`` with PNG figures and CSV/JSON tables of the numbers."""

from __future__ import annotations

import html
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from torchxplain._config import ConfigError, relative_folder, show

MARKER = ".torchxplain-report"
"""File that marks a folder as a torchxplain report, so a later run may overwrite it."""


@dataclass
class Section:
    """One part of a report.

    Attributes:
        title: heading.
        text: markdown paragraphs (plain text is fine).
        figures: PNG file names relative to the report folder, with captions.
        tables: name -> DataFrame, written as ``<name>.csv`` and shown (first rows) in the report.
        numbers: name -> scalar, written to ``numbers.json`` under the section title.
    """

    title: str
    text: str = ""
    figures: list[tuple[str, str]] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    numbers: dict[str, float | int | str] = field(default_factory=dict)


def report_folder(root: str | Path, relative: str = ".") -> Path:
    """Create (or reuse) the report folder ``root / relative`` and mark it as a torchxplain report.

    ``relative`` must stay inside ``root`` (no absolute path, no ``..``, no symlink out of it). An existing folder
    is reused only when it is empty or was written by torchxplain (it holds :data:`MARKER`), so a report never
    overwrites unrelated files.

    Raises:
        ConfigError: ``relative`` escapes ``root``, or the folder is a file or a non-empty folder of other files.
    """
    base = Path(root)
    folder = base / relative_folder(relative, "out")
    where = show(str(folder), 80)
    try:
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"the report folder {where} is a file; choose another --out")
        if folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).is_file():
            raise ConfigError(
                f"the report folder {where} already holds files that are not a torchxplain report; "
                "choose a new or empty folder with --out"
            )
        if not folder.resolve().is_relative_to(base.resolve()):  # resolve() follows the symlinks that exist
            raise ConfigError(f"the report folder {where} leads out of --out through a symbolic link; choose another")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text("written by torchxplain; this folder may be overwritten by the next report\n")
    except OSError as err:
        raise ConfigError(f"cannot write the report folder {where}: {err.strerror or type(err).__name__}") from None
    return folder


def write_report(out_dir: str | Path, title: str, sections: list[Section], max_rows: int = 15) -> Path:
    """Write ``report.md``, ``report.html``, one CSV per table and ``numbers.json`` into ``out_dir``.

    Returns:
        The path of ``report.html``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for section in sections:
        for name in [f for f, _ in section.figures] + [f"{t}.csv" for t in section.tables]:
            if Path(name).name != name or name.startswith("."):
                raise ValueError(f"report file {name!r} must be a plain file name inside the report folder")
    md = [f"# {title}", ""]
    body = [f"<h1>{html.escape(title)}</h1>"]
    numbers = {}
    for section in sections:
        md += [f"## {section.title}", "", section.text, ""]
        body += [f"<h2>{html.escape(section.title)}</h2>"]
        body += [f"<p>{html.escape(p).replace(chr(10), '<br>')}</p>" for p in section.text.split("\n\n") if p.strip()]
        for name, caption in section.figures:
            md += [f"![{caption}]({name})", "", f"*{caption}*", ""]
            body.append(
                f'<figure><img src="{html.escape(name)}" alt="{html.escape(caption)}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
        for name, frame in section.tables.items():
            frame.to_csv(out / f"{name}.csv", index=False)
            shown = frame.head(max_rows)
            md += [
                f"Table `{name}.csv` (first {len(shown)} of {len(frame)} rows):",
                "",
                shown.to_markdown(index=False) if _has_tabulate() else shown.to_string(index=False),
                "",
            ]
            body.append(f'<p>Table <a href="{name}.csv">{name}.csv</a> (first {len(shown)} of {len(frame)} rows)</p>')
            body.append(shown.to_html(index=False, float_format=lambda v: f"{v:.4g}"))
        if section.numbers:
            numbers[section.title] = section.numbers
            md += ["| quantity | value |", "| --- | --- |"]
            md += [f"| {k} | {_fmt(v)} |" for k, v in section.numbers.items()] + [""]
            rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{_fmt(v)}</td></tr>" for k, v in section.numbers.items())
            body.append(f"<table><tr><th>quantity</th><th>value</th></tr>{rows}</table>")
    (out / "numbers.json").write_text(json.dumps(numbers, indent=2))
    (out / "report.md").write_text("\n".join(md))
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:auto}img{max-width:100%}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>"
    )
    (out / "report.html").write_text(page)
    return out / "report.html"


def _fmt(value: float | int | str) -> str:
    return f"{value:.4g}" if isinstance(value, float) else html.escape(str(value))


def _has_tabulate() -> bool:
    return importlib.util.find_spec("tabulate") is not None
