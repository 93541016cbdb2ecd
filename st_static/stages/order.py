"""The stages that train a table, in the order they run: what a build runs before its soup, and what a soup's child
process runs for each of its seeds (:mod:`st_static.stages.soup`)."""

from __future__ import annotations

from st_static.stages.base import Stage
from st_static.stages.completion import Completion
from st_static.stages.extraction import Extraction
from st_static.stages.long_texts import LongTextTargets
from st_static.stages.reduction import Reduction
from st_static.stages.refinement import Refinement
from st_static.stages.second_pass import SecondPass
from st_static.stages.second_teacher import SecondTeacher

TRAINING_STAGES: tuple[Stage, ...] = (
    Extraction(),
    Completion(),
    Reduction(),
    LongTextTargets(),
    SecondTeacher(),
    Refinement(),
    SecondPass(),
)
"""Extraction to the second contrastive pass (each runs when it applies to the build's settings)."""
