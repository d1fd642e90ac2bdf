"""Bad inputs for the FourierSHAP entry points (torchxplain.fourier and the top-level re-exports)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import torchxplain
import torchxplain as tx
from tests.robustness.harness import case, exempt, result_case

F = "torchxplain.fourier."
reason = "a result container built by the library (its fields are the library's outputs)"
exempt(
    reason, F + "FitReport", F + "PruningReport", F + "BackgroundTerm", F + "PlayerValues", "torchxplain.AfterFitResult"
)
exempt("an abstract base class of encoders (no constructor arguments of its own)", F + "InputEncoder")
exempt("a warning category the library raises (users filter it; it takes no input)", F + "FitQualityWarning")


def spectrum() -> tx.FourierSpectrum:
    freq = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.bool)
    return tx.FourierSpectrum(freq, torch.tensor([0.5, 1.0, -2.0, 0.25], dtype=torch.float64))


def bits(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 2, (rows, 4), generator=torch.Generator().manual_seed(seed)).double()


def model(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] - 2.0 * x[:, 1] * x[:, 2]


@case("torchxplain.fourier.FitOptions", "a float batch size", TypeError, "batch_size must be an int")
def _():
    tx.fourier.FitOptions(batch_size=4.0)


@case("torchxplain.fourier.FitOptions", "a zero time budget", ValueError, "time_budget must be a positive number")
def _():
    tx.fourier.FitOptions(time_budget=0)


@case("torchxplain.fourier.FitOptions", "show_progress='yes'", TypeError, r"show_progress must be True or False")
def _():
    tx.fourier.FitOptions(show_progress="yes")  # was accepted until a fit used it


@case("torchxplain.fourier.FitOptions", "max_memory='lots'", ValueError, r"max_memory must be bytes or a string like")
def _():
    tx.fourier.FitOptions(max_memory="lots")


@case("torchxplain.fourier.FitOptions", "max_memory=0", ValueError, r"max_memory must be at least 1 MiB.*got 0")
def _():
    tx.fourier.FitOptions(max_memory=0)


@case("torchxplain.FourierShap", "seed='abc' (failed inside int())", TypeError, r"seed must be an int, got str")
def _():
    tx.FourierShap(model, bits(5), seed="abc")


@case("torchxplain.FourierShap", "seed=-1 on a tabulated fit (passed)", ValueError, r"seed must be >= 0, got -1")
def _():
    tx.FourierShap(model, bits(5), seed=-1)


@case("torchxplain.FourierShap", "seed='abc' on continuous rows", TypeError, r"seed must be an int, got str")
def _():
    tx.FourierShap(model, bits(5) + 0.5, seed="abc", show_progress=False)


@case("torchxplain.fourier.FitOptions", "an unknown option by name", TypeError, r"unexpected fit options \['budget'\]")
def _():
    tx.fit_sparse_fourier(model, 4, background=bits(5), budget=3)


@case("torchxplain.FourierSpectrum", "amplitudes of the wrong length", ValueError, r"amplitudes must have shape \(4,\)")
def _():
    tx.FourierSpectrum(torch.zeros(4, 3, dtype=torch.bool), torch.zeros(3))


@case("torchxplain.FourierSpectrum", "frequency entries 2 and -1", ValueError, "frequencies must hold binary")
def _():
    tx.FourierSpectrum.from_dict({"frequencies": [[2, 0], [-1, 1]], "amplitudes": [1.0, 2.0]})


@case("torchxplain.FourierSpectrum", "NaN amplitude", ValueError, "amplitudes contains NaN")
def _():
    tx.FourierSpectrum(torch.zeros(1, 2, dtype=torch.bool), torch.tensor([float("nan")]))


@case("torchxplain.FourierSpectrum", "evaluate on non-binary rows", ValueError, r"x must hold binary.*column 0")
def _():
    spectrum().evaluate(torch.full((2, 4), 0.5, dtype=torch.float64))


@case("torchxplain.SparseFourierSurrogate", "not a spectrum", TypeError, "spectrum must be a FourierSpectrum")
def _():
    tx.SparseFourierSurrogate(torch.zeros(3))


@case("torchxplain.SparseFourierSurrogate", "wrong width", ValueError, r"x has 3 features.*expected 4")
def _():
    tx.SparseFourierSurrogate(spectrum())(torch.zeros(2, 3))


@case(F + "shapley_values", "numpy queries of the wrong width", ValueError, r"x has 3 features.*expected 4")
def _():
    tx.fourier.shapley_values(spectrum(), np.zeros((2, 3)), bits(3))


@case(F + "shapley_values", "float groups", TypeError, "groups must hold integer player ids")
def _():
    tx.fourier.shapley_values(spectrum(), bits(2), bits(3), groups=torch.tensor([0.0, 0.0, 1.0, 1.0]))


@case(F + "shapley_values", "empty background", ValueError, "background is empty")
def _():
    tx.fourier.shapley_values(spectrum(), bits(2), bits(3)[:0])


@case(F + "shapley_values", "a 1-byte budget", ValueError, "max_memory must be at least 1 MiB")
def _():
    tx.fourier.shapley_values(spectrum(), bits(2), bits(3), max_memory=1)


@case(F + "banzhaf_values", "non-binary background", ValueError, "background must hold binary")
def _():
    tx.fourier.banzhaf_values(spectrum(), bits(2), bits(3) * 0.5 + 0.25)


@case(F + "shapley_interactions", "groups of the wrong length", ValueError, r"groups must give one player id")
def _():
    tx.fourier.shapley_interactions(spectrum(), bits(2), bits(3), groups=torch.tensor([0, 1]))


@case(F + "precompute_background", "background of the wrong width", ValueError, r"background has 2 features")
def _():
    tx.fourier.precompute_background(spectrum(), bits(3)[:, :2])


@case(F + "interaction_values", "unknown index", ValueError, r"index must be one of")
def _():
    tx.fourier.interaction_values(spectrum(), bits(2), bits(3), index="shapley")


@case(F + "interaction_values", "max_order above the players", ValueError, r"max_order must be between 1 and")
def _():
    tx.fourier.interaction_values(spectrum(), bits(2), bits(3), index="k-SII", max_order=9)


@case("torchxplain.FourierShap", "a model that is not callable", TypeError, "forward_func must be the model")
def _():
    tx.FourierShap("model", bits(3))


@case(
    "torchxplain.FourierShap",
    "continuous queries without relaxed",
    ValueError,
    r"inputs must hold binary.*relaxed=True",
)
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).attribute(torch.full((2, 4), 0.3, dtype=torch.float64))


@case("torchxplain.FourierShap", "float feature_mask", TypeError, "feature_mask must hold integer player ids")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).attribute(bits(2), feature_mask=torch.zeros(1, 4))


@case("torchxplain.FourierShap", "a DataFrame with other columns", ValueError, r"inputs has columns that differ")
def _():
    import pandas as pd

    explainer = tx.FourierShap.from_spectrum(spectrum(), pd.DataFrame(bits(3).numpy(), columns=list("abcd")))
    explainer.attribute(pd.DataFrame(bits(2).numpy(), columns=list("abce")))


@case(
    "torchxplain.FourierShap", "a tree ensemble given to from_spectrum", TypeError, "spectrum must be a FourierSpectrum"
)
def _():
    tx.FourierShap.from_spectrum(object(), bits(3))


@case("torchxplain.FourierShap", "an unsupported model given to from_trees", TypeError, "not a supported tree model")
def _():
    tx.FourierShap.from_trees(object(), bits(3))


@case("torchxplain.FourierShap", "banzhaf on an explainer's wrong width", ValueError, r"inputs has 3 features in all")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).banzhaf(bits(2)[:, :3])


@case("torchxplain.FourierShap", "a background of the wrong width", ValueError, r"background has 2 features")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).interactions(bits(2), background=bits(3)[:, :2])


@case("torchxplain.FourierShap", "baselines of the wrong width", ValueError, r"baselines has shape \(2, 2\).*\(2, 4\)")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).interactions(bits(2), baselines=bits(2)[:, :2])


@case("torchxplain.FourierShap", "a target it was not built for", ValueError, r"built for target=None .*; got target=1")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3)).attribute(bits(2), target=1)


@case("torchxplain.fit_sparse_fourier", "n_features below 1", ValueError, "n_features")
def _():
    tx.fit_sparse_fourier(model, 0, k=4)


@case("torchxplain.tree_spectrum", "an unsupported model", TypeError, "not a supported tree model")
def _():
    tx.tree_spectrum(object())


@case(F + "TreeEncoding", "a model that is not a tree ensemble", TypeError, "not a supported tree model")
def _():
    tx.fourier.TreeEncoding.from_model(object())


@case(F + "BinaryEncoder", "non-binary rows", ValueError, r"inputs must hold binary")
def _():
    tx.fourier.BinaryEncoder(4).check(torch.full((1, 4), 0.5), "inputs")


@case(F + "ThresholdEncoder", "not a ThresholdEncoding", TypeError, "encoding must be a ThresholdEncoding")
def _():
    tx.fourier.ThresholdEncoder(object())


A = F
TR = "torchxplain.fourier.trees._extraction."  # private: reached through from_trees and tree_spectrum
ENC = "torchxplain.fourier.trees._encoding."  # the one encoding rule of from_trees and tree_spectrum
D = "torchxplain.fourier.trees.adapters._dispatch."
IX = "torchxplain.fourier.values.interactions._api."
exempt("a constant", F + "SUPPORTED_MODELS", F + "INDICES")
exempt("a plain data class the library builds (parse_model's flat tree form)", F + "TreeEnsemble")


def tree(binary: bool = True) -> Any:
    """A fitted depth-2 scikit-learn tree: a regressor on 4 binary inputs, or a 3-class classifier on 3 floats."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    rng = np.random.default_rng(0)
    if binary:
        x = rng.integers(0, 2, (40, 4)).astype(float)
        return DecisionTreeRegressor(max_depth=2).fit(x, x[:, 0] - x[:, 1])
    return DecisionTreeClassifier(max_depth=2).fit(rng.normal(size=(40, 3)), rng.integers(0, 3, 40))


