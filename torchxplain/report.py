"""Report folders: ``report.md`` + ``report.html`` with PNG figures and CSV/JSON tables of the numbers."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


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


def write_report(out_dir: str | Path, title: str, sections: list[Section], max_rows: int = 15) -> Path:
    """Write ``report.md``, ``report.html``, one CSV per table and ``numbers.json`` into ``out_dir``.

    Returns:
        The path of ``report.html``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
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
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
