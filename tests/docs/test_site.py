"""The built documentation: a page (or anchor) for every name of every public ``__all__``, and the API page of
``FourierShap`` as a browser renders it.

The site is the one CI builds (``TORCHXPLAIN_DOCS_HTML``, set by ``.ci/run`` after its ``sphinx -W`` build);
without it these tests build one themselves, without running the gallery (``TORCHXPLAIN_DOCS_EXECUTE=off``).
The list of names is read from the package here, independently of the docs' page generator.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest

import torchxplain
from tests.browser import chromium

pytestmark = pytest.mark.slow  # builds the site when CI has not

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    built = os.environ.get("TORCHXPLAIN_DOCS_HTML")
    if built:
        return Path(built)
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "TORCHXPLAIN_DOCS_EXECUTE": "off", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", str(out)]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def public_names() -> list[tuple[str, str, object]]:
    """(module, name, object) for every name in the ``__all__`` of the package and of each public submodule."""
    modules = ["torchxplain"] + [
        info.name
        for info in pkgutil.walk_packages(torchxplain.__path__, "torchxplain.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    found = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            found.append((module_name, name, getattr(module, name)))
    return found


def inventory(site: Path) -> dict[str, str]:
    """The site's objects.inv: ``name -> page#anchor`` of every documented Python object."""
    data = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four header lines, then the zlib-compressed entries
        header_end = data.index(b"\n", header_end) + 1
    entries = {}
    for line in zlib.decompress(data[header_end:]).decode().splitlines():
        match = re.match(r"(\S+)\s+py:\S+\s+-?\d+\s+(\S+)\s+.*", line)
        if match:
            name, uri = match.groups()
            entries[name] = uri.replace("$", name)
    return entries


def test_every_name_of_every_public_all_has_a_page_with_its_anchor(site):
    names = public_names()
    assert len(names) > 100  # the package's, fourier's, goals', idx's, integrations', viz's, settings' ...
    documented = inventory(site)
    missing, broken = [], []
    for module_name, name, obj in names:
        path = obj.__name__ if isinstance(obj, types.ModuleType) else f"{module_name}.{name}"
        uri = documented.get(path)
        if uri is None:
            missing.append(path)
            continue
        page, _, anchor = uri.partition("#")
        html = (site / page).read_text()
        if anchor and f'id="{anchor}"' not in html:
            broken.append(uri)
    assert not missing, f"no page for {missing}"
    assert not broken, f"pages without their anchor: {broken}"


def test_the_fourier_shap_page_renders_its_signature_and_docstring_in_chromium(site, tmp_path):
    command = chromium(tmp_path / "chromium-profile")
    if command is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    page = site / "api" / "torchxplain.FourierShap.html"
    dom = subprocess.run([*command, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    signature = re.search(r'<dt class="sig sig-object py" id="torchxplain\.FourierShap">(.*?)</dt>', dom, re.S)
    assert signature, "Chromium did not render the class signature"
    text = re.sub(r"<[^>]+>", "", signature.group(1))
    assert text.lstrip().startswith("class torchxplain.FourierShap(")
    for parameter in ("forward_func", "background", "method", "groups", "data", "max_memory", "**knobs"):
        assert parameter in text, parameter
    body = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", dom[signature.end() :]))
    assert "target_r2" in body  # a knob of the fit sources, documented beside the named parameters
    assert "Exact interventional SHAP values of a sparse Fourier representation of a model." in body
    assert "Parameters:" in body and "forward_func" in body  # napoleon's Args section, rendered
    assert "from_trees" in body and "attribute" in body  # its methods, inherited ones included
    shot = tmp_path / "fourier_shap.png"
    subprocess.run([*command, "--window-size=1200,900", f"--screenshot={shot}", page.as_uri()], timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000  # a page with text, not a blank one
