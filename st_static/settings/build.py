"""The settings of a whole build: its inputs (corpus, translation pairs, languages, sources) and the nested settings
of each stage; the flat form the command line and ``distill(**overrides)`` use."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from st_static.files import file_key
from st_static.settings.base import SettingsError, check_device, setting
from st_static.settings.extraction import ExtractionSettings
from st_static.settings.training import (
    DisentangleSettings,
    ReductionSettings,
    RefinementSettings,
    SecondPassSettings,
)


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
    second_pass: SecondPassSettings = setting(factory=SecondPassSettings, cli="skip")
    disentanglement: DisentangleSettings = setting(factory=DisentangleSettings, cli="skip")

    def __post_init__(self) -> None:
        self.languages = checked_languages(self.languages)
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
        if self.second_pass.second_pass_pairs:
            if not self.parallel:
                raise SettingsError(
                    "--second-pass-pairs (second_pass_pairs) continue the contrastive training of a cross-lingual "
                    "table: give --parallel files and --languages too, or leave it out."
                )
            self.second_pass_files()  # the form and the languages checked now
        if self.training_leave_out_sources and not self.parallel:
            raise SettingsError(
                "training_leave_out_sources chooses the translation pairs a cross-lingual table trains on: give "
                "--parallel files too."
            )
        for language in self.extraction.language_vocab_sizes or {}:
            if language not in self.languages:
                raise SettingsError(
                    f"language_vocab_sizes names {language!r}, which is not one of the table's languages "
                    f"(--languages {','.join(self.languages)})."
                )
        for language in self.refinement.language_weights or {}:
            if not self.parallel or language not in self.languages[1:]:
                raise SettingsError(
                    f"language_weights names {language!r}, which is not one of the paired languages "
                    f"{self.languages[1:]} of a cross-lingual build (--parallel files and --languages)."
                )
        if self.extra_pairs and not self.parallel:
            raise SettingsError(
                "extra_pairs join the contrastive training of a cross-lingual table: give --parallel files and "
                "--languages too."
            )
        for language in self.extra_pairs or {}:
            if language not in self.languages[1:]:
                raise SettingsError(
                    f"extra_pairs names {language!r}, which is not one of the paired languages {self.languages[1:]} "
                    f"(--languages {','.join(self.languages)})."
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
        if not entries:
            return {}
        for entry in entries:
            if has_empty_side(entry):
                raise SettingsError(
                    f"--parallel {entry}: give LANG=FILE (e.g. de=en-de.tsv) or a plain FILE; one side of its = is "
                    "empty."
                )
        named = [language_file(entry) for entry in entries]
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

    def second_pass_files(self) -> dict[str, list[str]]:
        """The translation-pair files of the second contrastive pass, ``{language: [files]}`` in the order given.

        Raises:
            SettingsError: For an entry that is not ``LANG=FILE``, a language that is not paired, or a file given twice.
        """
        files: dict[str, list[str]] = {}
        seen: set[tuple[int, int] | str] = set()
        for entry in self.second_pass.second_pass_pairs or []:
            named = None if has_empty_side(entry) else language_file(entry)
            if named is None:
                raise SettingsError(
                    f"--second-pass-pairs {entry}: give LANG=FILE (e.g. de=en-de.tsv), the language its pairs "
                    f"translate {self.languages[0]} into."
                )
            language, path = named
            if language not in self.languages[1:]:
                raise SettingsError(
                    f"--second-pass-pairs {entry}: {language!r} is not one of the paired languages "
                    f"{self.languages[1:]} (--languages {','.join(self.languages)})."
                )
            key = file_key(path)
            if key in seen:
                raise SettingsError(f"--second-pass-pairs: {path} is given twice.")
            seen.add(key)
            files.setdefault(language, []).append(path)
        return files

    @property
    def inputs(self) -> list[str]:
        """The files the build reads (none may lie inside its output)."""
        return [
            *(self.corpus or []),
            *([self.passages] if self.passages else []),
            *(path for paths in self.parallel_files().values() for path in paths),
            *(self.extra_pairs or {}).values(),
            *(path for paths in self.second_pass_files().values() for path in paths),
        ]

    @classmethod
    def from_flat(cls, **values: Any) -> BuildSettings:
        """Settings from flat keyword arguments: every field of every stage by its own name (as the CLI has them)."""
        stages = {item.name: item.type for item in fields(cls) if item.metadata.get("cli") == "skip"}
        classes = {
            "extraction": ExtractionSettings,
            "reduction": ReductionSettings,
            "refinement": RefinementSettings,
            "second_pass": SecondPassSettings,
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


_LANGUAGE_CODE = r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*"
_LANGUAGE_FILE = re.compile(rf"({_LANGUAGE_CODE})=(.+)", re.DOTALL)
_EMPTY_SIDE = re.compile(rf"=.*|{_LANGUAGE_CODE}=\s*", re.DOTALL)


def language_file(entry: str) -> tuple[str, str] | None:
    """``(LANG, FILE)`` for a ``LANG=FILE`` entry of ``parallel`` (LANG a language code such as de, zh-Hant), else
    ``None`` (a plain file)."""
    match = _LANGUAGE_FILE.fullmatch(entry)
    return (match.group(1), match.group(2)) if match else None


def has_empty_side(entry: str) -> bool:
    """Whether a ``LANG=FILE`` entry has nothing on one side of its ``=`` (``de=``, ``=en-de.tsv``)."""
    return _EMPTY_SIDE.fullmatch(entry) is not None


def checked_languages(languages: Any) -> list[str]:
    """``languages`` checked as a list of distinct language codes (``en``, ``zh-Hant``), stripped, blanks left out.

    Raises:
        SettingsError: For a string in place of a list, an entry that is not a language code (upper case included:
            the code lists are lower case), a code given twice, or no code.
    """
    if isinstance(languages, str) or not isinstance(languages, list | tuple):
        raise SettingsError(f"languages must be a list of language codes (e.g. ['en', 'de']), got {languages!r}.")
    codes = [language.strip() if isinstance(language, str) else language for language in languages]
    codes = [code for code in codes if code != ""]
    for code in codes:
        if not isinstance(code, str) or not re.fullmatch(_LANGUAGE_CODE, code):
            raise SettingsError(f"languages: {code!r} is not a language code (e.g. en, de, zh-Hant).")
        primary = re.split(r"[-_]", code, maxsplit=1)[0]
        if primary != primary.lower():
            lowered = primary.lower() + code[len(primary) :]
            raise SettingsError(f"languages: write {code!r} as {lowered!r} (language codes are lower case).")
    repeated = sorted({code for code in codes if codes.count(code) > 1})
    if repeated:
        raise SettingsError(f"languages names {', '.join(repeated)} more than once ({','.join(codes)}).")
    if not codes:
        raise SettingsError("languages must name at least one language, e.g. en.")
    return codes


def settings_fields() -> list[tuple[type, Any]]:
    """Every settings field the command line offers, with the class it belongs to, in declaration order."""
    items: list[tuple[type, Any]] = []
    kinds = (BuildSettings, ExtractionSettings, ReductionSettings, RefinementSettings, SecondPassSettings)
    for kind in (*kinds, DisentangleSettings):
        items.extend((kind, item) for item in fields(kind) if item.metadata.get("cli") != "skip")
    return items
