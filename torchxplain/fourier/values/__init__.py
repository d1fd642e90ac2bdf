"""Closed-form game values of a sparse spectrum against a background (interventional), batched.

Two exact kernels compute the same values (see the design page): the dense two-GEMM form of Eq. 5 (``_gemm``,
``Θ(Q·|D|·k·n)``, the dense/GPU path) and the small-support kernel (``_support``: tables over the patterns of support
families, ``_families``, for trees and low-degree spectra); with few players the level-grid kernel (``_grid``). A
``ValuePlan`` (``_plan``) picks one by its cost model (``_cost``); the public functions (``_public``) validate their
inputs once and go through the same plan. ``_players`` maps players to binary features, ``_relaxed`` extends the
values to real-valued queries, ``_paired`` is the kernel of per-row baselines, and ``interactions/`` holds the
interaction-index family.

The names imported here are this subpackage's interface to its siblings (they import from here, never from its
private modules); public names are in :mod:`torchxplain.fourier`.
"""

from torchxplain.fourier.values._cost import Kernel, check_kernel
from torchxplain.fourier.values._families import MAX_FAMILY_SIZE, SupportFamilies, from_cover, support_families
from torchxplain.fourier.values._grid import GridKernel, coalition_weights, mixed_radix_digits
from torchxplain.fourier.values._keys import KeyLayout, canonical, subsets, unique_keys
from torchxplain.fourier.values._paired import paired_indices
from torchxplain.fourier.values._plan import ValuePlan
from torchxplain.fourier.values._players import PlayerMap, player_map
from torchxplain.fourier.values._public import shapley_values
from torchxplain.fourier.values._weights import TableKind
from torchxplain.fourier.values.interactions._api import check_index, check_result_memory
from torchxplain.fourier.values.interactions._weights import INDICES, Index
