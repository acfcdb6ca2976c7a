"""The chunked inference engine of the explainers: the selector's per-group scores of raw
rows, a chunk at a time (on an accelerator, every step there), finished into feature-level
scores, group scores or masks (:class:`_InferenceMixin`, a base of
:class:`~sk_sointer.base.BaseExplainer`).

It reads the explainer's hooks (``_selector_input``, ``_selector_scores``, ``_threshold``,
``_check_k``) and its fitted ``net_`` and ``masker_``.
"""

import numpy as np
import torch
from sklearn.utils import assert_all_finite

from ._topk import ROUNDS_K, topk_mask, topk_mask_of_finite
from ._utils import in_chunks, inference_chunk, set_mode


class _InferenceMixin:
    """How a fitted explainer turns rows into scores and masks, chunk by chunk."""

    def _explain_rows(self, X, finish, dtype, outputs=None, width=None):
        """``finish(scores, out)`` for the selector's per-group scores of raw rows ``X``, one
        chunk of rows at a time, ``out`` being the chunk's rows of one preallocated array.
        ``outputs`` (the black box's standardised outputs on ``X``, or None) go to
        :meth:`_selector_input` chunk by chunk. The array is of ``X``'s shape, or has
        ``width`` columns (the groups, for :meth:`_group_scores_of`).

        Standardisation (into one buffer reused by every chunk), the selector and
        ``finish`` run per chunk, so memory beyond the input and the output stays bounded
        by the chunk for any number of rows. On an accelerator every step runs there
        (:meth:`_chunk_on_device`): the raw rows go in, the finished rows come out.
        """
        # The selector runs in evaluation mode: batch statistics must not depend on which
        # rows are explained together.
        set_mode(self.net_.module_, False)
        device = self._inference_device()
        n_rows = X.shape[0]
        step = inference_chunk(device, X.shape[1])
        out = np.empty(X.shape if width is None else (n_rows, width), dtype=dtype)
        buffer = np.empty((min(step, n_rows), self.masker_.n_encoded_features), dtype=np.float32)
        for start in range(0, n_rows, step):
            rows = X[start : start + step]
            chunk_out = out[start : start + len(rows)]
            chunk_outputs = None if outputs is None else outputs[start : start + step]
            if _explains_on_device(device) and self._chunk_on_device(
                    rows, chunk_outputs, finish, chunk_out, device):
                continue
            net_input = self._selector_input(self._standardize(rows, buffer[: len(rows)]), rows,
                                             chunk_outputs)
            with torch.inference_mode():
                scores = self._selector_scores(torch.as_tensor(net_input).to(device))
                if not bool(torch.isfinite(scores).all()):
                    # Top-k of NaN would still give k-hot masks that look normal.
                    raise ValueError(
                        f"The selector of this {type(self).__name__} gave NaN or infinite "
                        "scores: its weights are not finite (training diverged, or they "
                        "were altered after fit), so it cannot explain rows."
                    )
                finish(scores, chunk_out)
        return out

    def _chunk_on_device(self, rows, outputs, finish, out, device):
        """One chunk of :meth:`_explain_rows` on ``device``: the raw rows copied in once,
        standardised, scored and finished there, the finished rows copied out once into
        ``out``. Whether that went through: a chunk whose standardised rows or scores are
        not all finite (a NaN in ``X``, a float32 overflow that the host's float64 detour
        avoids, a diverged selector) is left to the host path, which says what is wrong."""
        with torch.inference_mode():
            raw = torch.from_numpy(np.ascontiguousarray(rows)).to(device)
            scaled = self.masker_.standardize_tensor(raw)
            net_input = self._selector_input(scaled, rows, outputs)
            scores = self._selector_scores(net_input)
            finite = torch.isfinite(scaled).all() & torch.isfinite(scores).all()
            finish(scores, out)
            return bool(finite)  # read after the copy out, which waited for the device

    def _standardize(self, rows, out):
        try:
            return self.masker_.standardize(rows, out=out)
        except ValueError:
            # The rows were validated without the finite check: a NaN or an infinity in
            # them is reported as validation would have reported it.
            assert_all_finite(rows, input_name="X", estimator_name=type(self).__name__)
            raise

    def _scores_of(self, scores, out):
        """Feature-level scores from a chunk's per-group scores, written into ``out``."""
        if _explains_on_device(scores.device):  # expanded on the device, one copy out
            torch.from_numpy(out).copy_(self.masker_.expand_raw(scores.float()))
            return
        out[...] = self.masker_.expand_raw(scores.float().cpu().numpy())

    def _group_scores_of(self, scores, out):
        """A chunk's per-group scores, written into ``out`` (one column a group)."""
        if _explains_on_device(scores.device):  # one copy out
            torch.from_numpy(out).copy_(scores.float())
            return
        out[...] = scores.float().cpu().numpy()

    def _group_scores(self, X, outputs=None):
        """The selector's per-group scores of validated rows ``X``, float32 ``(n_rows,
        n_groups)`` (:meth:`_explain_rows`)."""
        return self._explain_rows(X, self._group_scores_of, np.float32, outputs,
                                  width=self.masker_.n_groups_)

    def _masks_of(self, scores, out):
        """Feature-level 0/1 masks from a chunk's per-group scores, written into ``out``."""
        direct = out if out.shape[-1] == self.masker_.n_groups_ and \
            not self.masker_.raw_grouped else None
        group_masks = self._masks_from_scores(scores, out=direct)
        if group_masks is direct:
            return
        if isinstance(group_masks, torch.Tensor):
            # Made and expanded on the device, copied out as booleans (a quarter of the
            # bytes of float32), given out's dtype on the host.
            np.copyto(out, self.masker_.expand_raw(group_masks.bool()).cpu().numpy())
            return
        out[...] = self.masker_.expand_raw(group_masks)

    def _masks_from_scores(self, scores, out=None):
        """0/1 masks over groups from a chunk of per-group scores (a tensor on the
        selector's device): the top-k, or with ``k=None`` the scores above ``_threshold``,
        and the best group of a row where none is (an empty mask explains nothing: it
        says the model answers the same on the baseline, which is seldom what it does).

        On an accelerator the masks are made there (booleans, by rounds of argmax for a
        small k), so that only they travel back; on the CPU NumPy's partition is the
        faster top-k, and it writes into ``out`` (a float array of the scores' shape) when
        one is given.
        """
        # ``k`` as it is now: a selector's scores do not depend on it, so setting k after
        # fit changes only how scores become masks.
        k = self._check_k()
        if _explains_on_device(scores.device):
            # Boolean masks; of non-finite scores they mean nothing, and _chunk_on_device
            # sends such a chunk back to the host path, which says what is wrong.
            if k is None:
                return (scores > self._threshold) | topk_mask_of_finite(scores, 1)
            k = min(k, self.masker_.n_groups_)
            if k <= ROUNDS_K:
                return topk_mask_of_finite(scores, k)
            return topk_mask(scores, k).bool()
        scores = scores.float().numpy()
        if out is None:
            out = np.empty(scores.shape, dtype=np.float32)
        if k is None:
            return _above_or_best(scores, self._threshold, out)
        # The scores are this chunk's own (fresh from the selector): top-k may overwrite them.
        return topk_mask(scores, min(k, self.masker_.n_groups_), out=out, overwrite_scores=True)

    def _inference_device(self):
        param = next(self.net_.module_.parameters(), None)
        return param.device if param is not None else torch.device("cpu")

    def _selection_sizes(self, net_input):
        """The number of groups the fitted selector selects (``k=None``) on each row of
        what it is fed, an int64 array."""
        self.net_.module_.eval()
        device = self._inference_device()

        def sizes(rows):
            with torch.inference_mode():
                masks = self._masks_from_scores(self._selector_scores(
                    torch.as_tensor(rows).to(device)))
            return torch.as_tensor(masks).sum(dim=1).to("cpu", torch.int64).numpy()

        return in_chunks(sizes, net_input)


def _explains_on_device(device):
    """Whether :meth:`BaseExplainer._explain_rows` runs its chunks on ``device`` (an
    accelerator) rather than standardising and finishing them on the host."""
    return device.type != "cpu"


def _above_or_best(scores, threshold, out):
    """``scores > threshold`` as 0/1 into ``out``, with each row's best score kept where
    none is above."""
    np.greater(scores, threshold, out=out)
    empty = ~out.any(axis=1)
    if empty.any():
        out[empty, scores[empty].argmax(axis=1)] = 1.0
    return out