@case(A + "parse_model", "an object that is not a tree model", TypeError, r"model of type .* not a supported tree")
def _():
    tx.fourier.parse_model(object())


@case(A + "parse_model", "a multiclass model without target", ValueError, r"has 3 outputs.*pass target=<index in 0")
def _():
    tx.fourier.parse_model(tree(binary=False))


@case(A + "parse_model", "an unfitted model", ValueError, r"DecisionTreeRegressor is not fitted; call \.fit\(\)")
def _():
    from sklearn.tree import DecisionTreeRegressor

    tx.fourier.parse_model(DecisionTreeRegressor())


@case("torchxplain.FourierShap", "an unfitted XGBRegressor (NotFittedError)", ValueError, r"XGBRegressor is not")
def _():
    import xgboost

    tx.FourierShap.from_trees(xgboost.XGBRegressor(), np.zeros((4, 3)))


@case("torchxplain.explain_after_fit", "an unfitted XGBClassifier", ValueError, r"XGBClassifier is not fitted")
def _():
    import xgboost

    tx.explain_after_fit(xgboost.XGBClassifier(), np.zeros((4, 3)), np.zeros((2, 3)))


@case(A + "parse_model", "an empty xgboost Booster (failed inside save_raw)", ValueError, r"Booster is not fitted")
def _():
    import xgboost

    tx.fourier.parse_model(xgboost.Booster())


