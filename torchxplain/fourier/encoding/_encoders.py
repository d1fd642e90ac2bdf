"""Input encoders: how a Fourier explainer turns the rows users pass into the binary features of its spectrum.

An encoder maps raw inputs ``(N, n_inputs)`` to binary features ``(N, n_binary)`` and says which raw input owns
each binary feature (``owner``), so that values can be reported per raw input (a player owns all of its binary
features). Encoders are ``nn.Module`` s: their tensors are buffers (``.to()`` moves them, ``state_dict`` holds
them) and :meth:`config` gives the JSON-able rest, so an explainer saves and loads with its encoding.

* :class:`BinaryEncoder` — inputs already in {0,1}^n (one-hot data, binary landscapes); the identity.
* :class:`ThresholdEncoder` — continuous inputs; every threshold becomes a binary feature owned by the feature it
  splits (a :class:`~torchxplain.fourier.ThresholdEncoding`, e.g. a tree's splits,
  :class:`~torchxplain.fourier.TreeEncoding`, or a black box's data, ``ThresholdEncoding.from_data``).
* :class:`RawEncoder` — the identity on raw rows, for exact enumeration through a model on continuous inputs.

An encoder of a black box fitted on rows (``FourierShap(model, background, data=...)``) also holds the *domain*
of the fit: each input column's range over the rows the fit was held to. A row outside it is encoded as the
nearest end of the range (a threshold code cannot say "beyond"; a bit constant there has no fitted effect), so
:meth:`InputEncoder.outside` tells which entries the spectrum never saw.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_binary, check_finite, chunk_bounds, rows_per_chunk
from torchxplain._core.saved_fields import SavedFields
from torchxplain.fourier.encoding._thresholds import ThresholdEncoding, threshold_codes


class InputEncoder(nn.Module):
    """Base class: raw ``(N, n_inputs)`` rows -> binary ``(N, n_binary)`` features owned by raw inputs.

    Attributes:
        owner: ``(n_binary,)`` int64 raw input that owns each binary feature.
    """

    kind: str = ""
    binary_codes: bool = True
    """Whether :meth:`encode` gives binary codes (every encoder of a spectrum); ``False`` for the raw identity
    encoder of exact enumeration on continuous inputs."""
    owner: Tensor
    domain_bits: Tensor | None
    """``(2, n_inputs)`` int64 bit patterns of the float64 domain (so ``.to(float32)`` cannot move it), or ``None``."""
    input_dtype: torch.dtype = torch.float64
    """The precision raw values are compared in."""

    def _hold_domain(self, domain: Tensor | None) -> None:
        """Register the ``(2, n_inputs)`` domain ``[low; high]`` of a fit (``None``: valid everywhere)."""
        if domain is not None:
            if domain.shape != (2, self.n_inputs) or not bool((domain[0] <= domain[1]).all()):
                raise ValueError(f"domain must be (2, {self.n_inputs}) rows [low; high] with low <= high")
            domain = domain.double().contiguous().view(torch.int64).clone()
        self.register_buffer("domain_bits", domain)

    @property
    def domain(self) -> Tensor | None:
        """``(2, n_inputs)`` float64 ``[low; high]``: each column's range over the rows the fit was held to
        (``None``: the spectrum holds for every row the encoder takes, e.g. a tree's or a known spectrum)."""
        return None if self.domain_bits is None else self.domain_bits.view(torch.float64)

    def outside(self, x: Tensor) -> Tensor:
        """``(N, n_inputs)`` bool: the entries of checked rows ``x`` outside :attr:`domain` (all ``False`` without
        one), compared in the encoder's input precision; chunked over rows."""
        out = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
        domain = self.domain
        if domain is None:
            return out
        low, high = domain.to(x.device)
        for a, b in chunk_bounds(x.shape[0], rows_per_chunk(x.shape[1] * 17, x.shape[0])):
            v = x[a:b].to(self.input_dtype).double()
            out[a:b] = (v < low) | (v > high)
        return out

    @property
    def n_inputs(self) -> int:
        """Number of raw input features."""
        raise NotImplementedError

    @property
    def n_binary(self) -> int:
        """Number of binary features (the spectrum's ``n``)."""
        return int(self.owner.shape[0])

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        """Raise a clear ``ValueError`` when raw rows ``x`` (already ``(N, n_inputs)``) cannot be encoded."""
        raise NotImplementedError

    def encode(self, x: Tensor, dtype: torch.dtype) -> Tensor:
        """``(N, n_inputs)`` checked rows -> ``(N, n_binary)`` binary features in ``dtype`` (chunked)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """JSON-able description (the tensors are in the ``state_dict``)."""
        return {"kind": self.kind}


class BinaryEncoder(InputEncoder):
    """The identity on ``{0,1}^n``; with ``relaxed`` explainers the rows may be real-valued (multilinear).

    Args:
        n: number of binary inputs.
    """

    kind = "binary"

    def __init__(self, n: int, domain: Tensor | None = None) -> None:
        super().__init__()
        self.register_buffer("owner", torch.arange(n), persistent=False)
        self._hold_domain(domain)

    @property
    def n_inputs(self) -> int:
        return self.n_binary

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        if relaxed:
            check_finite(x, name)
            return
        try:
            check_binary(x, name)
        except ValueError as err:
            raise ValueError(
                f"{err}. To explain continuous inputs (NoiseTunnel, sensitivity_max) on the multilinear "
                "extension, build the explainer with relaxed=True"
            ) from None

    def encode(self, x: Tensor, dtype: torch.dtype) -> Tensor:
        return x.to(dtype)

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n_binary, "domain": self.domain_bits is not None}


class RawEncoder(BinaryEncoder):
    """The identity on finite real rows, for exact enumeration through the model on continuous inputs
    (``FourierShap(model, background, method="enumerate")``): a hybrid takes each column whole from the row or the
    background row, so the model is queried at raw hybrids. It has no binary code, hence no spectrum to save.

    Args:
        n: number of raw input columns.
    """

    kind = "raw"
    binary_codes = False

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        try:
            check_finite(x, name)
        except ValueError as err:
            raise ValueError(f"{err}; the model is queried at hybrids of finite rows: impute missing values") from None


class ThresholdEncoder(InputEncoder):
    """Continuous inputs: binary feature ``b`` is 1 when a row goes right of threshold ``b``.

    The split table lives in buffers; thresholds are kept as the int64 bit pattern of their float64 value so
    that ``explainer.to(torch.float32)`` (which casts floating buffers) can never move a split.

    Args:
        encoding: the thresholds (e.g. a tree model's splits, :meth:`TreeEncoding.from_model`).
        finite: refuse NaN and infinite inputs (a black box fitted on hybrids of finite rows, whose codes would
            route a missing value to a slot it never saw); ``False`` routes NaN as the encoding says (trees).
        domain: ``(2, n_features)`` ``[low; high]`` of the rows a black box was fitted on, or ``None`` (a tree's
            splits hold for every value).
    """

    kind = "thresholds"
    threshold_bits: Tensor
    nan_right: Tensor
    zero_is_missing: Tensor

    def __init__(self, encoding: ThresholdEncoding, finite: bool = False, domain: Tensor | None = None) -> None:
        super().__init__()
        if not isinstance(encoding, ThresholdEncoding):
            raise TypeError(
                f"encoding must be a ThresholdEncoding (e.g. TreeEncoding.from_model), got {type(encoding).__name__}"
            )
        self.register_buffer("owner", encoding.feature.clone())
        self.register_buffer("threshold_bits", encoding.threshold.double().contiguous().view(torch.int64).clone())
        self.register_buffer("nan_right", encoding.nan_right.clone())
        self.register_buffer("zero_is_missing", encoding.zero_is_missing.clone())
        self.strict = encoding.strict
        self.input_dtype = encoding.input_dtype
        self.missing_value = encoding.missing_value
        self._n_inputs = encoding.n_features
        self.finite = finite
        self._hold_domain(domain)

    @property
    def n_inputs(self) -> int:
        return self._n_inputs

    @property
    def encoding(self) -> ThresholdEncoding:
        """The thresholds as a :class:`ThresholdEncoding` (on the encoder's device)."""
        return ThresholdEncoding(
            self.owner,
            self.threshold_bits.view(torch.float64),
            self.nan_right,
            self.zero_is_missing,
            self.strict,
            self.input_dtype,
            self._n_inputs,
            missing_value=self.missing_value,
        )

    def check(self, x: Tensor, name: str, relaxed: bool = False) -> None:
        # NaN is a missing value (routed like the library does); infinities are ordinary far values.
        if x.is_complex():
            raise TypeError(f"{name} must be real-valued, got dtype {x.dtype}")
        if self.finite:
            try:
                check_finite(x, name)
            except ValueError as err:
                raise ValueError(
                    f"{err}; this explainer was fitted on finite rows: impute missing values as you did for training"
                ) from None

    def encode(self, x: Tensor, dtype: torch.dtype) -> Tensor:
        codes = threshold_codes(
            x,
            self.owner,
            self.threshold_bits.view(torch.float64),
            self.nan_right,
            self.zero_is_missing,
            self.strict,
            self.input_dtype,
            self.missing_value,
        )  # x was validated at the explainer's boundary
        return codes.to(dtype)

    def config(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n_inputs": self._n_inputs,
            "n_binary": self.n_binary,
            "strict": self.strict,
            "input_dtype": str(self.input_dtype).removeprefix("torch."),
            "missing_value": None if self.missing_value != self.missing_value else self.missing_value,
            "finite": self.finite,
            "domain": self.domain_bits is not None,
        }


def encoder_from_fields(fields: SavedFields, fitted: bool = False) -> InputEncoder:
    """Rebuild an encoder from its saved :meth:`InputEncoder.config` (``fields.section("encoder")`` of the
    explainer) and tensors (``encoder.*`` in the state), every field checked: the one reader of a saved encoder.

    The dimensions ``n_binary`` (the spectrum's width) and ``n_inputs`` (the background's) must be bound already,
    so no size is ever read from the config alone. ``fitted``: the file's fit report says a black box was fitted
    on continuous rows (``method="continuous"``), whose encoder is always the thresholds of
    ``ThresholdEncoding.from_data``: finite, strictly increasing per column, compared with ``x > threshold``, no
    missing values routed, finite rows only — so any other flag is an edit, refused.

    Raises:
        SavedFieldError: an unknown kind, sizes that disagree with the spectrum or the background, owners out of
            range or out of order, NaN thresholds, a split listed twice, split tables of the wrong dtype or length,
            an input dtype off the allow-list, flags that contradict the saved route, a domain that is not one.
    """
    config = fields.section("encoder")
    kind = config.choice("kind", (BinaryEncoder.kind, ThresholdEncoder.kind))
    n_binary, n_inputs = fields.dim("n_binary"), fields.dim("n_inputs")
    config.require(not fitted or kind == ThresholdEncoder.kind, "kind", "must be 'thresholds' for a continuous fit")
    if kind == BinaryEncoder.kind:
        n = config.integer("n", minimum=1)
        config.require(n == n_binary == n_inputs, "n", f"is {n}, but the spectrum and background have {n_binary}")
        return BinaryEncoder(n, domain=_saved_domain(fields, binary=True))
    for key, want in (("n_binary", n_binary), ("n_inputs", n_inputs)):
        got = config.integer(key, minimum=1 if key == "n_inputs" else 0)
        config.require(got == want, key, f"is {got}, but the saved tensors have {want}")
    encoder = fields.sub("encoder.")
    owner = encoder.tensor("owner", ("n_binary",), "int", minimum=0, maximum=n_inputs - 1)
    thresholds = encoder.tensor("threshold_bits", ("n_binary",), "int", dtype=torch.int64).view(torch.float64)
    fields.require(not bool(torch.isnan(thresholds).any()), "encoder.threshold_bits", "holds NaN thresholds")
    nan_right = encoder.tensor("nan_right", ("n_binary",), "bool")
    zero_is_missing = encoder.tensor("zero_is_missing", ("n_binary",), "bool")
    strict, finite = bool(config.flag("strict")), bool(config.flag("finite", optional=True))
    # a missing= sentinel (XGBoost); null or absent (files saved before it) is NaN: none
    missing = None if config.value("missing_value", optional=True) is None else config.number("missing_value")
    _check_split_order(fields, owner.long(), thresholds, nan_right, zero_is_missing)
    if fitted:
        fields.require(bool(torch.isfinite(thresholds).all()), "encoder.threshold_bits", "holds infinite thresholds")
        config.require(finite, "finite", "is false, but a continuous black-box fit takes finite rows only")
        config.require(not strict, "strict", "is true, but a continuous black-box fit compares x > threshold")
        config.require(missing is None, "missing_value", "is set, but a continuous black-box fit has no sentinel")
        for key, table in (("nan_right", nan_right), ("zero_is_missing", zero_is_missing)):
            fields.require(not bool(table.any()), f"encoder.{key}", "is set, but a continuous fit routes no NaN")
    else:
        config.require(not finite, "finite", "is true, but only a continuous black-box fit (fit_report) sets it")
    encoding = ThresholdEncoding(
        owner,
        thresholds,
        nan_right,
        zero_is_missing,
        strict,
        config.dtype("input_dtype", {"float32": torch.float32, "float64": torch.float64}),
        n_inputs,
        missing_value=float("nan") if missing is None else missing,
    )
    return ThresholdEncoder(encoding, finite=finite, domain=_saved_domain(fields, binary=False))


def _check_split_order(
    fields: SavedFields, owner: Tensor, thresholds: Tensor, nan_right: Tensor, zero_is_missing: Tensor
) -> None:
    """Splits are saved sorted by ``(feature, threshold, nan_right, zero_is_missing)`` and distinct, as every
    encoding the library builds is (``from_data``, ``TreeEncoding``): two swapped or a repeated threshold — an
    edit that moves values between slots — is refused."""
    if owner.numel() < 2:
        return
    keys = torch.stack((owner.double(), thresholds, nan_right.double(), zero_is_missing.double()), 1)
    a, b = keys[:-1], keys[1:]
    earlier = a != b
    first = earlier.long().argmax(1)  # the first component where consecutive splits differ
    ordered = earlier.any(1) & (a.gather(1, first[:, None]) < b.gather(1, first[:, None]))[:, 0]
    if not bool(ordered.all()):
        at = int((~ordered).nonzero()[0])
        problem = "repeats a split" if not bool(earlier[at].any()) else "is not sorted by feature and threshold"
        raise fields.fail(
            "encoder.threshold_bits",
            f"{problem} (entries {at} and {at + 1}: feature {int(owner[at])}, thresholds {float(thresholds[at])!r}, "
            f"{float(thresholds[at + 1])!r})",
        )


def _saved_domain(fields: SavedFields, binary: bool) -> Tensor | None:
    """The saved domain of a fit (``encoder['domain']`` true: ``encoder.domain_bits``, finite ``[low; high]`` rows
    with ``low <= high``, 0/1 for binary inputs); ``None`` when the file has none (files saved before it)."""
    if not fields.section("encoder").flag("domain", optional=True):
        return None
    bits = fields.sub("encoder.").tensor("domain_bits", (2, "n_inputs"), "int", dtype=torch.int64)
    domain = bits.view(torch.float64)
    fields.require(bool(torch.isfinite(domain).all()), "encoder.domain_bits", "holds NaN or infinite bounds")
    fields.require(bool((domain[0] <= domain[1]).all()), "encoder.domain_bits", "has a low bound above its high")
    binary_ok = not binary or bool(((domain == 0) | (domain == 1)).all())
    fields.require(binary_ok, "encoder.domain_bits", "of binary inputs must hold 0 and 1")
    return domain
