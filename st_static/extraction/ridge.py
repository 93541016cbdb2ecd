"""A linear map between two vector spaces fitted by ridge regression (used to carry vectors from one table's space
into another's)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RidgeMap:
    """``y = (x - x_mean) @ weight + y_mean``, fitted by ridge regression."""

    weight: np.ndarray
    x_mean: np.ndarray
    y_mean: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, ridge: float = 1e-2) -> RidgeMap:
        """Fit on paired rows; ``ridge`` is relative to the mean eigenvalue of the centred ``x`` covariance."""
        if x.shape[0] != y.shape[0] or x.shape[0] < 2:
            raise ValueError(f"A map needs at least two paired rows, got {x.shape[0]} and {y.shape[0]}.")
        x = x.astype(np.float64)
        y = y.astype(np.float64)
        x_mean, y_mean = x.mean(axis=0), y.mean(axis=0)
        xc, yc = x - x_mean, y - y_mean
        gram = xc.T @ xc
        penalty = ridge * np.trace(gram) / gram.shape[0]
        weight = np.linalg.solve(gram + penalty * np.eye(gram.shape[0]), xc.T @ yc)
        return cls(weight=weight, x_mean=x_mean, y_mean=y_mean)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x.astype(np.float64) - self.x_mean) @ self.weight + self.y_mean).astype(np.float32)


def mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The mean cosine of paired rows of ``a`` and ``b`` (how well a map carries one space into another)."""
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a * b).sum(axis=1).mean())
