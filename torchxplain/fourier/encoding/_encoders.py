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
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from torchxplain._core import check_binary, check_finite
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

    def __init__(self, n: int) -> None:
        super().__init__()
        self.register_buffer("owner", torch.arange(n), persistent=False)

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
        return {"kind": self.kind, "n": self.n_binary}


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
    """

    kind = "thresholds"
    threshold_bits: Tensor
    nan_right: Tensor
    zero_is_missing: Tensor

    def __init__(self, encoding: ThresholdEncoding, finite: bool = False) -> None:
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
        }


def encoder_from_fields(fields: SavedFields) -> InputEncoder:
    """Rebuild an encoder from its saved :meth:`InputEncoder.config` (``fields.section("encoder")`` of the
    explainer) and tensors (``encoder.*`` in the state), every field checked.

    The dimensions ``n_binary`` (the spectrum's width) and ``n_inputs`` (the background's) must be bound already,
    so no size is ever read from the config alone.

    Raises:
        SavedFieldError: an unknown kind, sizes that disagree with the spectrum or the background, owners out of
            range, NaN thresholds, split tables of the wrong dtype or length, an input dtype off the allow-list.
    """
    config = fields.section("encoder")
    kind = config.choice("kind", (BinaryEncoder.kind, ThresholdEncoder.kind))
    n_binary, n_inputs = fields.dim("n_binary"), fields.dim("n_inputs")
    if kind == BinaryEncoder.kind:
        n = config.integer("n", minimum=1)
        config.require(n == n_binary == n_inputs, "n", f"is {n}, but the spectrum and background have {n_binary}")
        return BinaryEncoder(n)
    for key, want in (("n_binary", n_binary), ("n_inputs", n_inputs)):
        got = config.integer(key, minimum=1 if key == "n_inputs" else 0)
        config.require(got == want, key, f"is {got}, but the saved tensors have {want}")
    encoder = fields.sub("encoder.")
    owner = encoder.tensor("owner", ("n_binary",), "int", minimum=0, maximum=n_inputs - 1)
    thresholds = encoder.tensor("threshold_bits", ("n_binary",), "int", dtype=torch.int64).view(torch.float64)
    fields.require(not bool(torch.isnan(thresholds).any()), "encoder.threshold_bits", "holds NaN thresholds")
    encoding = ThresholdEncoding(
        owner,
        thresholds,
        encoder.tensor("nan_right", ("n_binary",), "bool"),
        encoder.tensor("zero_is_missing", ("n_binary",), "bool"),
        bool(config.flag("strict")),
        config.dtype("input_dtype", {"float32": torch.float32, "float64": torch.float64}),
        n_inputs,
        # a missing= sentinel (XGBoost); null or absent (files saved before it) is NaN: none
        missing_value=float("nan")
        if config.value("missing_value", optional=True) is None
        else config.number("missing_value"),
    )
    return ThresholdEncoder(encoding, finite=bool(config.flag("finite", optional=True)))
