"""Docstring text shared by several estimators, and the decorator that fills it in.

A parameter that several classes accept with the same meaning and default is described once,
in :data:`PARAMETER_DOCS`, and a class docstring names it with a ``%(name)s`` placeholder on
a line of its own::

    @fill_doc
    class SomeExplainer(BaseExplainer):
        '''...

        Parameters
        ----------
        %(optimizer)s

        %(callbacks)s
            A sentence that only this class needs.
        '''

Texts are stored without indentation (the name line at column 0, the description at 4);
the placeholder's indentation is added to every line, so the same text fits a class or
function docstring (placeholder at 4 spaces) and a method's (at 8). A line indented like the
description right after a placeholder continues the shared description with the class's own
words. A literal percent sign in a filled docstring is written ``%%``; an unknown name is a
``KeyError`` at import time.
"""

import re

__all__ = ["PARAMETER_DOCS", "doc_filler", "fill_doc"]

PARAMETER_DOCS = {
    "baseline": """\
baseline : {"mean", "zero"}, float or array-like of shape (n_features,), default="mean"
    The value a left-out feature takes, in the data's units: the training mean of the
    feature (the default: a value the model has seen, whatever the units), ``"zero"``
    (the papers' synthetic setting, whose data has mean 0), one number for every feature,
    or one per feature. Every masked row is filled with it, both those the networks see and
    those the black box is queried on.""",
    "groups": """\
groups : array-like of shape (n_features,), default=None
    One group id per feature (image patches, the one-hot columns of one category, the
    tokens of one word): the selector scores groups, ``k`` counts groups, and the masks
    returned by ``transform`` keep or drop every feature of a group together. ``None``:
    every feature is its own group.""",
    "image_shape": """\
image_shape : tuple of int, default=None
    ``(height, width)`` or ``(channels, height, width)`` of images given as flat rows (the
    rows of ``X`` are the images' values in C order); the networks may then read rows as
    images and ``patch_size`` can group pixels. Not needed when ``X`` itself holds images,
    ``(n_samples, height, width)`` or ``(n_samples, channels, height, width)``: then the
    masks and scores come back in that shape and the black box is queried with rows in it.""",
    "patch_size": """\
patch_size : int or (int, int), default=None
    Select square (or ``(height, width)``) patches of the images instead of single pixels:
    the patches, numbered row by row, become the feature groups (every channel of a pixel in
    its patch), so ``k`` counts patches. Edge patches are smaller when the size does not
    divide the image. Needs images (see ``image_shape``); exclusive with ``groups``.""",
    "tokens": """\
tokens : bool, default=False
    ``X`` holds token ids, ``(n_samples, length)`` padded with 0 (see
    :class:`~sk_sointer.text.TokenSequencer`): ``k`` counts tokens, the networks embed the
    ids and mask in their embedding (so they must read ids: ``TokenCNNSelector``,
    ``TokenCNN``), and a left-out token is the padding 0 when the black box is queried,
    with int64 ids (``baseline`` is not used). Token networks train better without weight
    decay (``weight_decay=0``): with L2X's tabular default, a selector on tweets flattened
    to equal scores (the first k tokens of every row).""",
    "refine": """\
refine : "model", ModelRefinement or None, default="model"
    After the method's own training, refine the selector against the black box itself: it
    imitates a per-row greedy search on training rows, then sampled k-subsets are judged by
    the model's own answer on the masked training rows (what :meth:`score` measures), and
    the selector the model judges best is kept, the method's own included. ``"model"``
    refines with :class:`~sk_sointer.ModelRefinement`'s defaults; pass an instance for
    other settings (``ModelRefinement(max_queries=...)``). Only when ``fit`` gets the model
    (not only its outputs). With ``k=None`` (a thresholded selection) each row keeps the
    number of groups the method's own selector gives it, and the refinement chooses which
    (a row may trade one; the mean holds). ``None`` trains with the paper's objective
    alone. On real tables the paper's surrogate judges, which see the model's outputs on
    full rows only, tend to learn one global subset; see the README's real-tables benchmark.""",
    "repair": """\
repair : "model", RowRepair or None, default=None
    Check every row's mask against the model in :meth:`transform` (does the model keep its
    answer on the masked row?) and search further, row by row, where it does not: swaps
    from the selector's mask, each judged by the model, within a query budget a row
    (:class:`~sk_sointer.RowRepair`; ``"model"``: its defaults). The masks then hold on
    more rows, at the price of model queries (two a row for the check, more for a failing
    row): milliseconds a row rather than microseconds. :meth:`repair_masks` gives the
    masks with a report of the rows checked, failed and repaired and the queries spent.
    Needs the model at ``fit``.""",
    "background": """\
background : int, array-like or None, default=None
    How the model is asked about a row with features left out (``score``, :meth:`check`,
    the refinement and the repair). ``None``: the left-out features take the baseline (one
    query a row). An int ``n``: ``n`` training rows drawn at ``fit`` (with
    ``random_state``) fill them in turn and the model's outputs are averaged (``n``
    queries a row), so that the model is judged on values it has seen, as with shap's
    background data; an array: those rows. Needs the model at ``fit``.""",
    "optimizer": """\
optimizer : {"adam", "adamw", "rmsprop", "sgd"} or torch optimizer class, default="adam"
    Optimizer class, by name or as a ``torch.optim.Optimizer`` subclass.""",
    "callbacks": """\
callbacks : list of skorch callbacks, default=None
    Extra callbacks, e.g. ``skorch.callbacks.EarlyStopping()`` (with ``train_split``).""",
    "train_split": """\
train_split : float, callable or None, default=None
    Fraction of rows held out for validation losses, a skorch split callable, or ``None``
    to train on every row.""",
    "device": """\
device : {"auto", "cpu", "cuda"} or str, default="auto"
    Torch device; ``"auto"`` uses CUDA when it is available. ``"cuda:N"`` picks one of
    several GPUs (``"mps"`` where torch has that backend); ``fit`` refuses a device this
    machine lacks, and any other kind (``"meta"``, ``"xla"``), with a ``ValueError``.""",
    "data_on_device": """\
data_on_device : bool, default=True
    Copy the training rows to the training device once per fit and take every batch
    from there (fast on a GPU); ``False`` keeps them in host memory and copies each batch,
    for data larger than the device's memory (which is also the fallback, with a warning,
    when the copy runs out of memory).""",
    "cuda_graphs": """\
cuda_graphs : bool, default=True
    On CUDA, capture the training step (forward, backward and optimizer steps) in a CUDA
    graph after a few eager steps, and replay it for every batch of the same size: one
    launch a step instead of dozens. A step that cannot be captured (one that queries the
    black box, an optimizer without a capturable mode, a callback that reads the
    gradients) runs eagerly with a warning that says why. ``False`` trains eagerly. No
    effect on the CPU.""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Pass an int for reproducible training. Torch's global random state is restored after
    ``fit``, and an int or a ``RandomState`` leaves numpy's global one alone.""",
    "verbose": """\
verbose : int, default=0
    0: silent; 1: progress on standard error, training (epochs, loss), then the refinement
    against the model (rows, epochs, fidelity, queries): a bar on a terminal, elsewhere (a
    log, a pipe) a line at a time; 2: skorch's per-epoch table and a progress bar over
    batches for the training, the same refinement lines.""",
    "k_": """\
k_ : int or None
    The ``k`` in use: ``k``, or the number of features (groups) when ``k`` exceeds it.""",
    "output_spec_": """\
output_spec_ : OutputSpec
    What the black box's outputs are: one block of columns per output, each categorical,
    Bernoulli (one label of a multi-label model) or real.""",
    "masker_": """\
masker_ : Masker
    The masker learnt in ``fit``: the standardisation the networks see (``mean_``,
    ``scale_``), the baseline in the data's units (``baseline_``) and the feature groups
    (``groups_``, ``n_groups_``).""",
    "n_features_in_": """\
n_features_in_ : int
    Number of features seen during fit.""",
    "feature_names_in_": """\
feature_names_in_ : ndarray of shape (``n_features_in_``,)
    Names of features seen during fit, when ``X`` had string column names.""",
    "fit_time_": """\
fit_time_ : float
    Seconds the last ``fit`` took, refinement included (what
    :func:`~sk_sointer.metrics.evaluate` reports as ``fit_s``).""",
}
# Runs of entries that every estimator lists in the same order, under one name.
PARAMETER_DOCS["training"] = "\n\n".join(
    PARAMETER_DOCS[name]
    for name in ("callbacks", "train_split", "device", "data_on_device", "cuda_graphs"))
