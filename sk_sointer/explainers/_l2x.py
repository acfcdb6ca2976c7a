"""L2X: learning to explain with a k-subset Concrete selector (Chen et al., ICML 2018).

The selector ``w_theta(x)`` gives per-feature logits; during training a relaxed k-hot mask
``V ~ SubsetConcrete(tau, w_theta(x), k)`` is applied to the input, and an approximator
``g_alpha`` predicts the black box's output distribution from ``x ⊙ V``. Both networks are
trained together on one loss, the variational bound of eq. 6:

    max_{theta, alpha}  E_{x, zeta} [ sum_c P_m(c | x) log g_alpha(V(theta, zeta) ⊙ x)_c ]

At explanation time the mask is the top-k of the logits (§3.4).
"""

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval
from skorch.utils import to_tensor

from .._docstrings import fill_doc
from .._networks import MLP
from .._training.nets import SelectorJudgeNet
from ..base import TOKENS_CONSTRAINT, BaseExplainer
from .._topk import topk_mask
from ..distributions import SubsetConcrete


class L2XNet(SelectorJudgeNet):
    """skorch net holding the L2X selector (``module_``) and approximator (``approximator_``).

    skorch's own training loop runs unchanged: :meth:`infer` applies the relaxed mask in
    training mode and the exact top-k mask in evaluation mode, so validation losses (and
    early stopping on them) measure the explanations that ``transform`` will return. A
    single optimizer holds the parameters of both modules, as in the paper.
    """

    judges = ("approximator",)
    judge = "approximator"
    judge_learns_relaxed_masks = True

    def __init__(self, module, *, k, tau, **kwargs):
        self.k = k
        self.tau = tau
        super().__init__(module, **kwargs)

    def infer(self, x, **fit_params):
        x = to_tensor(x, device=self.device)
        logits = self.module_(x)
        if self.module_.training:
            mask = SubsetConcrete(self.tau, logits, self.k, validate_args=False).rsample()
        else:
            mask = topk_mask(logits, self.k)
        return self.approximator_(self.masked(x, mask))


@fill_doc
class L2XExplainer(BaseExplainer):
    """Instance-wise feature selection by Learning to Explain (L2X).

    A selector network scores the features of each row; trained jointly with an
    approximator of the black box through a continuous relaxation of k-subset sampling, it
    learns which ``k`` features carry the black box's output for that row. Once fitted,
    explaining a row costs one forward pass of the selector.

    Parameters
    ----------
    k : int, default=4
        Number of features (or feature groups) selected per row. A ``k`` beyond their
        number selects all of them, with a warning, as ``SelectKBest`` does.

    tau : float, default=0.1
        Temperature of the k-subset Concrete relaxation; lower is closer to discrete.

    selector : callable, default=MLP(hidden_units=(100, 100), zero_output=True)
        Factory ``(in_features, out_features) -> torch.nn.Module`` of the selector network.
        Nested options are set with ``selector__hidden_units`` and the like. The default
        gives every feature the same starting logit, so that no noise feature gets a head
        start from random initial weights and keeps the place of a weak true feature.

    approximator : callable, default=MLP(hidden_units=(200, 200), batch_norm=True)
        Factory of the approximator network that predicts the black box from ``x ⊙ mask``.
        It learns on relaxed masks with the selector, then, last in ``fit``, alone for a
        tenth of ``max_epochs`` (three at least) on the selector's final masks, the ones
        ``transform`` returns and ``predict_masked`` and ``score`` (on outputs) judge.

    %(refine)s

    %(repair)s

    %(background)s

    %(row_layout)s

    %(tokens)s

    max_epochs : int, default=100
        Passes over the training data.

    batch_size : int, default=1000
        Rows per optimisation step. With the default epochs this is 1,000 steps on 10,000
        rows, the budget of the released L2X code.

    lr : float, default=1e-3
        Learning rate.

    weight_decay : float, default=2e-3
        L2 penalty on the weights of both networks (the optimizer's ``weight_decay``; the
        released L2X code's Keras ``l2(1e-3)``). It keeps the selector from fitting
        row-specific noise, which would let it select noise features as a code for the
        prediction.

    %(optimizer)s
        One instance steps both networks.

    %(training)s

    %(random_state)s
        It seeds weight initialisation, shuffling and the relaxation's noise.

    %(verbose)s

    Attributes
    ----------
    net_ : L2XNet
        The fitted skorch net; ``net_.module_`` is the selector and ``net_.approximator_``
        the approximator.

    black_box_ : BlackBox or None
        The adapted model when ``fit`` received one, used by :meth:`score`.

    %(fitted_)s

    See Also
    --------
    RealXExplainer : Selector trained against a predictor that only sees random masks.

    Notes
    -----
    Selector and approximator are trained jointly, so on some data the selection pattern
    itself can carry information about the prediction ("encoding", Jethani et al. 2021).
    Check explanations with an evaluator trained on random masks when that matters.

    The training defaults follow the released code (Adam, a batch-normalised approximator,
    an L2 penalty, 1,000 steps) rather than the paper (RMSprop, no batch normalisation),
    whose recipe let the selection encode the class on XOR; unlike the released code, the
    selector starts from equal logits. See ``doc/tuning.rst`` in the source repository for
    the measurements behind each choice.

    References
    ----------
    .. [1] J. Chen, L. Song, M. Wainwright and M. Jordan, "Learning to Explain: An
       Information-Theoretic Perspective on Model Interpretation", ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sk_sointer import L2XExplainer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 5).astype(np.float32)
    >>> outputs = (X[:, 0] > 0).astype(int)
    >>> expl = L2XExplainer(k=1, max_epochs=20, random_state=0).fit(X, outputs)
    >>> expl.transform(X[:3]).sum(axis=1)
    array([1., 1., 1.], dtype=float32)
    """

    _parameter_constraints: dict = {
        **BaseExplainer._parameter_constraints,
        **TOKENS_CONSTRAINT,
        "k": [Interval(Integral, 1, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "selector": [callable],
        "approximator": [callable],
    }

    def __init__(
        self, k=4, *, tau=0.1, selector=MLP(hidden_units=(100, 100), zero_output=True),
        approximator=MLP(hidden_units=(200, 200), batch_norm=True), refine="model",
        repair=None, background=None,
        baseline="mean", groups=None, image_shape=None, patch_size=None, tokens=False,
        max_epochs=100, batch_size=1000, lr=1e-3, weight_decay=2e-3, optimizer="adam",
        callbacks=None, train_split=None, device="auto",
        data_on_device=True, cuda_graphs=True, random_state=None,
        verbose=0,
    ):
        self.k = k
        self.tau = tau
        self.selector = selector
        self.approximator = approximator
        self.refine = refine
        self.repair = repair
        self.background = background
        self.baseline = baseline
        self.groups = groups
        self.image_shape = image_shape
        self.patch_size = patch_size
        self.tokens = tokens
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.callbacks = callbacks
        self.train_split = train_split
        self.device = device
        self.data_on_device = data_on_device
        self.cuda_graphs = cuda_graphs
        self.random_state = random_state
        self.verbose = verbose

    def _build_net(self, problem, **net_params):
        return L2XNet(
            self.selector,
            approximator=self.approximator,
            k=self.k_,
            tau=self.tau,
            **problem.net_params(),
            **net_params,
        )
