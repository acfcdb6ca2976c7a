"""Explanation time and the host-side preparation of fit: chunks, buffers and statistics.

``transform`` and ``explain`` standardise each chunk of rows into one reused buffer and
write masks straight into the output; ``fit`` takes the masker's statistics in chunks and
standardises into one float32 array. None of it may change a value: these tests compare
against the plain formulas.
"""

import numpy as np
import pytest
import torch

import sk_sointer._masking as masking
import sk_sointer._utils as utils
from sk_sointer import L2XExplainer, RealXExplainer
from sk_sointer._masking import Masker, _column_mean_std
from sk_sointer._topk import topk_mask, topk_mask_of_finite


def _stable_topk(scores, k):
    """The contract: the k largest scores, ties to the lower index (a stable sort)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    masks = np.zeros(scores.shape, dtype=np.float32)
    np.put_along_axis(masks, order, 1.0, axis=1)
    return masks


@pytest.fixture
def small_chunks(monkeypatch):
    """CPU chunks of 7 rows, so that a few dozen rows span several chunks and a last
    partial one."""
    monkeypatch.setattr(utils, "CPU_INFERENCE_CHUNK", 7)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.RandomState(0)
    X = (rng.randn(120, 6) * [1, 2, 3, 1000, 0.01, 5] + [0, 0, 0, 1e4, 0, -3]).astype(np.float32)
    y = (X[:, 0] + X[:, 1] / 2 > 0).astype(int)
    l2x = L2XExplainer(k=2, max_epochs=3, batch_size=32, random_state=0, device="cpu").fit(X, y)
    realx = RealXExplainer(k=2, max_epochs=3, predictor_epochs=2, batch_size=32,
                           random_state=0, device="cpu").fit(X, y)
    return X, {"l2x": l2x, "realx": realx}


def _reference_scores(explainer, X):
    """The selector's scores on the whole table at once, standardised by the formula."""
    masker = explainer.masker_
    if X.dtype == np.float32:
        scaled = (X - masker.mean_.astype(np.float32)) / masker.scale_.astype(np.float32)
    else:
        scaled = ((X - masker.mean_) / masker.scale_).astype(np.float32)
    explainer.net_.module_.eval()
    with torch.inference_mode():
        return explainer._selector_scores(torch.as_tensor(scaled)).numpy()