@case(D + "parse_model_outputs", "a class index out of range", ValueError, r"target must be in 0\.\.2 .*got 9")
def _():
    torchxplain.fourier.trees.adapters._dispatch.parse_model_outputs(tree(binary=False), target=9)


@case(D + "parse_model_outputs", "a float target", TypeError, r"target must be an int output index, got float")
def _():
    torchxplain.fourier.trees.adapters._dispatch.parse_model_outputs(tree(binary=False), target=2.0)


@case(D + "parse_model_outputs", "a string instead of a model", TypeError, r"model of type builtins\.str is not")
def _():
    torchxplain.fourier.trees.adapters._dispatch.parse_model_outputs("model.json")


@case(ENC + "resolve_encoding", "an unknown encoding name", ValueError, r"encoding must be one of \('auto', 'binary'")
def _():
    model = tree()
    torchxplain.fourier.trees._encoding.resolve_encoding("onehot", [tx.fourier.parse_model(model)], lambda: None)


@case(ENC + "resolve_encoding", "an encoding of the wrong type", TypeError, r"encoding must be one of .* got int")
def _():
    model = tree()
    torchxplain.fourier.trees._encoding.resolve_encoding(3, [tx.fourier.parse_model(model)], lambda: None)


@case(TR + "extract", "an encoding name instead of a TreeEncoding", TypeError, r"encoding must be a TreeEncoding or")
def _():
    torchxplain.fourier.trees._extraction.extract(tx.fourier.parse_model(tree()), "thresholds")


@case(TR + "extract", "a TreeEncoding of another model", ValueError, r"encoding has 3 features but .* expects 4")
def _():
    encoding = tx.fourier.TreeEncoding.from_model(tree(binary=False))
    torchxplain.fourier.trees._extraction.extract(tx.fourier.parse_model(tree()), encoding)


@case(TR + "extract", "binary inputs on continuous splits", ValueError, r"not a function of binary.*'thresholds'")
def _():
    torchxplain.fourier.trees._extraction.extract(tx.fourier.parse_model(tree(binary=False), target=0))


@case(TR + "spectrum_of_ensemble", "max_terms=0", ValueError, r"max_terms must be a positive int .*got 0")
def _():
    torchxplain.fourier.trees._extraction.spectrum_of_ensemble(tx.fourier.parse_model(tree()), max_terms=0)


@case(TR + "spectrum_of_ensemble", "an expansion above max_terms", ValueError, r"above max_terms=2.*raise max_terms")
def _():
    torchxplain.fourier.trees._extraction.spectrum_of_ensemble(tx.fourier.parse_model(tree()), max_terms=2)


@case(TR + "spectrum_of_ensemble", "a fitted model, not its parsed ensemble", TypeError, r"ensemble must be a parsed")
def _():
    torchxplain.fourier.trees._extraction.spectrum_of_ensemble(tree())


@case(TR + "extract", "max_terms as a string", ValueError, r"max_terms must be a positive int .*got '1'")
def _():
    torchxplain.fourier.trees._extraction.extract(tx.fourier.parse_model(tree()), max_terms="1")


@case(TR + "extract", "an integer dtype", TypeError, r"dtype must be a floating torch dtype")
def _():
    torchxplain.fourier.trees._extraction.extract(tx.fourier.parse_model(tree()), dtype=torch.int64)


@case(
    "torchxplain.fourier.trees._splits.splits_binary_inputs",
    "a fitted model, not its parsed ensemble",
    TypeError,
    r"pass .*parse_model\(model",
)
def _():
    torchxplain.fourier.trees._splits.splits_binary_inputs(tree())


@case(
    ENC + "resolve_encoding", "a fitted model in place of its parsed ensembles", TypeError, r"ensemble must be a parsed"
)
def _():
    torchxplain.fourier.trees._encoding.resolve_encoding("auto", [tree()], lambda: None)


@case(TR + "spectrum_of_ensemble", "a 1-byte budget", ValueError, "max_memory must be at least 1 MiB")
def _():
    torchxplain.fourier.trees._extraction.spectrum_of_ensemble(tx.fourier.parse_model(tree()), max_memory=1)


@case(F + "shapley_values", "a 2-D groups", ValueError, r"groups must give one player id per input feature.*\(1, 4\)")
def _():
    tx.fourier.shapley_values(spectrum(), bits(3), bits(5), groups=torch.tensor([[0, 0, 1, 1]]))


@case(F + "shapley_values", "negative ids", ValueError, r"groups must hold non-negative player ids, found -1")
def _():
    tx.fourier.shapley_values(spectrum(), bits(3), bits(5), groups=torch.tensor([-1, 0, 1, 1]))


@case(F + "ThresholdEncoding", "a NaN threshold", ValueError, r"threshold holds NaN at index 1")
def _():
    encoding([0, 1], [0.5, float("nan")])


def encoding(feature, threshold, dtype=torch.float64) -> Any:
    k = len(threshold)
    return tx.fourier.ThresholdEncoding(
        torch.tensor(feature), torch.tensor(threshold), torch.zeros(k), torch.zeros(k), False, dtype, 2
    )


