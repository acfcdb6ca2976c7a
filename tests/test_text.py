"""Token sequences: tokens=True, the token networks, the black box on int64 ids, and
TokenSequencer."""

import pickle

import numpy as np
import pytest
import torch

from sk_sointer import (L2XExplainer, RealXExplainer, TokenCNN, TokenCNNSelector, as_black_box,
                        load, save)
from sk_sointer.text import TokenSequencer

torch.set_num_threads(1)

N_ROWS, LENGTH = 800, 12
POSITIVE, NEGATIVE = 2, 3
FAST = {"max_epochs": 2, "batch_size": 32, "random_state": 0, "device": "cpu"}


class _SentimentOfTwoWords(torch.nn.Module):
    """Logits of (negative, positive) from the counts of tokens 2 and 3; needs int64 ids."""

    def forward(self, x):
        assert x.dtype == torch.long, "the black box gets token ids as int64"
        score = 4.0 * ((x == POSITIVE).sum(dim=1) - (x == NEGATIVE).sum(dim=1)).float()
        return torch.stack([-score, score], dim=1)


@pytest.fixture(scope="module")
def sentences():
    """Rows of 6-12 neutral tokens (ids 4-29, padded with 0) holding one sentiment token."""
    rng = np.random.default_rng(0)
    ids = rng.integers(4, 30, size=(N_ROWS, LENGTH))
    lengths = rng.integers(6, LENGTH + 1, size=N_ROWS)
    ids[np.arange(LENGTH)[None, :] >= lengths[:, None]] = 0
    where = (rng.random(N_ROWS) * lengths).astype(int)
    ids[np.arange(N_ROWS), where] = np.where(rng.random(N_ROWS) < 0.5, POSITIVE, NEGATIVE)
    return ids, where, as_black_box(_SentimentOfTwoWords(), output="logits")


def _l2x(**params):
    params = {"k": 1, "tokens": True, "tau": 0.5, "max_epochs": 15, "batch_size": 100,
              "random_state": 0, "device": "cpu", **params}
    return L2XExplainer(selector=TokenCNNSelector(embedding_dim=16, filters=32),
                        approximator=TokenCNN(embedding_dim=16, filters=32, hidden_units=(32,)),
                        **params)


def test_l2x_finds_the_one_token_that_decides(sentences):
    ids, where, model = sentences
    explainer = _l2x().fit(ids, black_box=model)
    masks = explainer.transform(ids)
    assert masks.shape == ids.shape
    np.testing.assert_array_equal(masks.sum(axis=1), 1)
    assert np.mean(masks[np.arange(N_ROWS), where] == 1) > 0.95
    assert explainer.score(ids) > 0.95  # the sentiment survives with every other token padded
    assert explainer.n_tokens_ == 30


def test_token_explainers_save_and_pickle_with_identical_masks(sentences, tmp_path):
    ids, _, model = sentences
    explainer = _l2x(max_epochs=2).fit(ids, black_box=model)
    masks = explainer.transform(ids)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(explainer)).transform(ids), masks)
    save(explainer, tmp_path / "tokens.safetensors")
    loaded = load(tmp_path / "tokens.safetensors", black_box=model)
    np.testing.assert_array_equal(loaded.transform(ids), masks)
    assert loaded.score(ids) == explainer.score(ids)


def test_realx_reads_tokens_with_their_mask(sentences):
    ids, where, model = sentences
    explainer = RealXExplainer(
        k=1, tokens=True, max_epochs=4, predictor_epochs=2, batch_size=100,
        selector=TokenCNNSelector(embedding_dim=8, filters=8),
        predictor=TokenCNN(embedding_dim=8, filters=8, hidden_units=(8,)),
        random_state=0, device="cpu",
    ).fit(ids, black_box=model)
    assert explainer.transform(ids[:5]).sum(axis=1).tolist() == [1] * 5
    assert explainer.net_.predictor_.length == LENGTH  # ids and mask, side by side