@pytest.mark.parametrize("name", ["l2x", "realx"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_transform_and_explain_equal_the_whole_table_formula(fitted, name, dtype,
                                                                     small_chunks):
    X, explainers = fitted
    explainer = explainers[name]
    X = X[:40].astype(dtype)  # 5 full chunks of 7 rows and one of 5
    scores = explainer.explain(X)
    # A matrix product's last bit depends on how many rows it multiplies at once, so the
    # chunks' scores equal the whole table's to float32 rounding, not bit for bit.
    np.testing.assert_allclose(scores, _reference_scores(explainer, X), rtol=1e-6, atol=1e-7)
    masks = explainer.transform(X)
    assert masks.dtype == dtype
    np.testing.assert_array_equal(masks, _stable_topk(scores, 2))


def test_ties_go_to_the_lower_index_in_every_chunk(fitted, small_chunks):
    """A selector whose scores tie (rounded to halves): the tied rows fall back to the
    stable order chunk by chunk, the others keep the partition's answer."""
    X, explainers = fitted
    explainer = explainers["l2x"]

    class Rounded(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, x):
            return torch.round(self.module(x) * 2) / 2

    original = explainer.net_.module_
    try:
        explainer.net_.module_ = Rounded(original)
        scores = explainer.explain(X)
        assert (np.sort(scores, axis=1)[:, -2] == np.sort(scores, axis=1)[:, -3]).any()
        np.testing.assert_array_equal(explainer.transform(X), _stable_topk(scores, 2))
    finally:
        explainer.net_.module_ = original


def test_threshold_masks_with_k_none_are_written_in_place(fitted, small_chunks):
    X, explainers = fitted
    explainer = explainers["realx"]
    try:
        explainer.set_params(k=None)
        scores = explainer.explain(X)
        expected = (scores > 0.5).astype(np.float32)
        empty = expected.sum(axis=1) == 0
        expected[empty, scores[empty].argmax(axis=1)] = 1.0  # never an empty mask
        np.testing.assert_array_equal(explainer.transform(X), expected)
    finally:
        explainer.set_params(k=2)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_rows_in_a_later_chunk_get_validation_s_message(fitted, bad, small_chunks):
    X, explainers = fitted
    X = X[:30].copy()
    X[25, 3] = bad
    for method in ("transform", "explain"):
        with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
            getattr(explainers["l2x"], method)(X)


def test_numpy_topk_writes_into_out_with_stable_ties():
    scores = np.array([[0.5, 2, 2, 2, -1], [1, 1, 1, 1, 1], [3, 2, 1, 0, -1]], np.float32)
    out = np.full(scores.shape, 7.0)
    assert topk_mask(scores, 2, out=out) is out
    np.testing.assert_array_equal(out, [[0, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 0, 0, 0]])
    np.testing.assert_array_equal(topk_mask(scores, 2), out)
    assert topk_mask(scores, 2).dtype == np.float32
    with pytest.raises(TypeError):
        topk_mask(torch.as_tensor(scores), 2, out=out)


@pytest.mark.parametrize("n_features, k", [(10, 1), (10, 4), (100, 4), (100, 8), (1000, 16)])
def test_numpy_topk_paths_agree_with_a_stable_sort(n_features, k):
    # Both NumPy paths (a partition; rounds of argmax on wide rows with a small k) keep
    # the k largest scores, ties to the lower index, like a stable sort.
    rng = np.random.default_rng(n_features + k)
    for scores in (rng.integers(0, 3, size=(50, n_features)).astype(np.float32),
                   rng.normal(size=(50, n_features))):
        order = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
        expected = np.zeros(scores.shape)
        np.put_along_axis(expected, order, 1, axis=-1)
        np.testing.assert_array_equal(topk_mask(scores, k), expected)
        out = np.zeros((50, 2 * n_features))[:, ::2]  # a strided out is filled too
        np.testing.assert_array_equal(topk_mask(scores, k, out=out), expected)
    # Rows with fewer than k scores above -inf still get k ones.
    scores = np.full((2, n_features), -np.inf)
    scores[:, -1] = 1.0
    expected = np.zeros(scores.shape)
    expected[:, : k - 1] = expected[:, -1] = 1
    np.testing.assert_array_equal(topk_mask(scores, k), expected)


@pytest.mark.parametrize("n_features, k", [(1, 1), (10, 1), (10, 3), (100, 10), (1000, 10)])
def test_the_device_top_k_in_rounds_agrees_with_a_stable_sort(n_features, k):
    # transform's device path takes up to ROUNDS_K winners by rounds of argmax: the same
    # masks, ties to the lower index, as booleans.
    rng = np.random.default_rng(n_features + k)
    for scores in (rng.integers(0, 3, size=(50, n_features)).astype(np.float32),
                   rng.normal(size=(50, n_features)), np.zeros((3, n_features))):
        order = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
        expected = np.zeros(scores.shape, dtype=bool)
        np.put_along_axis(expected, order, True, axis=-1)
        mask = topk_mask_of_finite(torch.as_tensor(scores), k)
        assert mask.dtype == torch.bool
        np.testing.assert_array_equal(mask.numpy(), expected)
        np.testing.assert_array_equal(mask.numpy(), topk_mask(scores, k).astype(bool))


def test_cpu_chunks_are_bounded_in_rows_and_values():
    cpu = torch.device("cpu")
    assert utils.inference_chunk(cpu, 10) == utils.CPU_INFERENCE_CHUNK
    assert utils.inference_chunk(cpu, 10**6) == utils.CPU_INFERENCE_VALUES // 10**6
    assert utils.inference_chunk(cpu, 10**8) == 1
    # On an accelerator, narrow rows in one chunk of a few million values, wide rows in
    # chunks of INFERENCE_CHUNK rows.
    assert utils.inference_chunk(torch.device("meta"), 10) == utils.DEVICE_INFERENCE_VALUES // 10
    assert utils.inference_chunk(torch.device("meta"), 1000) == utils.INFERENCE_CHUNK


# -- the masker's statistics and standardisation ------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_statistics_equal_numpy_s_in_one_chunk_and_closely_in_many(dtype, monkeypatch):
    rng = np.random.RandomState(0)
    X = (rng.randn(500, 4) * [1, 10, 1e3, 1e-3] + [5, -5, 1e4, 0]).astype(dtype)
    mean, spread = _column_mean_std(X)
    np.testing.assert_array_equal(mean, X.mean(axis=0, dtype=np.float64))
    np.testing.assert_array_equal(spread, X.std(axis=0, dtype=np.float64))
    monkeypatch.setattr(masking, "_STATS_CHUNK", 37 * 4)  # 37 rows a chunk, 14 chunks
    chunked_mean, chunked_spread = _column_mean_std(X)
    np.testing.assert_allclose(chunked_mean, mean, rtol=1e-13)
    np.testing.assert_allclose(chunked_spread, spread, rtol=1e-13)
    # Float32 statistics: the same to the last bit.
    np.testing.assert_array_equal(chunked_mean.astype(np.float32), mean.astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_standardize_into_out_in_chunks_equals_the_formula(dtype, monkeypatch):
    rng = np.random.RandomState(1)
    X = (rng.randn(300, 3) * [2, 50, 0.1] + [1, 100, 0]).astype(dtype)
    masker = Masker().fit(X)
    if dtype == np.float32:
        expected = (X - masker.mean_.astype(np.float32)) / masker.scale_.astype(np.float32)
    else:
        expected = ((X - masker.mean_) / masker.scale_).astype(np.float32)
    monkeypatch.setattr(masking, "_STATS_CHUNK", 41 * 3)
    out = np.empty(X.shape, dtype=np.float32)
    assert masker.standardize(X, out=out) is out
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(masker.standardize(X), expected)


def test_float32_overflow_takes_the_float64_detour_chunk_by_chunk(monkeypatch):
    # Column 0's mean is 1e38: -3e38 minus it overflows float32, the other rows do not.
    X = np.array([[3e38, 0.0], [3e38, 1.0], [-3e38, 2.0], [0.0, 3.0]], dtype=np.float32)
    masker = Masker().fit(X)
    monkeypatch.setattr(masking, "_STATS_CHUNK", 2)  # one row a chunk
    with np.errstate(over="ignore"):
        expected = (X - masker.mean_.astype(np.float32)) / masker.scale_.astype(np.float32)
    overflowed = ~np.isfinite(expected).all(axis=1)
    assert overflowed.tolist() == [False, False, True, False]
    expected[overflowed] = ((X[overflowed].astype(np.float64) - masker.mean_)
                            / masker.scale_).astype(np.float32)
    np.testing.assert_array_equal(masker.standardize(X), expected)


def test_fit_in_many_statistics_chunks_gives_the_same_explainer(xor_data, monkeypatch):
    """The fit's host-side preparation in chunks changes no fitted value on a small
    problem: the same statistics to float32, the same training, the same masks."""
    X, y = xor_data
    params = dict(k=2, max_epochs=3, batch_size=64, random_state=0, device="cpu")
    reference = L2XExplainer(**params).fit(X, y)
    monkeypatch.setattr(masking, "_STATS_CHUNK", 53 * X.shape[1])
    chunked = L2XExplainer(**params).fit(X, y)
    np.testing.assert_array_equal(chunked.masker_.mean_.astype(np.float32),
                                  reference.masker_.mean_.astype(np.float32))
    np.testing.assert_array_equal(chunked.masker_.scale_.astype(np.float32),
                                  reference.masker_.scale_.astype(np.float32))
    np.testing.assert_array_equal(chunked.transform(X), reference.transform(X))
    np.testing.assert_allclose(chunked.explain(X), reference.explain(X), rtol=1e-5, atol=1e-6)


# -- the training loop ------------------------------------------------------------------


def test_training_mode_is_set_only_where_it_changes(fitted):
    """skorch sets the modes before every batch; modules already in the mode are skipped,
    and a module whose own ``train`` keeps a part in evaluation mode is still set."""
    _, explainers = fitted
    net = explainers["l2x"].net_
    net.module_.eval()
    net.set_modes(True)
    assert all(m.training for name in ("module_", "approximator_")
               for m in getattr(net, name).modules())
    net.set_modes(False)
    assert not any(m.training for m in net.approximator_.modules())

    class FrozenNorm(torch.nn.Sequential):
        def train(self, mode=True):
            super().train(mode)
            self[1].eval()  # batch statistics frozen, as in fine-tuning
            self.calls = getattr(self, "calls", 0) + 1
            return self

    original = net.approximator_
    try:
        net.approximator_ = FrozenNorm(torch.nn.Linear(6, 6), torch.nn.BatchNorm1d(6)).eval()
        net.set_modes(True)
        net.set_modes(True)
        assert net.approximator_.calls == 3 and not net.approximator_[1].training
        assert net.approximator_[0].training
    finally:
        net.approximator_ = original


# -- explanation on the device ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_device_path_gives_the_host_path_masks_and_scores(dtype, monkeypatch):
    """On an accelerator every chunk is standardised, scored and finished there; forced on
    the CPU, that path gives the host path's masks and scores exactly, with groups, with
    k=None, in float32 and float64, and sends non-finite chunks back to the host path."""
    import sk_sointer._inference as inference
    import sk_sointer.base as base
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sk_sointer import MLP, HardKumaExplainer, L2XExplainer, MEEDExplainer

    rng = np.random.RandomState(0)
    X = np.column_stack([rng.uniform(18, 90, 300), rng.lognormal(10, 1, 300),
                         rng.randn(300, 4)]).astype(dtype)
    y = (X[:, 2] > 0).astype(int)
    fast = dict(max_epochs=3, refine=None, device="cpu", random_state=0)
    explainers = [
        L2XExplainer(k=2, **fast).fit(X, y),
        L2XExplainer(k=1, groups=[0, 0, 1, 1, 2, 2], **fast).fit(X, y),
        HardKumaExplainer(**fast).fit(X, y),  # k=None: the gates above the threshold
        # The selector also reads the model's outputs, moved to the device with the rows.
        MEEDExplainer(k=2, feedback=MLP(hidden_units=(4,)), **fast).fit(
            X, black_box=make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)),
    ]
    expected = [(e.transform(X), e.explain(X)) for e in explainers]
    # A column spread over float32's range: its rows near the top overflow float32 on
    # the way ((x - mean) alone) and the host takes its float64 detour.
    wide = X[:, :3].astype(np.float32)
    wide[:, 0] = np.where(np.arange(300) % 10 == 0, 2e38, -2e38)
    far = L2XExplainer(k=1, **fast).fit(wide, y)
    wide[:5, 0] = 3e38
    expected_far = far.transform(wide[:5])
    monkeypatch.setattr(inference, "_explains_on_device", lambda device: True)
    calls = []
    original = base.BaseExplainer._chunk_on_device
    monkeypatch.setattr(base.BaseExplainer, "_chunk_on_device",
                        lambda self, *args: calls.append(original(self, *args)) or calls[-1])
    for explainer, (masks, scores) in zip(explainers, expected):
        np.testing.assert_array_equal(explainer.transform(X), masks)
        assert explainer.transform(X).dtype == dtype
        np.testing.assert_array_equal(explainer.explain(X), scores)
    assert calls and all(calls)
    np.testing.assert_array_equal(far.transform(wide[:5]), expected_far)
    assert calls[-1] is False  # the overflowing chunk went back to the host
    bad = X[:4].copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        explainers[0].transform(bad)


def test_plain_float_rows_skip_sklearn_validation_and_others_do_not(fitted, monkeypatch):
    # transform on a row or a few is a serving loop's call: sklearn's validation was half of
    # it. Rows it would hand back unchanged skip it; anything else is validated as before.
    import pandas as pd

    X, explainers = fitted
    explainer = explainers["l2x"]
    rows = np.asarray(X[:3], dtype=np.float32)
    assert explainer._validated_as_given(rows)
    assert explainer._validated_as_given(rows.astype(np.float64))
    for other in (rows.tolist(), rows.astype(np.float16), rows.astype(np.int64), rows[:0],
                  rows[:, :-1], pd.DataFrame(rows)):
        assert not explainer._validated_as_given(other)
    fast = explainer.transform(rows)
    with pytest.raises(ValueError, match="features"):
        explainer.transform(rows[:, :-1])
    monkeypatch.setattr(type(explainer), "_validated_as_given", lambda self, X: False)
    np.testing.assert_array_equal(explainer.transform(rows), fast)
    monkeypatch.undo()
    # Fitted on named columns, bare rows still get sklearn's warning.
    y = (X[:, 0] + X[:, 1] / 2 > 0).astype(int)
    named = L2XExplainer(k=2, max_epochs=1, random_state=0).fit(
        pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])]), y)
    assert not named._validated_as_given(rows)
    with pytest.warns(UserWarning, match="feature names"):
        named.transform(rows)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
@pytest.mark.parametrize("k", [1, 3, 11, 12])
def test_the_device_path_breaks_a_selectors_ties_to_the_lower_index(device, k, monkeypatch):
    # A selector that scores every feature alike: its top-k is the first k features on the
    # device path (rounds of argmax up to k = 10, the top-k and its tie count beyond) as
    # on the host path; on the CPU the device path is forced.
    import sk_sointer._inference as inference
    import sk_sointer.base as base

    rng = np.random.RandomState(0)
    X = rng.randn(300, 12).astype(np.float32)
    explainer = L2XExplainer(k=k, max_epochs=1, refine=None, device=device,
                             random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    last = [m for m in explainer.net_.module_.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
    if device == "cpu":
        monkeypatch.setattr(inference, "_explains_on_device", lambda device: True)
    masks = explainer.transform(X)
    expected = np.zeros_like(masks)
    expected[:, :k] = 1
    np.testing.assert_array_equal(masks, expected)