@case(F + "ThresholdEncoding", "a feature id out of range", ValueError, r"feature ids must be in 0\.\.1, found 5")
def _():
    tx.fourier.ThresholdEncoding(
        torch.tensor([0, 5]), torch.zeros(2), torch.zeros(2), torch.zeros(2), False, torch.float64, 2
    )


@case(F + "ThresholdEncoding", "arrays of different lengths", ValueError, r"one entry per binary feature")
def _():
    tx.fourier.ThresholdEncoding(
        torch.tensor([0, 1]), torch.zeros(3), torch.zeros(2), torch.zeros(2), False, torch.float64, 2
    )


@case(F + "ThresholdEncoding", "a half-precision input dtype", ValueError, r"input_dtype must be torch.float32 or")
def _():
    tx.fourier.ThresholdEncoding(
        torch.tensor([0]), torch.zeros(1), torch.zeros(1), torch.zeros(1), False, torch.float16, 1
    )


@case(F + "value_plan", "a list instead of a spectrum", TypeError, r"spectrum must be a FourierSpectrum, got list")
def _():
    tx.fourier.value_plan([[0, 1]], bits(5))


@case(F + "value_plan", "a non-binary background", ValueError, r"background must hold binary features")
def _():
    tx.fourier.value_plan(spectrum(), bits(5) + 0.5)


@case(F + "prune_tree_spectrum", "a string instead of a spectrum", TypeError, r"spectrum must be a FourierSpectrum")
def _():
    tx.fourier.prune_tree_spectrum("spectrum.pt", bits(5), r2_target=0.99)


@case(
    F + "prune_tree_spectrum", "a background of the wrong width", ValueError, r"background has 3 features.*expected 4"
)
def _():
    tx.fourier.prune_tree_spectrum(spectrum(), bits(5)[:, :3], r2_target=0.99)


@case(F + "to_shap_explanation", "a string for the values", TypeError, r"values must be a tensor, numpy array")
def _():
    tx.fourier.to_shap_explanation("phi", 0.0)


@case(F + "to_shapiq_values", "an unknown index name", ValueError, r"index must be one of \['k-SII'.*got 'nope'")
def _():
    tx.fourier.to_shapiq_values({0: torch.zeros(2), 1: torch.zeros(2, 3)}, "nope", 0.0)


@case(IX + "check_index", "an unknown index name", ValueError, r"index must be one of \['k-SII'.*got 'shapley'")
def _():
    torchxplain.fourier.values.interactions._api.check_index("shapley", None, 3)


@case(IX + "check_index", "a float max_order", TypeError, r"max_order must be an int, got float")
def _():
    torchxplain.fourier.values.interactions._api.check_index("SII", 2.0, 3)


@case(IX + "check_index", "max_order 2 for a value index", ValueError, r"index 'SV' is a value .*pass max_order=1")
def _():
    torchxplain.fourier.values.interactions._api.check_index("SV", 2, 3)


@case(IX + "check_index", "max_order above the players", ValueError, r"max_order must be between 1 and .* \(3\)")
def _():
    torchxplain.fourier.values.interactions._api.check_index("SII", 9, 3)


# --- Captum's conventions, grouped players, devices, files, memory and dtype ----------------------------------------
def explainer() -> Any:
    return tx.FourierShap.from_spectrum(spectrum(), bits(3))


@case(
    "torchxplain.FourierShap",
    "baselines of neither 1 nor N rows",
    ValueError,
    r"baselines has shape \(3, 4\).*background=",
)
def _():
    explainer().attribute(bits(2), baselines=bits(3))


@case(
    "torchxplain.FourierShap", "baselines and background at once", ValueError, r"baselines=.*or background=.*not both"
)
def _():
    explainer().attribute(bits(2), baselines=bits(2), background=bits(5))


@case("torchxplain.FourierShap", "one tensor baseline for tuple inputs", ValueError, r"tuple with one entry per input")
def _():
    explainer().attribute((bits(2)[:, :2], bits(2)[:, 2:]), baselines=bits(2))


@case("torchxplain.FourierShap", "a non-binary scalar baseline", ValueError, r"baselines must hold binary")
def _():
    explainer().attribute(bits(2), baselines=0.5)


@case("torchxplain.FourierShap", "per-row baselines on relaxed inputs", ValueError, r"per-row baselines need binary")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3), relaxed=True).attribute(bits(2) * 0.5, baselines=bits(2, 1))


@case(
    "torchxplain.FourierShap", "a per-row target of the wrong length", ValueError, r"target has 2 entries for 3 input"
)
def _():
    tx.FourierShap.from_trees(tree(binary=False), np.zeros((4, 3))).attribute(np.zeros((3, 3)), target=[0, 1])


@case(
    "torchxplain.FourierShap", "additional_forward_args to a spectrum", ValueError, r"takes no additional_forward_args"
)
def _():
    explainer().attribute(bits(2), additional_forward_args=(1.0,))


@case(
    "torchxplain.FourierShap",
    "other additional_forward_args than the fit's",
    ValueError,
    r"additional_forward_args differ from those the spectrum was fitted with",
)
def _():
    black_box = tx.FourierShap(lambda x, c: model(x) * c, bits(6), method="exact", additional_forward_args=2.0)
    black_box.attribute(bits(2), additional_forward_args=3.0)


@case("torchxplain.FourierShap", "internal_batch_size=0", ValueError, r"internal_batch_size must be .*got 0")
def _():
    explainer().attribute(bits(2), internal_batch_size=0)


@case("torchxplain.FourierShap", "return_convergence_delta='yes'", TypeError, r"return_convergence_delta must be True")
def _():
    explainer().attribute(bits(2), return_convergence_delta="yes")


