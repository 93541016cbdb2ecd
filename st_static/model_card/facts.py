"""What a card says about a model, computed from its metadata: teacher, stages, settings, speed, licences."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub.repocard import metadata_load

from st_static.citation import WADA_2025_BIBTEX
from st_static.teachers import teacher_repo_id

CARD_FILE_NAME = "README.md"

WADA_2025_CITATION = WADA_2025_BIBTEX
SENTENCE_TRANSFORMERS_CITATION = """
@inproceedings{reimers-2019-sentence-bert,
    title = "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing",
    month = "11",
    year = "2019",
    publisher = "Association for Computational Linguistics",
    url = "https://arxiv.org/abs/1908.10084",
}
"""

# Teachers whose Hub id and licence are known even when they are used from a local folder of the same name.
KNOWN_TEACHERS: dict[str, tuple[str, str]] = {
    "all-MiniLM-L6-v2": ("sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
    "all-mpnet-base-v2": ("sentence-transformers/all-mpnet-base-v2", "apache-2.0"),
    "multilingual-e5-small": ("intfloat/multilingual-e5-small", "mit"),
}

# Licences of the project's training files (from ../shared/data/README.md), by file name.
_PARALLEL_SOURCES = (
    "STS-B train/dev sentences with their stsb-multi-mt translations (the licences of the STS-B sources), "
    "Debian gettext catalogues (each package's licence, mostly GPL-2+ or LGPL-2.1+), Debian Reference (GPL-2+)"
)
KNOWN_DATA_LICENSES: dict[str, str] = {
    "en.txt": "WordNet 3.0 glosses and examples (WordNet 3.0 licence), the Brown Corpus (redistribution "
    "permitted), State of the Union addresses and Moby-Dick (public domain)",
    "en-60k.txt": "the first 60,000 lines of en.txt: WordNet 3.0 glosses and examples (WordNet 3.0 licence), the "
    "Brown Corpus (redistribution permitted), State of the Union addresses and Moby-Dick (public domain)",
    "en-de.tsv": _PARALLEL_SOURCES + " and the Ding German-English dictionary (GPL-2+)",
    "en-ja.tsv": _PARALLEL_SOURCES,
    "en-zh.tsv": _PARALLEL_SOURCES,
    "en-ja-jmdict.tsv": "JMdict common entries, from scripts/jmdict_pairs.py (EDRDG licence, CC BY-SA 4.0)",
}
COPYLEFT_NOTE = (
    "Part of this text is under copyleft licences (GPL, CC BY-SA). Whether a table distilled from it is a "
    "derivative work is not settled: check these terms before redistributing the model commercially."
)

LANGUAGE_NAMES = {
    "en": "English",
    "de": "German",
    "ja": "Japanese",
    "zh": "Chinese",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
    "ru": "Russian",
    "ko": "Korean",
    "ar": "Arabic",
}
SPACELESS_LANGUAGES = {"zh", "ja", "th", "lo", "km", "my"}

STAGE_TITLES = {
    "extraction": "Extraction",
    "completion": "the teacher's Chinese/Japanese tokens added",
    "pca": "PCA with All-But-The-Top",
    "distillation": "Similarity distillation",
    "contrastive": "Bilingual contrastive learning",
}
TRAINING_KEY_ORDER = ("loss", "steps", "batch_size", "learning_rate", "temperature", "best_validation_loss")


@dataclass(frozen=True)
class TeacherInfo:
    """What the card says about the teacher."""

    name: str | None
    repo_id: str | None
    license: str | None

    @property
    def markdown(self) -> str:
        if self.repo_id:
            return f"[{self.repo_id}](https://huggingface.co/{self.repo_id})"
        if self.name:
            return f"`{self.name}`"
        return "a Sentence Transformer (teacher not recorded)"


def describe_teacher(teacher: str | None) -> TeacherInfo:
    """Hub id and licence of a teacher given as a repo id or a local folder, as far as they are known."""
    if not teacher:
        return TeacherInfo(None, None, None)
    repo_id = teacher_repo_id(teacher)
    known = KNOWN_TEACHERS.get(Path(teacher.rstrip("/")).name)
    if repo_id is None and known is not None:
        repo_id = known[0]
    license_ = next((known_license for known_id, known_license in KNOWN_TEACHERS.values() if known_id == repo_id), None)
    readme = Path(teacher) / CARD_FILE_NAME
    if license_ is None and readme.is_file():
        license_ = (metadata_load(readme) or {}).get("license")
    name = repo_id or Path(teacher.rstrip("/")).name
    return TeacherInfo(name, repo_id, license_)


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [str(value)]
    return [str(item) for item in value]


def display_path(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def format_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:g}"


def stage_descriptions(metadata: dict[str, Any]) -> list[dict[str, str]]:
    """One ``{"title", "text"}`` per finished stage recorded in the metadata."""
    training = metadata.get("training") or {}
    pca = metadata.get("pca") or {}
    extraction = metadata.get("extraction") or {}
    sentences_per_word = metadata.get("sentences_per_word", extraction.get("sentences_per_word"))
    sources = as_list(metadata.get("corpus")) or as_list(metadata.get("parallel"))
    corpus = ", ".join(f"`{display_path(path)}`" for path in sources) or "the corpus"
    texts = {
        "extraction": (
            "Each vocabulary word's vector is the mean of the teacher's last-layer token vectors at the word's "
            f"positions in {'up to ' + format_number(sentences_per_word) if sentences_per_word else 'the'} "
            f"sentences of {corpus} that contain it (read before the teacher's pooling)."
        ),
        "pca": (
            "PCA fitted on "
            f"{'the word vectors' if pca.get('level') == 'word' else 'sentence embeddings (means of word vectors)'}, "
            f"the first {pca.get('removed_components', 'r')} component(s) removed (All-But-The-Top: they carry "
            f"frequency, style and language identity) and the next {pca.get('dim', 'd')} kept; the projection is "
            "applied to every word once."
        ),
        "distillation": (
            f"The table is trained{_loss_phrase(training)} so that the student's in-batch cosine-similarity "
            "distribution (row-wise softmax at a temperature) matches the teacher's, on the teacher's sentence "
            "embeddings of the corpus."
        ),
        "contrastive": (
            f"The table is trained{_loss_phrase(training)} on translation pairs, with a symmetric InfoNCE loss: "
            "each sentence's translation must be its nearest neighbour among the other language's sentences."
        ),
    }
    return [
        {"title": STAGE_TITLES.get(stage, str(stage).title()), "text": texts.get(stage, "")}
        for stage in as_list(metadata.get("stages"))
    ]


def _loss_phrase(training: dict[str, Any]) -> str:
    return f" with `{training['loss']}`" if training.get("loss") else ""


def training_rows(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """The refinement settings recorded in ``metadata["training"]``, known keys first."""
    training = metadata.get("training")
    if not isinstance(training, dict):
        return []
    keys = [key for key in TRAINING_KEY_ORDER if key in training] + sorted(set(training) - set(TRAINING_KEY_ORDER))
    return [(key, f"`{training[key]}`" if key == "loss" else format_number(training[key])) for key in keys]


def speed_facts(metadata: dict[str, Any]) -> dict[str, str] | None:
    """The ``speed`` metadata formatted for the card, or ``None`` if absent or lacking its figure."""
    speed = metadata.get("speed")
    if not isinstance(speed, dict) or not isinstance(speed.get("sentences_per_second"), int | float):
        return None
    facts = {key: str(value) for key, value in speed.items()}
    facts["sentences_per_second"] = f"{speed['sentences_per_second']:,.0f}"
    teacher_speed = speed.get("teacher_sentences_per_second")
    facts["teacher_sentences_per_second"] = f"{teacher_speed:,.0f}" if isinstance(teacher_speed, int | float) else ""
    facts.setdefault("machine", "an unrecorded machine")
    return facts


def license_facts(metadata: dict[str, Any], teacher: TeacherInfo) -> tuple[str | None, str, list[str]]:
    """``(licence id, explanation, data notes)`` for the card."""
    if metadata.get("license"):
        license_ = str(metadata["license"])
        text = f"Licence: **{license_}**, as recorded by the model's builder."
    elif teacher.license:
        license_ = teacher.license
        text = (
            f"Licence: **{license_}**, inherited from the teacher, {teacher.markdown}. The table is also derived "
            "from the text it was distilled on:"
        )
    else:
        license_ = None
        text = (
            f"The teacher's licence is not known ({teacher.markdown}): check it before use. The table is also "
            "derived from the text it was distilled on:"
        )
    notes = []
    # The build records several corpus files as one "a.txt, b.tsv" string.
    corpus = [part.strip() for item in as_list(metadata.get("corpus")) for part in item.split(", ") if part.strip()]
    sources = corpus + as_list(metadata.get("parallel")) + as_list(metadata.get("extra_pairs"))
    for path in sources:
        known = KNOWN_DATA_LICENSES.get(Path(path).name)
        notes.append(f"`{display_path(path)}`: {known if known else 'licence not recorded, check it'}.")
    if metadata.get("data_license"):
        notes.append(str(metadata["data_license"]))
    if any("GPL" in note or "CC BY-SA" in note for note in notes):
        notes.append(COPYLEFT_NOTE)
    return license_, text, notes