def test_token_errors_name_the_problem(sentences):
    ids, _, model = sentences
    with pytest.raises(ValueError, match="needs networks that embed token ids"):
        L2XExplainer(tokens=True, device="cpu").fit(ids, black_box=model)
    with pytest.raises(ValueError, match="whole numbers >= 0"):
        _l2x(max_epochs=1).fit(ids + 0.5, black_box=model)
    explainer = _l2x(max_epochs=1).fit(ids, black_box=model)
    with pytest.raises(ValueError, match=r"token id 30, but L2XExplainer was fitted on ids "
                                         r"below 30"):
        explainer.transform(np.full((2, LENGTH), 30))
    with pytest.raises(ValueError, match="whole numbers >= 0"):
        explainer.transform(-np.ones((2, LENGTH)))
    with pytest.raises(ValueError, match="TokenCNN reads sequences of token ids"):
        TokenCNN()(8, 2, input_shape=(1, 2, 4), n_tokens=5)
    with pytest.raises(ValueError, match="vocab_size=3 is smaller"):
        TokenCNN(vocab_size=3)(8, 2, input_shape=(4,), n_tokens=5)


def test_token_sequencer_pads_cuts_and_maps_masks_back_to_words():
    texts = ["The film was good, really good", "bad film", "good"]
    sequencer = TokenSequencer(max_length=4, max_features=3).fit(texts)
    # good (3 times), film (2), then the once-seen words alphabetically: bad.
    assert list(sequencer.words_) == ["<pad>", "<unk>", "good", "film", "bad"]
    ids = sequencer.transform(texts + ["an unseen good word"])
    np.testing.assert_array_equal(ids, [[1, 3, 1, 2], [4, 3, 0, 0], [2, 0, 0, 0], [1, 1, 2, 1]])
    masks = np.array([[0, 1, 0, 1], [1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]])
    assert sequencer.selected_words(ids, masks) == [["film", "good"], ["bad"], ["good"], ["good"]]
    copy = pickle.loads(pickle.dumps(sequencer))
    np.testing.assert_array_equal(copy.transform(texts), ids[:3])
    with pytest.raises(ValueError, match="list of texts"):
        sequencer.transform("one text")


def test_a_stray_huge_token_id_is_named_before_any_embedding_is_built():
    from sk_sointer import TokenCNN, TokenCNNSelector

    rng = np.random.RandomState(0)
    ids = rng.randint(1, 30, size=(30, 6))
    ids[3, 2] = 2_000_000  # an embedding of 4.2 GB, were it sized by it
    explainer = L2XExplainer(k=1, tokens=True, selector=TokenCNNSelector(filters=4),
                             approximator=TokenCNN(filters=4, hidden_units=(4,)), **FAST)
    with pytest.raises(ValueError, match="token id 2000000, .* ids below 65536 for these 180 "
                                         "tokens .*TokenSequencer"):
        explainer.fit(ids, ids[:, 0] % 2)
    ids[3, 2] = 10**12  # float32 rounds the id, which is named still
    with pytest.raises(ValueError, match=r"token id 99999999\d+, "):
        explainer.fit(ids, ids[:, 0] % 2)
    ids[3, 2] = 65_535  # at the bound: fits, the embedding sized by it
    explainer.set_params(max_epochs=1).fit(ids, ids[:, 0] % 2)
    assert explainer.n_tokens_ == 65_536


def test_selected_words_refuses_ids_outside_the_vocabulary():
    from sk_sointer.text import TokenSequencer

    sequencer = TokenSequencer(max_length=4).fit(["alpha beta gamma", "beta gamma delta"])
    n_words = len(sequencer.words_)
    ids = sequencer.transform(["alpha gamma"])
    assert sequencer.selected_words(ids, np.ones_like(ids)) == [["alpha", "gamma"]]
    for bad in (n_words, 99, -2):  # beyond the vocabulary, or negative: not a word
        wrong = ids.copy()
        wrong[0, 1] = bad
        with pytest.raises(ValueError, match=f"ids holds {bad}, which is not a token id"):
            sequencer.selected_words(wrong, np.ones_like(wrong))
