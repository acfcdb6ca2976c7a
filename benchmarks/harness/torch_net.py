"""A torch network as a black box, fitted on a table as a user of PyTorch would fit one."""

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from .data import train_torch


class _Standardised(nn.Module):
    """``network((x - mean) / scale)`` as class probabilities."""

    def __init__(self, network, mean, scale):
        super().__init__()
        self.network = network
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

    def logits(self, x):
        return self.network((x - self.mean) / self.scale)

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


class TorchMLPClassifier(ClassifierMixin, BaseEstimator):
    """A torch MLP classifier on standardised rows (``hidden`` ReLU units a layer, Adam); its
    ``module_`` takes raw rows to class probabilities, for captum's gradient methods."""

    def __init__(self, hidden=(64, 64), epochs=200, batch_size=64, lr=1e-3,
                 weight_decay=1e-4, random_state=0):
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.random_state = random_state

    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float32)
        self.classes_, codes = np.unique(y, return_inverse=True)
        scale = X.std(axis=0)

        def network():
            layers, width = [], X.shape[1]
            for units in self.hidden:
                layers += [nn.Linear(width, units), nn.ReLU()]
                width = units
            layers.append(nn.Linear(width, len(self.classes_)))
            return _Standardised(nn.Sequential(*layers), X.mean(axis=0),
                                 np.where(scale > 0, scale, 1.0))

        self.module_ = train_torch(network, X, codes, self.epochs, self.random_state,
                                   batch_size=self.batch_size, lr=self.lr,
                                   weight_decay=self.weight_decay)
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float32, reset=False)
        with torch.no_grad():
            return self.module_(torch.as_tensor(X)).numpy().astype(np.float64)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
