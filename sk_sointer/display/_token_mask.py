"""The selected words of texts: :class:`TokenMaskDisplay`."""

import numpy as np

from ._base import _axes, _check_explainer, _color, _positive_int


def _words(tokens, masks, sequencer):
    """Rows of words and of their kept flags: token ids read through ``sequencer``
    (padding left out), or lists of words as given."""
    if sequencer is not None:
        _check_sequencer(sequencer)
    n_texts, n_masks = _n_rows(tokens, "tokens"), _n_rows(masks, "masks")
    if n_masks != n_texts:
        raise ValueError(f"masks should hold one row per text of tokens ({n_texts}); got "
                         f"{n_masks}.")
    words, kept = [], []
    for i, row in enumerate(tokens):
        keep = np.asarray(masks[i]).ravel()
        row = list(np.asarray(row).ravel()) if sequencer is not None else list(row)
        if len(keep) != len(row):
            raise ValueError(
                f"row {i}: masks should have one value per token ({len(row)}); got {len(keep)}."
            )
        if sequencer is not None:
            vocabulary = sequencer.words_
            _check_token_ids(i, row, len(vocabulary))
            pairs = [(str(vocabulary[int(t)]), k > 0) for t, k in zip(row, keep) if int(t) != 0]
        else:
            pairs = [(str(t), k > 0) for t, k in zip(row, keep)]
        words.append([word for word, _ in pairs])
        kept.append(np.array([k for _, k in pairs], dtype=bool))
    return words, kept


def _n_rows(rows, name):
    """How many rows ``rows`` holds, or a one-line TypeError when it is not a sequence of
    them."""
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__len__"):
        raise TypeError(f"{name} should hold one row per text; got {type(rows).__name__}.")
    return len(rows)


def _check_sequencer(sequencer):
    """A fitted TokenSequencer (one with a vocabulary, ``words_``), else a one-line error."""
    from sklearn.exceptions import NotFittedError

    from ..text import TokenSequencer

    if getattr(sequencer, "words_", None) is not None:
        return
    if isinstance(sequencer, TokenSequencer):
        raise NotFittedError("sequencer should be fitted: call sequencer.fit(texts) on the "
                             "texts it read, or pass the sequencer that made the token ids.")
    raise TypeError("sequencer should be a fitted sk_sointer.text.TokenSequencer (the one "
                    f"that made the token ids); got {type(sequencer).__name__}.")


def _check_token_ids(i, row, n_ids):
    """Token ids of text ``i``: whole numbers from 0 (the padding) below ``n_ids``."""
    try:
        ids = np.asarray(row, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"row {i}: tokens should be token ids (numbers) with a sequencer; got "
                        f"{row[:3]!r}...") from None
    bad = ~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0) | (ids >= n_ids)
    if bad.any():
        raise ValueError(f"row {i}: token ids should be whole numbers in [0, {n_ids}) (the "
                         "sequencer's vocabulary, 0 the padding); got "
                         f"{sorted(set(ids[bad].tolist()))[:5]}.")


class TokenMaskDisplay:
    """Texts with the selected words highlighted, one text under the other.

    Parameters
    ----------
    words : list of list of str
        The words of each text (padding left out).
    masks : list of ndarray of bool
        Whether each word is selected.

    Attributes
    ----------
    texts_ : list of matplotlib Text
        One per word, in reading order; the selected ones have a coloured box (their
        ``get_bbox_patch()`` is not None).
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> from sk_sointer.display import TokenMaskDisplay
    >>> display = TokenMaskDisplay.from_masks([["not", "bad", "at", "all"]], [[1, 1, 0, 0]])
    >>> [t.get_text() for t in display.texts_ if t.get_bbox_patch() is not None]
    ['not', 'bad']
    """

    def __init__(self, words, masks):
        self.words = words
        self.masks = masks

    @classmethod
    def from_masks(cls, tokens, masks, *, sequencer=None, color="tab:orange", width=60,
                   ax=None):
        """Token masks in hand over their texts.

        Parameters
        ----------
        tokens : array-like of shape (n_texts, length), or a sequence of lists of words
            Token ids as the explainer took them (with ``sequencer``), or the words.
        masks : array-like of shape (n_texts, length)
            ``transform``'s token masks.
        sequencer : fitted :class:`~sk_sointer.text.TokenSequencer`, default=None
            Reads token ids as words (padding left out); needed when ``tokens`` are ids.
        color : matplotlib colour, default="tab:orange"
            Background of the selected words.
        width : int, default=60
            Characters on a line before a text wraps.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : TokenMaskDisplay
        """
        width = _positive_int("width", width)
        words, kept = _words(tokens, masks, sequencer)
        return cls(words, kept).plot(ax=ax, color=color, width=width)

    @classmethod
    def from_explainer(cls, explainer, X, *, sequencer, color="tab:orange", width=60,
                       ax=None):
        """A fitted explainer's token masks on the token ids ``X``.

        Parameters
        ----------
        explainer : fitted explainer
            Fitted with ``tokens=True``.
        X : array-like of shape (n_texts, length)
            Token ids, e.g. ``sequencer.transform(texts)``.
        sequencer : fitted :class:`~sk_sointer.text.TokenSequencer`
        color, width, ax :
            As in :meth:`from_masks`.

        Returns
        -------
        display : TokenMaskDisplay
        """
        if sequencer is not None:
            _check_sequencer(sequencer)
        masks = _check_explainer(explainer).transform(X)
        return cls.from_masks(X, masks, sequencer=sequencer, color=color,
                              width=width, ax=ax)

    def plot(self, ax=None, *, color="tab:orange", width=60):
        """Draw the texts, the selected words on a coloured box.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        color : matplotlib colour, default="tab:orange"
        width : int, default=60
            Characters on a line before a text wraps.

        Returns
        -------
        display : TokenMaskDisplay
        """
        width, color = _positive_int("width", width), _color("color", color)
        if len(self.masks) != len(self.words):
            raise ValueError(f"masks should hold one row per text ({len(self.words)}); got "
                             f"{len(self.masks)}.")
        lines = []  # (text, [(word, kept), ...]) wrapped at ``width`` characters
        for i, (row, keep) in enumerate(zip(self.words, self.masks)):
            line, used = [], 0
            for word, kept in zip(row, keep):
                if line and used + len(word) > width:
                    lines.append((i, line))
                    line, used = [], 0
                line.append((word, bool(kept)))
                used += len(word) + 1
            lines.append((i, line))
        ax = _axes(ax, figsize=(0.11 * width + 0.5, 0.32 * len(lines) + 0.6))
        ax.set_axis_off()
        step = 1.0 / (len(lines) + 1)
        self.texts_ = []
        for n, (i, line) in enumerate(lines):
            y = 1.0 - (n + 1) * step
            for c, (word, kept) in enumerate(line):
                x = sum(len(w) + 1 for w, _ in line[:c]) / width
                box = (dict(boxstyle="round,pad=0.15", facecolor=color, edgecolor="none")
                       if kept else None)
                self.texts_.append(ax.text(x, y, word, transform=ax.transAxes, va="center",
                                           family="monospace",
                                           fontweight="bold" if kept else "normal", bbox=box))
            if n == 0 or lines[n - 1][0] != i:
                ax.text(-0.01, y, f"{i}", transform=ax.transAxes, va="center", ha="right",
                        color="0.5", family="monospace")
        self.ax_, self.figure_ = ax, ax.figure
        return self
