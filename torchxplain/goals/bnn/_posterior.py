"""Reading the Gaussian posterior of a linear head's weights out of a fitted Pyro autoguide."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import torch
from pyro.distributions import constraints
from pyro.infer.autoguide import AutoContinuous, AutoNormal
from torch import Tensor

SUPPORTED_GUIDES = "AutoNormal, AutoDiagonalNormal, AutoMultivariateNormal, AutoLowRankMultivariateNormal"


def guide_sites(guide: Any) -> dict[str, Any]:
    """The latent sites of a fitted autoguide (name -> prototype-trace site); raises if it never ran."""
    if not isinstance(guide, (AutoNormal, AutoContinuous)):
        raise TypeError(f"guide must be one of {SUPPORTED_GUIDES}, got {type(guide).__name__}")
    trace = getattr(guide, "prototype_trace", None)
    if trace is None:
        raise ValueError(
            f"the {type(guide).__name__} guide has not been fitted: it has no parameters until it has run "
            "(train it with SVI first)"
        )
    return dict(trace.iter_stochastic_nodes())


def guide_moments(guide: Any, names: list[str]) -> tuple[Tensor, Tensor]:
    """Posterior mean ``(D,)`` and covariance of the concatenated flattened sites ``names``.

    The covariance is ``(D,)`` (a diagonal) for ``AutoNormal``/``AutoDiagonalNormal`` and ``(D, D)``
    otherwise. Every site must have real support (a Normal prior), so that the guide's unconstrained
    Gaussian is the posterior itself.
    """
    sites = guide_sites(guide)
    for name in names:
        if name not in sites:
            raise ValueError(f"the guide has no latent site {name!r}; its sites are {sorted(sites)}")
        support = sites[name]["fn"].support
        while isinstance(support, constraints.independent):
            support = support.base_constraint
        if support is not constraints.real:
            raise ValueError(
                f"site {name!r} has support {sites[name]['fn'].support}; a Gaussian head needs a real-valued "
                "(e.g. Normal) prior"
            )
    with torch.no_grad():
        if isinstance(guide, AutoNormal):
            locs = [attrgetter(n)(guide.locs).detach().reshape(-1) for n in names]
            scales = [attrgetter(n)(guide.scales).detach().reshape(-1) for n in names]
            return torch.cat(locs), torch.cat(scales) ** 2
        posterior = guide.get_posterior()
        index, pos = {}, 0
        for name, site in sites.items():
            size = site["value"].numel()
            index[name] = torch.arange(pos, pos + size)
            pos += size
        sel = torch.cat([index[n] for n in names]).to(posterior.mean.device)
        loc = posterior.mean.detach()[sel]
        if hasattr(posterior, "covariance_matrix"):
            return loc, posterior.covariance_matrix.detach()[sel][:, sel]
        return loc, posterior.variance.detach()[sel]


def output_block(loc: Tensor, cov: Tensor, n_out: int, output: int | None) -> tuple[Tensor, Tensor]:
    """The ``(L,)`` mean and ``(L, L)``/``(L,)`` covariance of row ``output`` of a ``(n_out, L)`` weight."""
    if output is None:
        if n_out != 1:
            raise ValueError(f"the head has {n_out} outputs; pass output=<index in [0, {n_out})> to choose one")
        output = 0
    if not isinstance(output, int) or not 0 <= output < n_out:
        raise ValueError(f"output must be an int in [0, {n_out}), got {output!r}")
    width = loc.numel() // n_out
    sel = slice(output * width, (output + 1) * width)
    return loc[sel], cov[sel] if cov.ndim == 1 else cov[sel, sel]
