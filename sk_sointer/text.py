"""Texts as rows of token ids, and the words behind a token mask.

The explainers read texts as padded sequences of token ids (``tokens=True``):
:class:`TokenSequencer` makes them with scikit-learn's tokenisation (or any tokenizer) and
maps masks back to words::

    from sk_sointer import L2XExplainer, TokenCNN, TokenCNNSelector
    from sk_sointer.text import TokenSequencer

    sequencer = TokenSequencer(max_length=40).fit(texts)
    ids = sequencer.transform(texts)          # (n, 40) int64, 0 = padding, 1 = unknown
    explainer = L2XExplainer(k=5, tokens=True, selector=TokenCNNSelector(),
                             approximator=TokenCNN()).fit(ids, black_box=model_of_ids)
    sequencer.selected_words(ids, explainer.transform(ids))   # the 5 words of each text
"""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.utils.validation import check_is_fitted

__all__ = ["TokenSequencer"]

PADDING = 0
UNKNOWN = 1


class TokenSequencer(TransformerMixin, BaseEstimator):
    """Turn texts into padded rows of token ids, keeping the most frequent tokens.

    Texts are split into tokens as :class:`~sklearn.feature_extraction.text.CountVectorizer`
    splits them (its ``lowercase``, ``token_pattern`` and ``tokenizer``); the
    ``max_features`` most frequent tokens of the texts given to :meth:`fit` get ids from 2
    up, in order of frequency. Id 0 pads rows shorter than ``max_length`` (at the end), id 1
    stands for a token outside the vocabulary; longer texts are cut.

    Parameters
    ----------
    max_length : int, default=50
        Tokens per row.
    max_features : int, default=5000
        Size of the vocabulary (ids 2 .. max_features + 1).
    lowercase : bool, default=True
    token_pattern : str, default=r"(?u)\\b\\w\\w+\\b"
    tokenizer : callable, default=None
        A function from a text to its tokens, in place of ``token_pattern``.

    Attributes
    ----------
    vocabulary_ : dict
        Token to id.
    words_ : ndarray of str
        Id to token (``"<pad>"`` and ``"<unk>"`` for 0 and 1).

    Examples
    --------
    >>> from sk_sointer.text import TokenSequencer
    >>> sequencer = TokenSequencer(max_length=4).fit(["good good film", "bad film"])
    >>> sequencer.transform(["a good film", "awful"])
    array([[3, 2, 0, 0],
           [1, 0, 0, 0]])
    >>> sequencer.words_[2:]  # by frequency, ties alphabetical
    array(['film', 'good', 'bad'], dtype=object)
    >>> sequencer.selected_words([[3, 2, 0, 0]], [[1, 0, 1, 0]])
    [['good']]
    """

    def __init__(self, max_length=50, max_features=5000, lowercase=True,
                 token_pattern=r"(?u)\b\w\w+\b", tokenizer=None):
        self.max_length = max_length
        self.max_features = max_features
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.tokenizer = tokenizer

    def _vectorizer(self):
        return CountVectorizer(lowercase=self.lowercase, token_pattern=self.token_pattern,
                               tokenizer=self.tokenizer, max_features=self.max_features)

    def fit(self, X, y=None):
        """Learn the vocabulary of the texts ``X`` (a list or array of str)."""
        texts = _texts(X)
        if int(self.max_length) < 1 or int(self.max_features) < 1:
            raise ValueError("max_length and max_features should be positive integers; got "
                             f"{self.max_length!r} and {self.max_features!r}.")
        vectorizer = self._vectorizer()
        counts = np.asarray(vectorizer.fit_transform(texts).sum(axis=0)).ravel()
        terms = vectorizer.get_feature_names_out()
        order = np.lexsort((terms, -counts))  # most frequent first, ties alphabetical
        self.words_ = np.array(["<pad>", "<unk>", *terms[order]], dtype=object)
        self.vocabulary_ = {str(word): i for i, word in enumerate(self.words_) if i > UNKNOWN}
        self._analyzer = vectorizer.build_analyzer()
        return self

    def transform(self, X):
        """Token ids of the texts ``X``: int64 array of shape (n_texts, max_length)."""
        check_is_fitted(self, "vocabulary_")
        texts = _texts(X)
        ids = np.full((len(texts), int(self.max_length)), PADDING, dtype=np.int64)
        for row, text in enumerate(texts):
            tokens = self._analyzer(text)[: int(self.max_length)]
            ids[row, : len(tokens)] = [self.vocabulary_.get(token, UNKNOWN) for token in tokens]
        return ids

    def selected_words(self, ids, masks):
        """The words of each row of ``ids`` that ``masks`` keeps (padding left out), in the
        order of the text."""
        check_is_fitted(self, "vocabulary_")
        ids, masks = np.asarray(ids), np.asarray(masks)
        if ids.shape != masks.shape:
            raise ValueError(f"masks should have the shape of ids, {ids.shape}; got {masks.shape}.")
        if ids.size and (ids.dtype.kind not in "iuf" or not np.array_equal(ids, np.round(ids))):
            raise ValueError(f"ids should hold whole numbers (token ids); got dtype {ids.dtype}.")
        if ids.size and (ids.min() < 0 or ids.max() >= len(self.words_)):
            bad = ids.min() if ids.min() < 0 else ids.max()
            # A negative id would silently index from the end of the vocabulary.
            raise ValueError(
                f"ids holds {int(bad)}, which is not a token id of this TokenSequencer: ids "
                f"run from 0 to {len(self.words_) - 1} (a vocabulary of {len(self.words_)})."
            )
        ids = ids.astype(np.int64)
        return [[str(self.words_[i]) for i, kept in zip(row, keep) if kept > 0 and i != PADDING]
                for row, keep in zip(ids, masks)]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_analyzer", None)  # a closure: rebuilt on unpickling
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "vocabulary_" in state:
            self._analyzer = self._vectorizer().build_analyzer()


def _texts(X):
    if isinstance(X, str):
        raise ValueError("X should be a list of texts, not one string.")
    return [str(text) for text in X]
