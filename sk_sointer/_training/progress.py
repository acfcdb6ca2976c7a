"""Progress of a training on standard error: :class:`_EpochProgress` over the epochs of one
phase (a bar on a terminal, one line an epoch elsewhere) and :class:`_RefineProgress`, the
same for the refinement against the model, with its fidelity and the queries asked."""

import math

from skorch.callbacks import Callback


class _EpochProgress(Callback):
    """Progress over the epochs of one phase (``desc``), on standard error: a bar on a
    terminal; elsewhere (a log, a pipe, CI) one line per epoch, at most one every
    ``_LINE_SECONDS`` seconds, the first and the last always, as a bar that tqdm hides off
    a terminal would leave a long fit silent. Each shows the latest training loss."""

    _LINE_SECONDS = 2.0

    def __init__(self, desc=None):
        self.desc = desc

    def _details(self, net):
        loss = net.history[-1].get("train_loss")
        return {} if loss is None else {"loss": f"{loss:.4f}"}

    def on_train_begin(self, net, **kwargs):
        import sys
        import time

        self.name_ = self.desc or type(net).__name__
        # A training that goes on (partial_fit) counts on from its epochs so far, to the
        # total it was given (``epochs_planned_``, where set).
        self.epoch_ = len(net.history)
        self.total_ = getattr(net, "epochs_planned_", net.max_epochs)
        self.stream_ = sys.stderr
        self.last_line_ = -math.inf
        self.clock_ = time.monotonic
        self.bar_ = None
        if getattr(self.stream_, "isatty", lambda: False)():
            from tqdm.auto import tqdm

            self.bar_ = tqdm(total=self.total_, initial=self.epoch_, desc=self.name_,
                             leave=False, file=self.stream_)

    def on_epoch_end(self, net, **kwargs):
        self.epoch_ += 1
        details = self._details(net)
        if self.bar_ is not None:
            self.bar_.update(1)
            self.bar_.set_postfix(details)
            return
        self.details_ = "".join(f", {key} {value}" for key, value in details.items())
        now = self.clock_()
        if now - self.last_line_ < self._LINE_SECONDS and self.epoch_ < self.total_:
            return
        self.last_line_ = now
        self._line(f"epoch {self.epoch_}/{self.total_}{self.details_}")

    def on_train_end(self, net, **kwargs):
        if self.bar_ is not None:
            self.bar_.close()
        elif 0 < self.epoch_ < self.total_:  # stopped early: say where
            self._line(f"stopped early after epoch {self.epoch_}/{self.total_}{self.details_}")

    def _line(self, text):
        self.stream_.write(f"{self.name_}: {text}\n")
        self.stream_.flush()

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("bar_", "stream_", "clock_"):
            state.pop(name, None)
        return state


class _RefineProgress(_EpochProgress):
    """:class:`_EpochProgress` of the refinement against the model: the model's fidelity
    on the evaluation rows after each epoch and the queries asked of it so far."""

    def __init__(self, judge, desc=None):
        super().__init__(desc)
        self.judge = judge

    def on_train_begin(self, net, **kwargs):
        super().on_train_begin(net, **kwargs)
        if self.epoch_ and self.bar_ is None:  # the budget extended (max_extensions)
            self._line(f"the fidelity still rose: budget extended to "
                       f"{self.judge.max_queries:,} queries")

    def _details(self, net):
        fidelity = net.history[-1].get("model_fidelity")
        details = {} if fidelity is None else {"fidelity": f"{fidelity:.4f}"}
        details["queries"] = f"{self.judge.n_queries:,}"
        return details
