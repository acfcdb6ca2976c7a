"""The refinement against the model on a device, and a fit for a CPU machine to load.

    python .ci/gpu_refine.py OUT [N_ROWS]        (.ci/gpu refine OUT runs it)

Measured on an H200 on 2026-11-27, parts 1 to 3 (the day's second run, after SOInter's energy
network was captured): benchmarks/results/refine_cuda.json.

1. L2X at N_ROWS x 30 (100,000 by default) explaining a torch network on the device, fitted
   with ``refine=None`` and with the default refinement: the fit's seconds split into the
   method's own training, the in-distribution judge's and the refinement's, and the host
   synchronisations of the refinement's steps (torch's sync debug mode, where they are).
   Written to OUT/refine_cuda.json.
2. SOInter at N_ROWS / 10 rows of E2 (four outputs) explaining a multi-label MLP: the fit's
   seconds split into the energy network's pre-training and the interpreter's training,
   with the share of the interpreter's steps that ran captured.
3. An L2X fitted on the device, saved (``sk_sointer.save``) and pickled with its rows and
   masks (OUT/fitted.tar): on a CPU machine, ``load`` and ``pickle.load`` must give the same
   masks without a warning.
"""
import json
import os
import pickle
import sys
import tarfile
import tempfile
import time
import warnings

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

import sk_sointer
from sk_sointer import L2XExplainer
from sk_sointer._model_judge import ModelJudgedNet
from sk_sointer._model_judge import _refine as refine_module

out, n_rows = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.set_num_threads(4)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


def black_box(n_rows):
    """Rows N(0, 1) x 30 and a small torch network taught a label from 4 of them."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(n_rows, 30, generator=gen)
    y = ((X[:, 0] * X[:, 1] + X[:, 2] - X[:, 3]) > 0).long()
    model = torch.nn.Sequential(torch.nn.Linear(30, 100), torch.nn.ReLU(),
                                torch.nn.Linear(100, 2), torch.nn.Softmax(dim=1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    X_dev, y_dev = X.to(device), y.to(device)
    for _ in range(3):
        for index in torch.randperm(n_rows, device=device).split(512):
            loss = torch.nn.functional.nll_loss(torch.log(model(X_dev[index]) + 1e-9),
                                                y_dev[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = float((model(X_dev).argmax(1) == y_dev).float().mean())
    return X.numpy(), model, accuracy


def timed(cls, name, key, seconds):
    """Add the seconds of every call of ``cls.name`` (a class's or a module's) to
    ``seconds[key]``."""
    original = getattr(cls, name)

    def wrapper(*args, **kwargs):
        sync()
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sync()
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start
    setattr(cls, name, wrapper)


def counted(syncs):
    """Count the host synchronisations of every refinement step (CUDA only)."""
    step = ModelJudgedNet.train_step

    def train_step(self, batch, **fit_params):
        if device.type != "cuda":
            return step(self, batch, **fit_params)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode(1)
            try:
                return step(self, batch, **fit_params)
            finally:
                torch.cuda.set_sync_debug_mode(0)
                found = [w for w in caught if "synchroniz" in str(w.message)]
                syncs["steps"] += 1
                syncs["syncs"] += len(found)
                syncs["where"] |= {f"{os.path.basename(w.filename)}:{w.lineno}" for w in found}
    ModelJudgedNet.train_step = train_step


def refinement_share(X, model):
    seconds, syncs = {}, {"steps": 0, "syncs": 0, "where": set()}
    timed(refine_module, "_in_distribution_judge", "judge_s", seconds)
    timed(refine_module, "_train_selector", "refine_s", seconds)
    counted(syncs)
    row = {}
    for refine in (None, "model"):
        seconds.clear()
        explainer = L2XExplainer(k=4, refine=refine, random_state=0, device=device.type)
        sync()
        start = time.perf_counter()
        explainer.fit(X, model)
        sync()
        fit_s = time.perf_counter() - start
        if refine is None:
            row["own_fit_s"] = fit_s
            continue
        training_s = fit_s - seconds.get("judge_s", 0.0) - seconds.get("refine_s", 0.0)
        row.update(fit_s=fit_s, training_s=training_s, **seconds,
                   refine_over_training=seconds.get("refine_s", 0.0) / training_s,
                   queries=int(explainer.n_model_queries_),
                   fidelity=[float(f) for f in explainer.refinement_fidelity_[[0, -1]]])
    row["refinement_syncs"] = {**syncs, "where": sorted(syncs["where"])}
    return row


def sointer_share(n_rows):
    from sklearn.neural_network import MLPClassifier

    from sk_sointer import SOInterExplainer
    from sk_sointer.datasets import make_structured_output
    from sk_sointer.explainers._sointer import SOInterExplainer as Explainer

    X, Y, _ = make_structured_output(n_rows, energy="E2", random_state=0)
    model = MLPClassifier(hidden_layer_sizes=(64,), max_iter=200, random_state=0).fit(X, Y)
    seconds = {}
    timed(Explainer, "_pretrain", "energy_s", seconds)
    timed(Explainer, "_train", "interpreter_s", seconds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sync()
        start = time.perf_counter()
        explainer = SOInterExplainer(k=4, target=0, random_state=0,
                                     device=device.type).fit(X, black_box=model)
        sync()
    eager = sorted({str(w.message)[:160] for w in caught if "eagerly" in str(w.message)})
    return {"n_rows": n_rows, "fit_s": time.perf_counter() - start, **seconds,
            "n_iter": int(explainer.n_iter_), "eager_warnings": eager}


def fitted_for_the_cpu(path):
    rows = np.random.RandomState(0).randn(2000, 10).astype(np.float32)
    model = LogisticRegression().fit(rows, (rows[:, 0] + rows[:, 1] > 0).astype(int))
    explainer = L2XExplainer(k=2, max_epochs=5, random_state=0,
                             device=device.type).fit(rows, model)
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "X.npy"), rows)
        np.save(os.path.join(folder, "masks.npy"), explainer.transform(rows))
        sk_sointer.save(explainer, os.path.join(folder, "saved"))
        with open(os.path.join(folder, "explainer.pkl"), "wb") as file:
            pickle.dump(explainer, file)
        with tarfile.open(path, "w") as tar:
            tar.add(folder, arcname="fitted")


if __name__ == "__main__":
    os.makedirs(out, exist_ok=True)
    X, model, accuracy = black_box(n_rows)
    report = {"device": (torch.cuda.get_device_name() if device.type == "cuda" else "cpu"),
              "torch": torch.__version__, "n_rows": n_rows, "n_features": X.shape[1],
              "black_box_accuracy": accuracy, "l2x": refinement_share(X, model),
              "sointer": sointer_share(max(n_rows // 10, 1000))}
    with open(os.path.join(out, "refine_cuda.json"), "w") as file:
        json.dump(report, file, indent=1)
    fitted_for_the_cpu(os.path.join(out, "fitted.tar"))
    print(json.dumps(report, indent=1))
