"""The settings of the stages after the extraction: step 2 (PCA with All-But-The-Top), step 3 (the refinement), the
second contrastive pass and the disentangler of cross-lingual tables."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from st_static.settings.base import (
    MAX_SEED,
    SettingsError,
    checked_language_counts,
    is_seed,
    positive_int,
    positive_number,
    seed_values,
    setting,
)


@dataclass
class ReductionSettings:
    """Step 2: PCA with All-But-The-Top."""

    dim: int = setting(256, "Dimension of the table after PCA.")
    removed_components: int | None = setting(
        None, "Leading principal components removed by ABTT (default: teacher dimension / 100, rounded down)."
    )
    pca_level: Literal["sentence", "word"] = setting(
        "sentence", "Fit the PCA on sentence vectors (the method) or on the word table (for comparison)."
    )

    def __post_init__(self) -> None:
        positive_int(self, "dim")
        if self.removed_components is not None and (
            isinstance(self.removed_components, bool)
            or not isinstance(self.removed_components, int)
            or self.removed_components < 0
        ):
            raise SettingsError(f"removed_components must be 0 or more, got {self.removed_components!r}.")
        if self.pca_level not in ("sentence", "word"):
            raise SettingsError(f"pca_level must be sentence or word, got {self.pca_level!r}.")


@dataclass
class RefinementSettings:
    """Step 3: training the table with the sentence-transformers trainer."""

    loss: str = setting(
        "auto",
        "Refinement loss, by registered name (st_static.losses.LOSSES): auto = distillation for one language, "
        "contrastive across languages.",
    )
    steps: int = setting(5_000, "Most refinement steps (early stopping may end sooner).")
    batch_size: int = setting(512, "Sentences (or translation pairs) per batch: K of the losses.")
    learning_rate: float = setting(3e-3, "Adam's learning rate.")
    temperature: float = setting(0.05, "Softmax temperature of the losses.")
    similarity_mse_weight: float = setting(
        0.0,
        "Distillation: weight of a term matching the absolute cosine similarities of the teacher (mean squared "
        "difference over in-batch pairs) next to the softmax over them; 0: the paper's loss.",
    )
    eval_steps: int = setting(500, "Steps between validation-loss evaluations.")
    patience: int | None = setting(5, "Evaluations without a lower validation loss before stopping (none: never).")
    validation_size: int = setting(
        4096, "Sentences (or pairs) held out for the validation loss; scaled down for small corpora."
    )
    matryoshka_dims: list[int] | None = setting(
        None,
        "Train with MatryoshkaLoss over these dimensions (e.g. 32,64,128,256) so truncated vectors stay good.",
        cli="comma",
    )
    center_teacher: bool = setting(
        True, "Distil against mean-centred teacher embeddings (needed for anisotropic teachers such as e5)."
    )
    crosslingual_distillation: bool = setting(
        False,
        "Cross-lingual tables: also distil the teacher's similarities on the extracted sentences of every "
        "language, in turn with the contrastive loss.",
    )
    language_weights: dict[str, int] | None = setting(
        None,
        "Cross-lingual tables: comma-separated LANG=N (e.g. ja=3): the contrastive training takes N batches of "
        "LANG's pairs per round of its round robin over the language pairs, in place of 1 (more of the steps for a "
        "language that lags; the validation loss stays the plain sum).",
        cli="comma-pairs",
    )
    propagate_to_untrained: bool = setting(
        True,
        "Give rows no training batch reached (e.g. completed words) the refinement's linear map, fitted on the rows it "
        "moved.",
    )
    seed: int = setting(0, "Seed of the validation split, the batch order and the trainer.")
    soup_seeds: list[int] | None = setting(
        None,
        "More seeds (e.g. 1 or 1,2) whose refinements, trained beside the first from the same reduced table, are "
        "averaged with it row by row into one table (a model soup) before the later stages; each seed's training "
        "is its own cached stage. At --num-threads 1 one training runs per CPU core, and seeds that would leave a "
        "core idle in a last round share the cores instead: on two cores two seeds train in about the time of one.",
        cli="comma",
    )
    num_threads: int | None = setting(
        1, "Torch threads while training (small sparse steps run fastest on one); none keeps torch's setting."
    )

    def __post_init__(self) -> None:
        positive_int(self, "steps", "batch_size", "eval_steps", "validation_size")
        positive_number(self, "learning_rate", "temperature")
        seed_values(self, "seed")
        weight = self.similarity_mse_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < math.inf:
            raise SettingsError(f"similarity_mse_weight must be 0 or more, got {weight!r}.")
        if self.batch_size < 2:
            raise SettingsError("batch_size must be at least 2 (the losses compare texts in a batch), got 1.")
        if self.patience is not None:
            positive_int(self, "patience")
        if self.num_threads is not None:
            positive_int(self, "num_threads")
        self.language_weights = checked_language_counts(
            self.language_weights, "language_weights", "weight", "{'ja': 3}"
        )
        if self.matryoshka_dims is not None:
            dims = list(self.matryoshka_dims)
            if not dims or any(isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 for dim in dims):
                raise SettingsError(f"matryoshka_dims must be positive integers, got {self.matryoshka_dims!r}.")
            self.matryoshka_dims = dims
        if self.soup_seeds is not None:
            seeds = list(self.soup_seeds)
            if not seeds or not all(is_seed(seed) for seed in seeds):
                raise SettingsError(
                    f"soup_seeds (--soup-seeds) must be seeds, integers from 0 to {MAX_SEED} (numpy's seeds stop "
                    f"there), got {self.soup_seeds!r}."
                )
            if len(set(seeds)) < len(seeds) or self.seed in seeds:
                raise SettingsError(
                    f"soup_seeds must differ from each other and from seed ({self.seed}), got {self.soup_seeds!r}: "
                    "a seed trained twice gives the same table twice."
                )
            self.soup_seeds = seeds


@dataclass
class SecondPassSettings:
    """After the refinement (cross-lingual tables): the contrastive training continued on chosen translation pairs."""

    second_pass_pairs: list[str] | None = setting(
        None,
        "Cross-lingual builds: LANG=FILE translation pairs (pivot first; repeat it) that the contrastive training "
        "continues on after the refinement, before the fallback and piece rows, with a lower learning rate and no "
        "early stop (e.g. the closest-to-the-task files of --parallel: issue 68's second pass on parallel/ raised "
        "cross-lingual STS by 3.5).",
        cli="repeat",
    )
    second_pass_steps: int = setting(8_000, "Steps of the second contrastive pass (no early stop).")
    second_pass_learning_rate: float = setting(3e-4, "Adam's learning rate in the second contrastive pass.")
    second_pass_batch_size: int = setting(128, "Translation pairs per batch in the second contrastive pass.")

    def __post_init__(self) -> None:
        if self.second_pass_pairs is not None:
            if isinstance(self.second_pass_pairs, str) or any(
                not isinstance(entry, str) or not entry.strip() for entry in self.second_pass_pairs
            ):
                raise SettingsError(
                    f"second_pass_pairs must be a list of LANG=FILE entries, got {self.second_pass_pairs!r}."
                )
            self.second_pass_pairs = [str(entry) for entry in self.second_pass_pairs] or None
        positive_int(self, "second_pass_steps", "second_pass_batch_size")
        positive_number(self, "second_pass_learning_rate")
        if self.second_pass_batch_size < 2:
            raise SettingsError("second_pass_batch_size must be at least 2 (the loss compares pairs in a batch).")


DISENTANGLE_CONSTRAINTS = ("intra", "inter", "both")
"""The disentangler's constraint families (:mod:`st_static.losses.language_bias`)."""
DISENTANGLE_MAX_EPOCHS = 50
"""Most epochs of the disentangler's meaning map (early stopping ends most runs sooner)."""


