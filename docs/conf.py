"""Sphinx configuration of torchxplain's documentation.

Build (from the repository root, with the ``docs`` extra installed)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The API reference is generated from the public ``__all__`` lists (``docs/_ext/apigen.py``); the tutorials in
``tutorials/`` are copied in, executed (quick mode unless ``TORCHXPLAIN_QUICK=0``) and rendered with their output
and plots by MyST-NB.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util.fileutil import copy_asset

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import torchxplain  # noqa: E402

os.environ.setdefault("TORCHXPLAIN_QUICK", "1")  # the gallery runs the tutorials' quick modes
os.environ.setdefault("TORCHXPLAIN_PROGRESS", "0")
# the tutorials' figures appear in the pages: the kernels that run them inherit this environment
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

project = "torchxplain"
author = "torchxplain developers"
copyright = "torchxplain developers"  # noqa: A001
release = version = torchxplain.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "myst_nb",
    "apigen",
]

exclude_patterns = ["_build", "_ext", "conf.py", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
templates_path: list[str] = []

# -- every reference must resolve --------------------------------------------------------------------------------------
nitpicky = True
# Names of other projects resolve through intersphinx when their inventories can be read (see below); offline they
# stay plain text, so they must not fail the build. Our own names (torchxplain.*, and short names in our docstrings)
# are not in this list: a reference to one that has no page fails the build.
_EXTERNAL = (
    "torch",
    "numpy",
    "np",
    "pandas",
    "pd",
    "sklearn",
    "captum",
    "shap",
    "shapiq",
    "gpytorch",
    "pyro",
    "lightning",
    "pytorch_lightning",
    "torchmetrics",
    "matplotlib",
    "networkx",
    "scipy",
    "pgmpy",
    "xgboost",
    "lightgbm",
    "catboost",
    "collections",
    "typing",
    "typing_extensions",
    "os",
    "pathlib",
    "enum",
    "dataclasses",
    "contextlib",
    "argparse",
    "types",
    "abc",
    "io",
    "json",
)
_BUILTINS = (
    "int|float|bool|str|bytes|None|NoneType|object|type|tuple|list|dict|set|frozenset|slice|range|callable|Ellipsis"
    "|Exception|ValueError|TypeError|KeyError|RuntimeError|UserWarning|Warning|BaseException|NotImplementedError"
    "|Any|Callable|Iterable|Iterator|Sequence|Mapping|Literal|Optional|Union|Self|TypeVar|Generic|Protocol|ClassVar"
    "|Path|PathLike|Tensor|Module|DataFrame|Series|ndarray|Figure|Axes|Generator|Trainer|LightningModule|Callback"
)
nitpick_ignore_regex = [
    (r"py:.*", r"({})(\..*)?".format("|".join(_EXTERNAL))),
    (r"py:.*", rf"({_BUILTINS})"),
]

# -- autodoc -----------------------------------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# an override of a torch method without a docstring of its own is not ours to document
autodoc_inherit_docstrings = False
autodoc_class_signature = "mixed"
# Captum declares these on its base class as annotated attributes; they are Captum's, not ours to document
autodoc_default_options = {"exclude-members": "forward_func, compute_convergence_delta, attribute_future"}
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = False  # "Attributes:" entries become attributes that :attr: roles can name
napoleon_use_rtype = False

# -- intersphinx: online when the inventories can be fetched, a clean build offline ------------------------------------
# Each project's inventory is fetched from its site; when that fails (no network, as on CI and the developers'
# machines), the empty inventory shipped in docs/_ext stands in, so Sphinx logs the failure as information rather
# than a warning and the build passes. References to those projects are then plain text (nitpick_ignore_regex).
_EMPTY = str(DOCS / "_ext" / "empty-objects.inv")
_SITES = {
    "python": "https://docs.python.org/3/",
    "torch": "https://docs.pytorch.org/docs/stable/",
    "numpy": "https://numpy.org/doc/stable/",
    "pandas": "https://pandas.pydata.org/docs/",
    "sklearn": "https://scikit-learn.org/stable/",
    "captum": "https://captum.ai/api/",
    "shap": "https://shap.readthedocs.io/en/latest/",
    "shapiq": "https://shapiq.readthedocs.io/en/latest/",
    "gpytorch": "https://docs.gpytorch.ai/en/stable/",
    "pyro": "https://docs.pyro.ai/en/stable/",
    "lightning": "https://lightning.ai/docs/pytorch/stable/",
    "matplotlib": "https://matplotlib.org/stable/",
}
_OFFLINE = os.environ.get("TORCHXPLAIN_DOCS_OFFLINE", "0") not in ("", "0")
intersphinx_mapping = {name: (url, (_EMPTY,) if _OFFLINE else (None, _EMPTY)) for name, url in _SITES.items()}
intersphinx_timeout = 5

# -- MyST and the executed tutorials -----------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = os.environ.get("TORCHXPLAIN_DOCS_EXECUTE", "cache")  # "off" renders the tutorials unexecuted
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_in_temp = True  # a tutorial writes nothing next to its source
nb_merge_streams = True
nb_output_stderr = "remove"  # library warnings (tqdm without ipywidgets) are not the tutorials' output


# -- HTML --------------------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"torchxplain {release}"
html_static_path: list[str] = []
html_show_sourcelink = False


def copy_tutorials(app: Sphinx) -> None:
    """tutorials/*.py -> docs/tutorials/*.py (the executed gallery's sources; generated, not committed)."""
    target = DOCS / "tutorials"
    target.mkdir(exist_ok=True)
    wanted = {path.name: path.read_text() for path in sorted((ROOT / "tutorials").glob("*.py"))}
    for stale in target.glob("*.py"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        path = target / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    if (target / "__pycache__").exists():
        shutil.rmtree(target / "__pycache__")


# MathJax from the sphinx-mathjax-offline package (a copy of MathJax 3), served from the site itself, so the math
# renders offline too; copied here rather than through that package's extension, which is not parallel-safe
MATHJAX = Path(importlib.util.find_spec("sphinx-mathjax-offline").origin).parent / "static" / "mathjax"  # type: ignore
mathjax_path = "mathjax/tex-chtml.js"


def copy_mathjax(app: Sphinx, error: Exception | None) -> None:
    if error is None:
        copy_asset(str(MATHJAX), str(Path(app.outdir) / "_static" / "mathjax"))


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("config-inited", lambda app, config: copy_tutorials(app))
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
