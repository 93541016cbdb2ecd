"""What a build does: one settings dataclass per stage, nested in :class:`BuildSettings`.

Every default is written here once. The command line derives its options from these fields (the ``help`` in
each field's metadata is the option's help text), and each stage's cache key hashes ``asdict`` of that stage's own
settings, so a new field reaches both without further code. Values are checked when a settings object is made.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, Literal

from st_static.errors import StStaticError
from st_static.files import file_key
from st_static.teachers import DEFAULT_TEACHER, default_prompt

STORAGE_FORMATS = ("float32", "float16", "int8-row", "int8-column", "binary")
"""The storage formats of :mod:`st_static.model.storage` (kept equal by ``tests/test_pieces.py``)."""


class SettingsError(StStaticError, ValueError):
    """A setting has a value it cannot take."""


def check_device(device: str | None) -> None:
    """Refuse a ``device`` that torch cannot parse (``None``: the best available, always accepted).

    Raises:
        SettingsError: Naming the device.
    """
    if device is None:
        return
    import torch

    try:
        torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise SettingsError(f"device {device!r} is not a torch device ({error}).") from None


def setting(default: Any = MISSING, help: str = "", *, factory: Any = MISSING, cli: str = "") -> Any:
    """A settings field: its default, its help text and (``cli``) how the command line writes it.

    ``cli``: ``""`` (the field's own type), ``"comma"`` (a comma-separated list), ``"repeat"`` (a repeatable
    option), ``"pairs"`` (repeatable ``KEY=VALUE``), ``"skip"`` (not an option).
    """
    metadata = {"help": help, "cli": cli}
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _positive_int(settings: object, *names: str) -> None:
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SettingsError(f"{name} must be a positive integer, got {value!r}.")


def _positive_number(settings: object, *names: str) -> None:
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise SettingsError(f"{name} must be a positive number, got {value!r}.")


@dataclass
class ExtractionSettings:
    """Step 1: the vocabulary, the sentences the teacher reads, and how it reads them."""

    teacher: str = setting(DEFAULT_TEACHER, "Teacher: a Sentence Transformer folder or Hub repo id.")
    prompt: str | None = setting(
        None,
        'Text put before every sentence for the teacher, e.g. "query: " for e5 models. Default: the teacher\'s own '
        'similarity prompt (st-static\'s teacher registry, else its default_prompt_name); "" for none.',
    )
    vocab_size: int = setting(150_000, "Largest vocabulary (per language written with spaces).")
    spaceless_vocab_size: int = setting(
        30_000, "Largest vocabulary per language written without spaces (Chinese, Japanese: teacher tokens)."
    )
    min_sentences: int = setting(2, "Words in fewer corpus sentences are left out (and reported).")
    sentences_per_word: int = setting(
        5,
        "Shortest corpus sentences the teacher reads per word (N; the paper's 100 reads 2x the text for no gain on "
        "dev sets: benchmarks/results/2026-11-23-teacher-tokens-curve.md).",
    )
    max_words: int = setting(64, "Sentences with more words are never read (long inputs blur the vectors).")
    lowercase: bool = setting(True, "Lowercase the vocabulary of a one-language table (as the paper does).")
    wordfreq_weight: float = setting(
        0.0, "Rank vocabulary candidates by (1-w)*log p(corpus) + w*log p(wordfreq) (needs the extract extra)."
    )
    batch_tokens: int = setting(1024, "Teacher tokens per forward batch.")
    teacher_precision: Literal["auto", "float32", "bfloat16"] = setting(
        "auto",
        "Number format of the teacher's weights in the teacher pass: bfloat16 reads ~1.6x faster on CPUs with "
        "AVX512-BF16 or AMX (token vectors within cosine 0.9999 of float32); auto = bfloat16 where the device "
        "computes it natively, else float32.",
    )
    pca_sample_size: int = setting(100_000, "Corpus sentences sampled (per language) to fit the PCA.")
    pca_sample_seed: int = setting(0, "Seed of the PCA sample.")
    complete_words: int = setting(
        50_000,
        "One-language tables: of the language's this-many most frequent words (wordfreq), add those the corpus lacks, "
        "encoded alone by the teacher and mapped into the table (0: none).",
    )
    long_texts: int = setting(
        0,
        "Multi-sentence texts (runs of consecutive corpus lines) the teacher also reads, added to the distillation "
        "targets so the table learns how long texts' words add up (documents, search); 0: none.",
    )
    long_text_sentences: int = setting(4, "Corpus lines joined into one long text.")
    second_teacher: str | None = setting(
        None,
        "A second teacher (Sentence Transformer folder or Hub repo id) whose similarities the distillation also "
        "learns: it encodes a sample of the distillation sentences and the targets mix both teachers' similarities "
        "(second_teacher_mix); the first teacher still gives the words' vectors.",
    )
    second_teacher_prompt: str | None = setting(
        None, 'Text put before every sentence for the second teacher. Default: its own prompt; "" for none.'
    )
    second_teacher_weight: float = setting(
        0.5, "The second teacher's share of the distilled targets (0 to 1; the first teacher has the rest)."
    )
    second_teacher_mix: Literal["distributions", "cosines"] = setting(
        "distributions",
        "How the two teachers' targets mix: distributions = the weighted mean of each teacher's in-batch neighbour "
        "distribution (each keeps its nearest neighbours); cosines = one distribution of their weighted mean cosines.",
    )
    second_teacher_sentences: int = setting(
        100_000,
        "Distillation sentences (a random sample of the first teacher's) that the second teacher encodes; the "
        "distillation then trains on these.",
    )
    complete_spaceless: bool = setting(
        True,
        "Cross-lingual tables with Chinese or Japanese: add the teacher's tokens of those scripts that the corpus "
        "missed (encoded alone, mapped into the table).",
    )
    fallback_rows: bool = setting(
        True,
        "Give every text a vector: after the refinement, add tiny rows for the characters the teacher knows and the "
        "table lacks (punctuation, symbols, other scripts) and for the empty text (encoded alone by the teacher, "
        "mapped into the table); a text with a known word keeps its vector.",
    )

    piece_rows: bool = setting(
        True,
        "Give words the table lacks more than their prefix: after the refinement, add a row per subword piece (the "
        "teacher's continuation tokens and single letters), fitted so that the vocabulary words' prefixes and pieces "
        "predict their rows; an unknown word then reads its longest known prefix and its pieces. Known words keep "
        "their vectors.",
    )

    storage: str = setting(
        "float16",
        "How the published table is stored: float16 (the default: half the bytes of float32, the same scores), "
        "float32, int8-row, int8-column or binary (st_static.compression.quantize); one row per word, piece and "
        "fallback row, the tokenizer's other keys mapped onto them.",
    )

    def __post_init__(self) -> None:
        if self.storage not in STORAGE_FORMATS:
            raise SettingsError(f"storage must be one of {', '.join(STORAGE_FORMATS)}, got {self.storage!r}.")
        _positive_int(self, "vocab_size", "spaceless_vocab_size", "min_sentences", "sentences_per_word")
        _positive_int(self, "max_words", "batch_tokens", "pca_sample_size")
        for name in ("complete_words", "long_texts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SettingsError(f"{name} must be 0 or more, got {value!r}.")
        if (
            isinstance(self.long_text_sentences, bool)
            or not isinstance(self.long_text_sentences, int)
            or (self.long_text_sentences < 2)
        ):
            raise SettingsError(f"long_text_sentences must be 2 or more, got {self.long_text_sentences!r}.")
        if self.second_teacher is not None:
            if not isinstance(self.second_teacher, str | os.PathLike) or not str(self.second_teacher).strip():
                raise SettingsError(f"second_teacher must name a Sentence Transformer, got {self.second_teacher!r}.")
            self.second_teacher = str(self.second_teacher)
        weight = self.second_teacher_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0:
            raise SettingsError(f"second_teacher_weight must lie in [0, 1], got {weight!r}.")
        _positive_int(self, "second_teacher_sentences")
        if self.second_teacher_mix not in ("distributions", "cosines"):
            raise SettingsError(
                f"second_teacher_mix must be distributions or cosines, got {self.second_teacher_mix!r}."
            )
        if not 0.0 <= self.wordfreq_weight <= 1.0:
            raise SettingsError(f"wordfreq_weight must lie in [0, 1], got {self.wordfreq_weight}.")
        if self.teacher_precision not in ("auto", "float32", "bfloat16"):
            raise SettingsError(f"teacher_precision must be auto, float32 or bfloat16, got {self.teacher_precision!r}.")
        if not self.teacher:
            raise SettingsError("teacher must name a Sentence Transformer (folder or Hub repo id).")

    def with_teacher_prompt(self) -> ExtractionSettings:
        """These settings with the teacher's own prompt filled in where none was given (``prompt=None``)."""
        if self.prompt is not None:
            return self
        return replace(self, prompt=default_prompt(self.teacher))

    def with_second_teacher_prompt(self) -> ExtractionSettings:
        """These settings with the second teacher's own prompt filled in where a second teacher has none."""
        if self.second_teacher is None or self.second_teacher_prompt is not None:
            return self
        return replace(self, second_teacher_prompt=default_prompt(self.second_teacher))


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
        _positive_int(self, "dim")
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
    propagate_to_untrained: bool = setting(
        True,
        "Give rows no training batch reached (e.g. completed words) the refinement's linear map, fitted on the rows it "
        "moved.",
    )
    seed: int = setting(0, "Seed of the validation split, the batch order and the trainer.")
    num_threads: int | None = setting(
        1, "Torch threads while training (small sparse steps run fastest on one); none keeps torch's setting."
    )

    def __post_init__(self) -> None:
        _positive_int(self, "steps", "batch_size", "eval_steps", "validation_size")
        _positive_number(self, "learning_rate", "temperature")
        weight = self.similarity_mse_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < math.inf:
            raise SettingsError(f"similarity_mse_weight must be 0 or more, got {weight!r}.")
        if self.batch_size < 2:
            raise SettingsError("batch_size must be at least 2 (the losses compare texts in a batch), got 1.")
        if self.patience is not None:
            _positive_int(self, "patience")
        if self.num_threads is not None:
            _positive_int(self, "num_threads")
        if self.matryoshka_dims is not None:
            dims = list(self.matryoshka_dims)
            if not dims or any(isinstance(dim, bool) or not isinstance(dim, int) or dim < 1 for dim in dims):
                raise SettingsError(f"matryoshka_dims must be positive integers, got {self.matryoshka_dims!r}.")
            self.matryoshka_dims = dims


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
        _positive_int(self, "disentangle_max_pairs", "disentangle_max_epochs")