@dataclass
class DisentangleSettings:
    """After the other stages (cross-lingual tables): the disentangler's meaning map, folded into the table."""

    disentangle: bool = setting(
        False,
        "Cross-lingual builds (--parallel): after the fallback and piece rows, train the disentangler's meaning map "
        "(Nonomura et al.: a linear map splitting each sentence vector into a meaning part, alike across "
        "translations, and a language part) on the translation pairs and fold it into the table, so the table holds "
        "meaning parts (st-static disentangle); nothing changes at inference.",
    )
    disentangle_constraints: Literal["intra", "inter", "both"] = setting(
        "both",
        "The disentangler's constraints: intra (meaning parts of translations alike, of other sentences apart; "
        "language parts of one language alike), inter (embeddings rebuilt from swapped parts) or both.",
    )
    disentangle_language_weight: float = setting(
        1.0, "The weight of the disentangler's language loss (L_lang) within its intra-component constraints."
    )
    disentangle_max_pairs: int = setting(
        100_000, "Most translation pairs the disentangler trains on (each language pair keeps its share)."
    )
    disentangle_max_epochs: int = setting(
        DISENTANGLE_MAX_EPOCHS,
        "Most epochs of the disentangler (it stops after 3 without a lower validation loss, keeping the best map).",
    )

    def __post_init__(self) -> None:
        if self.disentangle_constraints not in DISENTANGLE_CONSTRAINTS:
            raise SettingsError(
                f"disentangle_constraints must be one of {', '.join(DISENTANGLE_CONSTRAINTS)}, got "
                f"{self.disentangle_constraints!r}."
            )
        weight = self.disentangle_language_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < math.inf:
            raise SettingsError(f"disentangle_language_weight must be a finite number >= 0, got {weight!r}.")
        positive_int(self, "disentangle_max_pairs", "disentangle_max_epochs")