@case("torchxplain.FourierShap", "player_names without feature_mask", ValueError, r"player_names name the players of")
def _():
    explainer().to_shap(bits(2), player_names=["a", "b", "c", "d"])


@case(
    "torchxplain.FourierShap", "player_names of the wrong length", ValueError, r"player_names must name the 2 players"
)
def _():
    explainer().player_values(bits(2), feature_mask=torch.tensor([[0, 0, 1, 1]]), player_names=["a"])


@case("torchxplain.FourierShap", "player_values of an unknown kind", ValueError, r"kind must be 'shapley' or 'banzhaf'")
def _():
    explainer().player_values(bits(2), kind="owen")


@case("torchxplain.FourierShap", "from_spectrum with kernel='dense'", ValueError, r"kernel must be one of \['auto'")
def _():
    tx.FourierShap.from_spectrum(spectrum(), bits(3), kernel="dense")


@case("torchxplain.FourierShap", "a device this machine lacks", ValueError, r"device='cuda:99', but (CUDA is not|this)")
def _():
    tx.FourierShap(model, bits(3), device="cuda:99")


@case("torchxplain.fit_sparse_fourier", "a device this machine lacks", ValueError, r"device='cuda:99', but")
def _():
    tx.fit_sparse_fourier(model, 4, device="cuda:99")


@case("torchxplain.FourierShap", "load onto a device this machine lacks", ValueError, r"map_location='cuda:99', but")
def _():
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = explainer().save(f"{folder}/fs.pt")
        tx.FourierShap.load(path, map_location="cuda:99")


@case("torchxplain.FourierShap", "save into a folder", IsADirectoryError, r"is a directory; pass a file path")
def _():
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        explainer().save(folder)


@case("torchxplain.FourierShap", "save under a missing folder", FileNotFoundError, r"folder .* does not exist")
def _():
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        explainer().save(f"{folder}/no/such/fs.pt")


@case("torchxplain.FourierShap", "interaction_values above the budget", ValueError, r"returns dense tensors of .* GiB")
def _():
    wide = tx.FourierSpectrum(torch.eye(16, dtype=torch.bool), torch.ones(16))
    tx.FourierShap.from_spectrum(wide, torch.zeros(1, 16)).interaction_values(torch.zeros(1, 16), max_order=8)


@case(F + "interaction_values", "m = 16 players at max_order=8", ValueError, r"order 8 on 16 players .* max_memory")
def _():
    wide = tx.FourierSpectrum(torch.eye(16, dtype=torch.bool), torch.ones(16))
    tx.fourier.interaction_values(wide, torch.zeros(1, 16), torch.zeros(1, 16), max_order=8)


@case(F + "shapley_values", "a background term of another spectrum", ValueError, r"term was made for another spectrum")
def _():
    term = tx.fourier.precompute_background(spectrum(), bits(3))
    tx.fourier.shapley_values(tx.FourierSpectrum(spectrum().frequencies, torch.ones(4)), bits(2), term)


@case("torchxplain.FourierSpectrum", "prune(k=2.5)", TypeError, r"k must be an int, got float")
def _():
    spectrum().prune(k=2.5)


@case(
    "torchxplain.FourierSpectrum",
    "prune(energy='all')",
    TypeError,
    r"energy must be a finite number in \(0, 1\], got str",
)
def _():
    spectrum().prune(energy="all")


@case(
    "torchxplain.FourierSpectrum", "evaluate on a list of the wrong width", ValueError, r"x has 3 features.*expected 4"
)
def _():
    spectrum().evaluate([[0, 1, 0]])


@case(F + "to_shapiq_values", "a baseline of the wrong shape", ValueError, r"baseline_value must be a scalar or one")
def _():
    tx.fourier.to_shapiq_values({0: torch.zeros(2), 1: torch.zeros(2, 3)}, "k-SII", torch.zeros(5))


@case("torchxplain.FourierShap", "a data frame with other columns", ValueError, r"data has columns that differ")
def _():
    import pandas as pd

    background = pd.DataFrame(bits(6).numpy(), columns=list("abcd"))
    tx.FourierShap(model, background, method="exact", data=pd.DataFrame(bits(6).numpy(), columns=list("dcba")))


