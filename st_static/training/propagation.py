"""Carrying the refinement to the rows it never reached.

Sparse Adam moves only rows whose words occur in a training batch; a word added from outside the corpus (vocabulary
completion) never does, so its row stays in the pre-refinement space while its neighbours move. A ridge map fitted
on the rows the refinement moved (before -> after) is applied to the rows it did not move.
"""

from __future__ import annotations

import numpy as np

from st_static.extraction.ridge import RidgeMap


def propagate_refinement(before: np.ndarray, after: np.ndarray) -> tuple[np.ndarray, int]:
    """The refined table with its untouched rows mapped like the touched ones.

    Args:
        before: ``(num_words, dim)`` table before refinement.
        after: The same table after refinement.

    Returns:
        The new table and the number of rows mapped (0, and ``after`` itself, when there is nothing to map or too
        few moved rows to fit the map).
    """
    untouched = np.all(before == after, axis=1) & np.any(before != 0, axis=1)
    moved = ~np.all(before == after, axis=1)
    if not untouched.any() or moved.sum() <= before.shape[1]:
        return after, 0
    mapping = RidgeMap.fit(before[moved], after[moved])
    result = after.copy()
    result[untouched] = mapping(before[untouched])
    return result, int(untouched.sum())
