"""What a new user does first, as README.rst shows it: the quick start, a search over k and
tau with any kind of model, and a fit that says what it is doing."""

import re
from pathlib import Path

import numpy as np
import pytest
import sklearn
import torch
from sklearn.ensemble import BaggingClassifier, HistGradientBoostingRegressor, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import _is_arraylike

from sk_sointer import L2XExplainer, RealXExplainer, as_black_box

README = Path(__file__).resolve().parents[1] / "README.rst"


def readme_code(section):
    """The first python code block of the README section titled ``section``, dedented."""
    text = README.read_text(encoding="utf-8")
    body = re.search(rf"^{re.escape(section)}\n-+\n(.*?)(?=^\S[^\n]*\n-+\n)", text,
                     re.MULTILINE | re.DOTALL)
    assert body is not None, f"README.rst has no {section!r} section"
    block = re.search(r"^\.\. code-block:: python\n\n((?:[ \t]+\S.*\n|\n)+)", body.group(1),
                      re.MULTILINE)
    assert block is not None, f"the {section!r} section has no python block"
    return "\n".join(line[4:] for line in block.group(1).splitlines())


def _rows():
    rng = np.random.RandomState(0)
    X = rng.randn(90, 5).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _torch_module():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 2), torch.nn.Softmax(dim=1))


# Every kind of model a user passes: scikit-learn ensembles (each has a length, which the
# search tools take for an array's), a pipeline, a torch module and a plain function.
MODELS = {
    "random_forest": lambda X, y: RandomForestClassifier(n_estimators=5, random_state=0)
    .fit(X, y),
    "hist_gradient_boosting_regressor": lambda X, y: HistGradientBoostingRegressor(max_iter=5)
    .fit(X, X[:, 0] - X[:, 1]),
    "pipeline": lambda X, y: make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y),
    "bagging": lambda X, y: BaggingClassifier(n_estimators=3, random_state=0).fit(X, y),
    "torch_module": lambda X, y: _torch_module(),
    "function": lambda X, y: (lambda rows: np.c_[rows[:, 0], rows[:, 1] - rows[:, 2]]),
}


@pytest.fixture(params=[False, True], ids=["routing_off", "routing_on"])
def metadata_routing(request):
    with sklearn.config_context(enable_metadata_routing=request.param):
        yield request.param


@pytest.mark.parametrize("kind", MODELS)
def test_readme_search_works_with_every_kind_of_model(kind, metadata_routing):
    X, y = _rows()
    code = readme_code("Searching over k and tau")
    explainer = "L2XExplainer(random_state=0)"
    assert explainer in code
    # The README's code as written, on a training budget a test can afford.
    code = code.replace(explainer, "L2XExplainer(random_state=0, max_epochs=1, refine=None)")
    namespace = {"X": X, "model": MODELS[kind](X, y)}
    exec(compile(code, "README.rst", "exec"), namespace)
    search = namespace["search"]
    assert search.best_params_["k"] in (2, 3, 4) and search.best_params_["tau"] in (0.1, 0.5)
    assert len(search.cv_results_["params"]) == 6
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    masks = search.transform(X[:7])
    np.testing.assert_array_equal(masks.sum(axis=1), search.best_params_["k"])


@pytest.mark.parametrize("kind", MODELS)
def test_the_wrapped_model_is_never_taken_for_an_array(kind):
    X, y = _rows()
    black_box = as_black_box(MODELS[kind](X, y))
    # What scikit-learn's search tools test before splitting a fit parameter.
    assert not _is_arraylike(black_box)
    assert not hasattr(black_box, "fit")
    assert black_box.predict(X[:3]).shape[0] == 3


@pytest.mark.parametrize("Explainer, params", [
    (L2XExplainer, {"max_epochs": 3}),
    (RealXExplainer, {"max_epochs": 3, "predictor_epochs": 2}),
], ids=["l2x", "realx"])
@pytest.mark.synthetic_rows
def test_verbose_fit_says_what_it_does_off_a_terminal(Explainer, params, capsys):
    X, y = _rows()
    model = LogisticRegression().fit(X, y)
    explainer = Explainer(k=2, verbose=1, random_state=0, **params).fit(X, black_box=model)
    err = capsys.readouterr().err  # captured: not a terminal, so lines, not a bar
    name = type(explainer).__name__
    training = [line for line in err.splitlines() if line.startswith(f"{name} training: ")]
    refining = [line for line in err.splitlines()
                if line.startswith(f"{name} refining against the model: ")]
    assert re.fullmatch(rf"{name} training: epoch 1/3, loss \d+\.\d{{4}}", training[0])
    assert re.fullmatch(rf"{name} training: epoch 3/3, loss \d+\.\d{{4}}", training[-1])
    # 90 rows are completed to 900 (ModelRefinement(min_rows=...)), and it says so.
    assert refining[0] == (f"{name} refining against the model: 90 rows (and 810 synthetic), "
                           "a budget of 1,000,000 queries")
    epochs = refining[1:]
    assert epochs and all(re.search(r"epoch \d+/\d+, fidelity [01]\.\d{4}, queries [\d,]+$",
                                    line) for line in epochs)
    counts = [int(re.search(r"queries ([\d,]+)$", line).group(1).replace(",", ""))
              for line in epochs]
    assert 0 < counts[0] and counts == sorted(counts)
    assert counts[-1] <= explainer.n_model_queries_


def test_quiet_fit_writes_nothing(capsys):
    X, y = _rows()
    L2XExplainer(k=2, max_epochs=2, random_state=0).fit(X, LogisticRegression().fit(X, y))
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.slow
@pytest.mark.synthetic_rows  # what a user running it sees, the refinement's default
def test_readme_quick_start_prints_its_masks_next_to_the_known_answer(capsys):
    code = readme_code("Quick start")
    exec(compile(code, "README.rst", "exec"), {})
    printed = capsys.readouterr().out
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"^which prints\n\n\.\. code-block:: text\n\n((?:    .*\n)+)", text,
                      re.MULTILINE)
    assert shown is not None
    assert printed == "\n".join(line[4:] for line in shown.group(1).splitlines()) + "\n"