# --- continuous black boxes -----------------------------------------------------------------------------------------
def reals(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def real_model(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] * x[:, 1] + x[:, 2]


@case("torchxplain.FourierShap", "a continuous background with NaN", ValueError, r"background contains NaN.*impute")
def _():
    background = reals(6)
    background[2, 1] = float("nan")
    tx.FourierShap(real_model, background, data=reals(20, 1))


@case("torchxplain.FourierShap", "continuous data of the wrong width", ValueError, r"data has 4 features")
def _():
    tx.FourierShap(real_model, reals(6), data=torch.randn(20, 4, dtype=torch.float64))


@case("torchxplain.FourierShap", "continuous data, other columns", ValueError, r"data has columns that differ")
def _():
    import pandas as pd

    background = pd.DataFrame(reals(6).numpy(), columns=list("abc"))
    tx.FourierShap(real_model, background, data=pd.DataFrame(reals(20, 1).numpy(), columns=list("cba")))


@case("torchxplain.FourierShap", "a binary-only method on continuous rows", ValueError, r"method='exact' fits binary")
def _():
    tx.FourierShap(real_model, reals(6), method="exact")


@case("torchxplain.FourierShap", "relaxed=True on continuous rows", ValueError, r"relaxed=True .*not 0/1.*drop it")
def _():
    tx.FourierShap(real_model, reals(6), relaxed=True)


@case("torchxplain.FourierShap", "NaN inputs to a continuous fit", ValueError, r"inputs contains NaN.*impute")
def _():
    explainer = tx.FourierShap(real_model, reals(6), method="enumerate")
    rows = reals(2, 2)
    rows[0, 0] = float("nan")
    explainer.attribute(rows)


@case(F + "FitOptions", "max_thresholds=0", ValueError, r"max_thresholds must be")
def _():
    tx.fourier.FitOptions(max_thresholds=0)


# --- crafted or damaged saved files: refused at load, with the field named ---------------------------------------
def load_crafted(explainer: Any, config: Any = None, state: Any = None) -> Any:
    """Save ``explainer``, edit its metadata (``config(cfg)``) or state (``state(tensors)``) in place, and load it."""
    import json
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = explainer.save(os.path.join(folder, "fs.pt"))
        data = torch.load(path, weights_only=True)
        meta = json.loads(data["metadata"])
        tensors = dict(data["state"])
        if config is not None:
            config(meta["config"])
        if state is not None:
            state(tensors)
        torch.save({**data, "metadata": json.dumps(meta), "state": tensors}, path)
        return tx.FourierShap.load(path)


def tree_explainer() -> Any:
    return tx.FourierShap.from_trees(tree(binary=False), np.random.default_rng(1).normal(size=(6, 3)), target=0)


def edit(key: str, change: Any) -> Any:
    def apply(tensors: dict[str, torch.Tensor]) -> None:
        tensors[key] = change(tensors[key].clone())

    return apply


def nan_first(bits: torch.Tensor) -> torch.Tensor:
    values = bits.view(torch.float64).clone()
    values[0] = float("nan")
    return values.view(torch.int64)


def set_first(value: int) -> Any:
    def change(t: torch.Tensor) -> torch.Tensor:
        t[0] = value
        return t

    return change


SAVED = "torchxplain.FourierShap"


@case(SAVED, "a saved NaN tree threshold", ValueError, r"'encoder.threshold_bits' holds NaN thresholds")
def _():
    load_crafted(tree_explainer(), state=edit("encoder.threshold_bits", nan_first))


@case(SAVED, "a saved negative tree owner", ValueError, r"'encoder.owner' must hold values >= 0")
def _():
    load_crafted(tree_explainer(), state=edit("encoder.owner", set_first(-1)))


@case(SAVED, "a saved tree owner out of range", ValueError, r"'encoder.owner' must hold values <= 2")
def _():
    load_crafted(tree_explainer(), state=edit("encoder.owner", set_first(7)))


@case(SAVED, "saved background bits that disagree", ValueError, r"'background_bits' is not the encoding of the saved")
def _():
    load_crafted(tree_explainer(), state=edit("background_bits", lambda b: ~b))


@case(SAVED, "a saved tree background of the wrong width", ValueError, r"encoder\['n_inputs'\] is 3, but the saved")
def _():
    load_crafted(tree_explainer(), state=edit("background", lambda b: torch.cat([b, b[:, :1]], 1)))


@case(SAVED, "an unknown saved input dtype", ValueError, r"encoder\['input_dtype'\] must name a dtype from")
def _():
    load_crafted(tree_explainer(), config=lambda c: c["encoder"].update(input_dtype="no_such_dtype"))


@case(SAVED, "a saved binary background of the wrong width", ValueError, r"'background_bits' has n_binary = 3")
def _():
    def narrow(tensors: dict[str, torch.Tensor]) -> None:
        tensors["background"], tensors["background_bits"] = (
            tensors["background"][:, :3],
            tensors["background_bits"][:, :3],
        )

    load_crafted(explainer(), state=narrow)


@case(SAVED, "a non-binary saved background", ValueError, r"'background' must hold only 0 and 1")
def _():
    load_crafted(explainer(), state=edit("background", lambda b: b * 0.5))


@case(SAVED, "relaxed: 'no' in a saved file", ValueError, r"'relaxed' must be true or false, got str 'no'")
def _():
    load_crafted(explainer(), config=lambda c: c.update(relaxed="no"))


@case(SAVED, "a crafted n of 2^40 features", ValueError, r"encoder\['n'\] is 1099511627776, but the spectrum")
def _():
    load_crafted(explainer(), config=lambda c: c["encoder"].update(n=2**40))


@case(SAVED, "a stride-0 (2^28, 8) background", ValueError, r"'background' is an expanded \(stride-0\) view")
def _():
    wide = tx.FourierSpectrum(torch.eye(8, dtype=torch.bool), torch.ones(8, dtype=torch.float64))

    def expand(tensors: dict[str, torch.Tensor]) -> None:
        tensors["background"] = torch.zeros(1, 8, dtype=torch.float64).expand(2**28, 8)
        tensors["background_bits"] = torch.zeros(1, 8, dtype=torch.bool).expand(2**28, 8)

    load_crafted(tx.FourierShap.from_spectrum(wide, torch.zeros(2, 8)), state=expand)


@case(SAVED, "saved feature_names of the wrong length", ValueError, r"'feature_names' has 1 names, expected 4")
def _():
    load_crafted(explainer(), config=lambda c: c.update(feature_names=["a"]))


@case(SAVED, "a saved kernel name that is not one", ValueError, r"'kernel' must be one of \['auto'")
def _():
    load_crafted(explainer(), config=lambda c: c.update(kernel="dense"))


@case(SAVED, "a saved fit report with unknown fields", ValueError, r"'fit_report' must be a FitReport record")
def _():
    load_crafted(explainer(), config=lambda c: c.update(fit_report={"method": "exact", "bogus": 1}))


@case(SAVED, "a saved class name that is a list (raised 'unhashable type')", ValueError, r"names its class with a list")
def _():
    import json
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = explainer().save(os.path.join(folder, "fs.pt"))
        data = torch.load(path, weights_only=True)
        meta = json.loads(data["metadata"])
        torch.save({**data, "metadata": json.dumps({**meta, "class": ["FourierShap"]})}, path)
        tx.FourierShap.load(path)


# --- inputs that gave a wrong number (or failed inside a dependency), against independent references --------------
@result_case("torchxplain.FourierShap", "(N, n) baselines: Captum's per-row pairing (they were averaged)")
def _():
    from captum.attr import ShapleyValues

    xq, baselines = bits(3, 1), bits(3, 2)
    explainer = tx.FourierShap.from_spectrum(spectrum(), bits(5))
    captum = ShapleyValues(explainer.surrogate).attribute(xq, baselines=baselines).double()  # float32 inside
    torch.testing.assert_close(explainer.attribute(xq, baselines=baselines), captum, rtol=0, atol=1e-5)


@result_case("torchxplain.FourierShap", "additional_forward_args reach every query of the fit (they were refused)")
def _():
    from tests.integration._brute import interventional_shap

    shift = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)

    def shifted(x: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
        return model((x + delta) % 2)

    explainer = tx.FourierShap(shifted, bits(6), method="exact", additional_forward_args=(shift,))
    want = interventional_shap(lambda z: shifted(z, shift), bits(3, 1), bits(6))
    torch.testing.assert_close(explainer.attribute(bits(3, 1), additional_forward_args=(shift,)), want)


@result_case("torchxplain.FourierShap", "to_shap with a per-row target: base values per row (failed to broadcast)")
def _():
    forest = tree(binary=False)
    x = np.random.default_rng(2).normal(size=(4, 3))
    explanation = tx.FourierShap.from_trees(forest, x[:3] + 0.1).to_shap(x, target=[0, 2, 1, 0])
    want = forest.predict_proba(x)[np.arange(4), [0, 2, 1, 0]]  # the model's own probabilities
    np.testing.assert_allclose(explanation.values.sum(1) + explanation.base_values, want, atol=1e-12)


@result_case("torchxplain.FourierShap", "to_shap(feature_mask=) keeps each player's level (the data was dropped)")
def _():
    onehot = torch.tensor([[1.0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 1]])
    explanation = tx.FourierShap.from_spectrum(spectrum(), bits(3)).to_shap(
        onehot, feature_mask=torch.tensor([0, 0, 0, 1])
    )
    np.testing.assert_array_equal(explanation.data, [[1, 1], [2, 0], [3, 1]])  # level of the block 0..2, bit 3


@result_case(F + "shapley_values", "dtype_policy('float32') on a float64 spectrum (it computed in float64)")
def _():
    want = tx.fourier.shapley_values(spectrum(), bits(3, 1), bits(5))
    with tx.settings.dtype_policy("float32"):
        got = tx.fourier.shapley_values(spectrum(), bits(3, 1), bits(5))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-6)


