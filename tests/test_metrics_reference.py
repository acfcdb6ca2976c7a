"""Random masks: the reference level every explanation is measured against."""

import numpy as np
import pytest

from sk_sointer.metrics import random_masks


def test_random_masks_keep_the_given_number_of_features_in_every_row():
    counts = np.array([0, 1, 3, 5, 2])
    masks = random_masks(5, 5, counts, random_state=0)
    assert masks.dtype == np.float32
    np.testing.assert_array_equal(masks.sum(axis=1), counts)
    np.testing.assert_array_equal(masks, random_masks(5, 5, counts, random_state=0))
    assert not np.array_equal(random_masks(200, 5, 2, random_state=0),
                              random_masks(200, 5, 2, random_state=1))


def test_random_masks_are_uniform_over_features():
    many = random_masks(4000, 5, 2, random_state=1)
    # Each feature is kept in 2/5 of the rows, and every pair as often as any other.
    np.testing.assert_allclose(many.mean(axis=0), 0.4, atol=0.03)
    pairs = many.T @ many / len(many)
    off_diagonal = pairs[~np.eye(5, dtype=bool)]
    np.testing.assert_allclose(off_diagonal, 0.1, atol=0.02)


def test_random_masks_draw_whole_groups():
    groups = np.array([0, 0, 1, 1, 1, 2])
    masks = random_masks(300, 6, 2, groups=groups, random_state=0)
    # Two of the three groups per row, each kept or left out whole.
    for group in range(3):
        block = masks[:, groups == group]
        assert (block == block[:, :1]).all()
    kept_groups = np.stack([masks[:, groups == g][:, 0] for g in range(3)], axis=1)
    np.testing.assert_array_equal(kept_groups.sum(axis=1), 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"k": 6}, r"k must lie in \[0, 5\] \(the number of features\); got 6"),
     ({"k": -1}, r"got -1"),
     ({"k": 3, "groups": [0, 0, 1, 1, 1]}, r"k must lie in \[0, 2\] \(the number of groups\)"),
     ({"k": 1, "groups": [0, 1]}, "groups has 2 entries; expected n_features = 5")],
)
def test_random_masks_reject_sizes_they_cannot_draw(kwargs, message):
    with pytest.raises(ValueError, match=message):
        random_masks(4, 5, **kwargs)