@dataclass
class BuildSettings:
    """Everything that decides what a build produces: its inputs and the settings of each stage."""

    corpus: list[str] | None = setting(
        None,
        "Text file, one sentence per line (the table's first language); repeat it to read several files as one "
        "corpus (e.g. --corpus en.txt --corpus en-modern.txt).",
        cli="repeat",
    )
    passages: str | None = setting(
        None,
        "Text file, one passage per line (consecutive sentences of one document, e.g. made by "
        "benchmarks/experiments/registry_passages.py): the teacher also reads these, as distillation targets for "
        "long texts (--long-texts of them; 0: all), instead of runs of corpus lines.",
    )
    parallel: list[str] | None = setting(
        None,
        "Translation pairs (TSV with a header, first language first) for a cross-lingual table: LANG=FILE pairs the "
        "first language with LANG (repeat it for several files per language, e.g. --parallel de=en-de.tsv "
        "--parallel de=extra/en-de.tsv), or plain FILEs: file i pairs the first language with language i+1.",
        cli="repeat",
    )
    languages: list[str] = setting(
        help="Comma-separated languages; the first is paired with the others.", factory=lambda: ["en"], cli="comma"
    )
    extra_pairs: dict[str, str] | None = setting(
        None,
        "LANG=FILE: more translation pairs (pivot first, e.g. a dictionary) for the contrastive training only.",
        cli="pairs",
    )
    keep_sources: list[str] | None = setting(
        None,
        "Comma-separated globs of sources (e.g. news,wiki* or ddtp,mo.wesnoth-*): of a corpus or pair file with an "
        "aligned FILE-STEM.source.txt (one source name per line or row), keep only the lines whose source matches "
        "one; files without one are read whole.",
        cli="comma",
    )
    leave_out_sources: list[str] | None = setting(
        None,
        "Comma-separated globs of sources (e.g. chitchat or mo.*,manpages) whose lines are left out of every corpus "
        "or pair file with an aligned FILE-STEM.source.txt (after --keep-sources); files without one are read whole.",
        cli="comma",
    )
    training_leave_out_sources: list[str] | None = setting(
        None,
        "Comma-separated globs of sources (e.g. mo.*) whose translation pairs the contrastive training leaves out "
        "(after --keep-sources and --leave-out-sources). The extraction still reads them, so their words keep rows.",
        cli="comma",
    )
    data_license: str | None = setting(
        None, "Licence of the training text, shown in the model card (e.g. 'CC BY-SA 4.0, from ...')."
    )
    device: str | None = setting(
        None, "Device of the teacher pass and the training, e.g. cpu or cuda:0 (default: CUDA when there is a GPU)."
    )
    extraction: ExtractionSettings = setting(factory=ExtractionSettings, cli="skip")
    reduction: ReductionSettings = setting(factory=ReductionSettings, cli="skip")
    refinement: RefinementSettings = setting(factory=RefinementSettings, cli="skip")
    disentanglement: DisentangleSettings = setting(factory=DisentangleSettings, cli="skip")

    def __post_init__(self) -> None:
        languages = [language.strip() for language in self.languages if language and language.strip()]
        if not languages:
            raise SettingsError("languages must name at least one language, e.g. en.")
        self.languages = languages
        if isinstance(self.parallel, Mapping):
            self.parallel = [
                f"{language}={path}"
                for language, paths in self.parallel.items()
                for path in ([paths] if isinstance(paths, str | os.PathLike) else paths)
            ]
        if self.parallel is not None:
            self.parallel = [str(path) for path in self.parallel] or None
        if isinstance(self.corpus, str | os.PathLike):
            self.corpus = [str(self.corpus)]
        elif self.corpus is not None:
            self.corpus = [str(path) for path in self.corpus] or None
        if self.passages is not None:
            self.passages = str(self.passages)
            if self.parallel:
                raise SettingsError("passages are long texts for a one-language table; a cross-lingual build has none.")
        if self.parallel:
            self.parallel_files()  # the form and the languages checked now
        for name in ("keep_sources", "leave_out_sources", "training_leave_out_sources"):
            patterns = getattr(self, name)
            if patterns is None:
                continue
            if isinstance(patterns, str) or any(not isinstance(item, str) or not item.strip() for item in patterns):
                raise SettingsError(f"{name} must be a list of non-empty globs, got {patterns!r}.")
            setattr(self, name, [item.strip() for item in patterns] or None)
            if getattr(self, name) and not (self.parallel or self.corpus):
                raise SettingsError(f"{name} chooses lines of corpus or translation-pair files: give such files too.")
        if self.disentanglement.disentangle and not self.parallel:
            raise SettingsError(
                "disentangle separates the language of translations: it is for cross-lingual builds (give --parallel "
                "files and --languages)."
            )
        if self.training_leave_out_sources and not self.parallel:
            raise SettingsError(
                "training_leave_out_sources chooses the translation pairs a cross-lingual table trains on: give "
                "--parallel files too."
            )
        for language in self.extra_pairs or {}:
            if language not in self.languages[1:]:
                raise SettingsError(
                    f"Extra pairs for {language!r}, which is not one of the paired languages {self.languages[1:]}."
                )
        if self.extraction.second_teacher is not None:
            if self.parallel:
                raise SettingsError(
                    "second_teacher mixes two teachers' sentence similarities for a one-language table; a "
                    "cross-lingual build trains on translation pairs."
                )
            if self.extraction.long_texts or self.passages:
                raise SettingsError("second_teacher does not read long texts: leave out long_texts and passages.")
        dim = self.reduction.dim
        if self.refinement.matryoshka_dims and max(self.refinement.matryoshka_dims) > dim:
            raise SettingsError(
                f"matryoshka_dims {self.refinement.matryoshka_dims} go above the table's dim {dim}: every Matryoshka "
                "dimension must be at most --dim."
            )
        if self.extraction.pca_sample_size < dim:
            raise SettingsError(
                f"pca_sample_size {self.extraction.pca_sample_size} is below --dim {dim}: a PCA to {dim} dimensions "
                "needs at least as many sentences."
            )
        check_device(self.device)

    @property
    def crosslingual(self) -> bool:
        """Whether the table is cross-lingual (built from translation pairs)."""
        return bool(self.parallel)

    def parallel_files(self) -> dict[str, list[str]]:
        """The translation-pair files of every paired language (``languages[1:]``, in order), in the order given.

        Raises:
            SettingsError: For ``LANG=FILE`` and plain files mixed, a positional count that does not match the
                languages, a language that is not paired or has no file, or a file given twice.
        """
        entries = self.parallel or []
        paired = self.languages[1:]
        named = [language_file(entry) for entry in entries]
        if not entries:
            return {}
        if any(item is None for item in named) and any(item is not None for item in named):
            raise SettingsError(
                "--parallel: give every file as LANG=FILE (e.g. de=en-de.tsv) or every file plain (file i pairs "
                f"{self.languages[0]} with language i+1), not both forms in one build."
            )
        files: dict[str, list[str]] = {language: [] for language in paired}
        if named[0] is None:
            if len(entries) != len(paired):
                raise SettingsError(
                    f"--languages {','.join(self.languages)} needs {len(paired)} parallel file(s) pairing "
                    f"{self.languages[0]} with each other language, got {len(entries)}."
                )
            files = {language: [path] for language, path in zip(paired, entries, strict=True)}
        else:
            for language, path in (item for item in named if item is not None):
                if language not in files:
                    raise SettingsError(
                        f"--parallel {language}={path}: {language!r} is not one of the paired languages {paired} "
                        f"(--languages {','.join(self.languages)})."
                    )
                files[language].append(path)
            missing = [language for language, paths in files.items() if not paths]
            if missing:
                raise SettingsError(
                    f"--parallel names no file pairing {self.languages[0]} with {', '.join(missing)} (give "
                    f"{missing[0]}=FILE, or leave the language out of --languages)."
                )
        seen: dict[tuple[int, int] | str, str] = {}
        for path in (path for paths in files.values() for path in paths):
            key = file_key(path)  # a link (hard or symbolic) to a file given before is that file again
            if key in seen:
                raise SettingsError(f"--parallel: {path} is given twice (also as {seen[key]}).")
            seen[key] = path
        return files

    @property
    def inputs(self) -> list[str]:
        """The files the build reads (none may lie inside its output)."""
        return [
            *(self.corpus or []),
            *([self.passages] if self.passages else []),
            *(path for paths in self.parallel_files().values() for path in paths),
            *(self.extra_pairs or {}).values(),
        ]

    @classmethod
    def from_flat(cls, **values: Any) -> BuildSettings:
        """Settings from flat keyword arguments: every field of every stage by its own name (as the CLI has them)."""
        stages = {item.name: item.type for item in fields(cls) if item.metadata.get("cli") == "skip"}
        classes = {
            "extraction": ExtractionSettings,
            "reduction": ReductionSettings,
            "refinement": RefinementSettings,
            "disentanglement": DisentangleSettings,
        }
        nested: dict[str, dict[str, Any]] = {name: {} for name in stages}
        top: dict[str, Any] = {}
        owner = {item.name: stage for stage, kind in classes.items() for item in fields(kind)}
        for name, value in values.items():
            if name in owner:
                nested[owner[name]][name] = value
            elif name in {item.name for item in fields(cls)} and name not in stages:
                top[name] = value
            else:
                raise TypeError(f"Unknown build setting {name!r}.")
        return cls(**top, **{stage: classes[stage](**nested[stage]) for stage in classes})

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-able data (what a build records next to its model)."""
        return asdict(self)


_LANGUAGE_FILE = re.compile(r"([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*)=(.+)", re.DOTALL)


def language_file(entry: str) -> tuple[str, str] | None:
    """``(LANG, FILE)`` for a ``LANG=FILE`` entry of ``parallel`` (LANG a language code such as de, zh-Hant), else
    ``None`` (a plain file)."""
    match = _LANGUAGE_FILE.fullmatch(entry)
    return (match.group(1), match.group(2)) if match else None


def settings_fields() -> list[tuple[type, Any]]:
    """Every settings field the command line offers, with the class it belongs to, in declaration order."""
    items: list[tuple[type, Any]] = []
    for kind in (BuildSettings, ExtractionSettings, ReductionSettings, RefinementSettings, DisentangleSettings):
        items.extend((kind, item) for item in fields(kind) if item.metadata.get("cli") != "skip")
    return items