@result_case(F + "interaction_values", "a float16 spectrum computes in float32 (it computed in half)")
def _():
    half = tx.FourierSpectrum(spectrum().frequencies, spectrum().amplitudes.half())
    want = tx.fourier.interaction_values(
        tx.FourierSpectrum(half.frequencies, half.amplitudes.double()), bits(3), bits(5)
    )
    got = tx.fourier.interaction_values(half, bits(3), bits(5))
    assert got[2].dtype == torch.float32
    torch.testing.assert_close(got[2].double(), want[2], rtol=0, atol=1e-6)


@result_case(F + "interaction_values", "dtype_policy('float32') on a float64 spectrum (it computed in float64)")
def _():
    want = tx.fourier.interaction_values(spectrum(), bits(3), bits(5))
    with tx.settings.dtype_policy("float32"):
        got = tx.fourier.interaction_values(spectrum(), bits(3), bits(5))
    for order, values in want.items():
        assert got[order].dtype == torch.float32, order
        torch.testing.assert_close(got[order].double(), values, rtol=0, atol=1e-6)


@result_case(F + "shapley_values", "a bfloat16 spectrum computes in float32 (it computed in bfloat16)")
def _():
    brain = tx.FourierSpectrum(spectrum().frequencies, spectrum().amplitudes.bfloat16())
    exact = tx.FourierSpectrum(brain.frequencies, brain.amplitudes.double())  # the same amplitudes, in float64
    got = tx.fourier.shapley_values(brain, bits(3), bits(5))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), tx.fourier.shapley_values(exact, bits(3), bits(5)), rtol=0, atol=1e-6)
    pairs = tx.fourier.interaction_values(brain, bits(3), bits(5))[2]
    want = tx.fourier.interaction_values(exact, bits(3), bits(5))[2]
    assert pairs.dtype == torch.float32
    torch.testing.assert_close(pairs.double(), want, rtol=0, atol=1e-6)


@result_case("torchxplain.FourierSpectrum", "evaluate and the surrogate on numpy and lists (AttributeError)")
def _():
    from tests.fourier.brute_force import evaluate

    x = bits(4, 3)
    want = torch.tensor(evaluate(spectrum().frequencies.numpy(), spectrum().amplitudes.numpy(), x.numpy()))
    torch.testing.assert_close(spectrum().evaluate(x.numpy()), want)
    torch.testing.assert_close(tx.SparseFourierSurrogate(spectrum())(x.tolist()), want)