PARAMETER_DOCS["row_layout"] = "\n\n".join(
    PARAMETER_DOCS[name] for name in ("baseline", "groups", "image_shape", "patch_size"))
PARAMETER_DOCS["fitted_"] = "\n\n".join(
    PARAMETER_DOCS[name]
    for name in ("k_", "output_spec_", "masker_", "n_features_in_", "feature_names_in_",
                 "fit_time_"))
"""Numpydoc entries of the parameters (and fitted attributes) shared by the explainers and the EVAL-X evaluator."""

_PLACEHOLDER = re.compile(r"%(?:%|\((\w+)\)s)")


def _substitute(doc, texts):
    def replace(match):
        name = match.group(1)
        if name is None:
            return "%"
        if name not in texts:
            raise KeyError(f"no shared docstring text named {name!r}; known: {sorted(texts)}")
        line_start = doc.rfind("\n", 0, match.start()) + 1
        line = doc[line_start : match.start()]
        indent = line[: len(line) - len(line.lstrip(" "))]
        first, *rest = texts[name].split("\n")
        return "\n".join([first, *(indent + row if row else row for row in rest)])

    return _PLACEHOLDER.sub(replace, doc)


def doc_filler(texts):
    """A decorator filling the ``%(name)s`` placeholders of a docstring from ``texts``.

    Parameters
    ----------
    texts : dict of str to str
        Replacement of each placeholder name, stored without indentation.

    Returns
    -------
    decorator : callable
        Fills the docstring of the class or function it is applied to, in place, and
        returns it. A missing docstring (``python -OO``) is left missing.
    """

    def decorate(obj):
        if obj.__doc__ is not None:
            obj.__doc__ = _substitute(obj.__doc__, texts)
        return obj

    return decorate


fill_doc = doc_filler(PARAMETER_DOCS)
"""Decorator filling the placeholders of :data:`PARAMETER_DOCS` in a docstring."""