# --- trees: the model's own output, on every input a newcomer gives ------------------------------------------
def _margin_gap(model: Any, x: Any, margin: np.ndarray) -> float:
    """Largest |Σ φ + E[f] - margin| of a fresh explainer on ``x[40:]`` against ``x[:40]`` (efficiency against
    the model's own output: a spectrum that misreads an input misses it)."""
    explainer = tx.FourierShap.from_trees(model, x[:40])
    phi = explainer.attribute(x[40:]).numpy()
    return float(np.abs(phi.sum(1) + float(explainer.expected_value()) - margin).max())


def _xgb_data(sentinel: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 4))
    if sentinel is not None:
        x[rng.random(x.shape) < 0.2] = sentinel
    return x, (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(int)


@result_case("torchxplain.FourierShap", "XGBClassifier(missing=1e-8): entries equal to the sentinel are missing")
def _():
    import xgboost

    x, y = _xgb_data(1e-8)
    for cls in (xgboost.XGBClassifier, xgboost.XGBRFClassifier):
        model = cls(n_estimators=15, max_depth=3, missing=1e-8).fit(x, y)
        assert _margin_gap(model, x[:80], model.predict(x[40:80], output_margin=True)) < 1e-5, cls.__name__


@result_case("torchxplain.FourierShap", "an XGBoost dart booster (trees weighted by weight_drop)")
def _():
    import json

    import xgboost

    x, y = _xgb_data()
    model = xgboost.XGBClassifier(n_estimators=15, max_depth=3, booster="dart", rate_drop=0.5, skip_drop=0.0)
    model.fit(x, y)
    drops = json.loads(model.get_booster().save_raw("json"))["learner"]["gradient_booster"]["weight_drop"]
    assert len(set(drops)) > 1, "the case needs trees of different weights"
    assert _margin_gap(model, x[:80], model.predict(x[40:80], output_margin=True)) < 1e-5


@result_case("torchxplain.FourierShap", "an XGBRanker (ranking objectives explain the margin)")
def _():
    import xgboost

    x, y = _xgb_data()
    for objective in ("rank:ndcg", "rank:pairwise"):
        model = xgboost.XGBRanker(n_estimators=15, max_depth=3, objective=objective)
        model.fit(x, y, qid=np.repeat(np.arange(30), 10))
        assert _margin_gap(model, x[:80], model.predict(x[40:80], output_margin=True)) < 1e-5, objective


@result_case("torchxplain.FourierShap", "a LightGBM model fitted on a frame whose column names have spaces")
def _():
    import lightgbm
    import pandas as pd

    x, y = _xgb_data()
    frame = pd.DataFrame(x, columns=["age years", "blood pressure", "bmi", "s 1"])
    model = lightgbm.LGBMRegressor(n_estimators=10, verbose=-1).fit(frame, y)
    assert _margin_gap(model, frame.iloc[:80], model.predict(frame.iloc[40:80], raw_score=True)) < 1e-10
    codes = tx.fourier.TreeEncoding.from_model(model).transform(frame.iloc[:5])  # the encoding takes it too
    assert codes.shape[0] == 5


@result_case("torchxplain.FourierShap", "a constant tree model (LightGBM on constant y): interactions and indices")
def _():
    import lightgbm

    x = np.random.default_rng(0).normal(size=(100, 3))
    explainer = tx.FourierShap.from_trees(
        lightgbm.LGBMRegressor(n_estimators=3, verbose=-1).fit(x, np.full(100, 2.5)), x
    )
    assert torch.equal(explainer.attribute(x[:4]), torch.zeros(4, 3, dtype=torch.float64))
    assert torch.equal(explainer.interactions(x[:4]), torch.zeros(4, 3, 3, dtype=torch.float64))
    values = explainer.interaction_values(x[:4], index="k-SII", max_order=2)
    assert torch.allclose(values[0], torch.full((4,), 2.5, dtype=torch.float64)) and not values[1].any()
    assert explainer.to_shapiq(x[:1])[0].baseline_value == 2.5


@case("torchxplain.FourierShap", "negative tree feature_groups ids", ValueError, "feature_groups must hold non-neg")
def _():
    x = np.random.default_rng(0).integers(0, 2, (30, 4)).astype(float)
    tx.FourierShap.from_trees(tree(), x, feature_groups=[-1, 0, 1, 1])


@case("torchxplain.FourierShap", "a tree encoding of the wrong type", TypeError, r"encoding must be one of .* got int")
def _():
    x = np.random.default_rng(0).integers(0, 2, (30, 4)).astype(float)
    tx.FourierShap.from_trees(tree(), x, encoding=3)


@case("torchxplain.tree_spectrum", "an encoding of the wrong type", TypeError, r"encoding must be one of .* got list")
def _():
    tx.tree_spectrum(tree(), encoding=["thresholds"])


@result_case("torchxplain.FourierShap", "a saved explainer of XGBClassifier(missing=1e-8) keeps the sentinel")
def _():
    import tempfile
    from pathlib import Path

    import xgboost

    x, y = _xgb_data(1e-8)
    explainer = tx.FourierShap.from_trees(
        xgboost.XGBClassifier(n_estimators=5, max_depth=2, missing=1e-8).fit(x, y), x[:40]
    )
    with tempfile.TemporaryDirectory() as folder:
        explainer.save(Path(folder) / "xgb.pt")
        loaded = tx.FourierShap.load(Path(folder) / "xgb.pt")
    torch.testing.assert_close(loaded.attribute(x[40:60]), explainer.attribute(x[40:60]), atol=0, rtol=0)
