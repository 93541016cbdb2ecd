"""What a card says about a model, computed from its metadata: teacher, stages, settings, speed, licences."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from st_static.losses.citation import WADA_2025_BIBTEX
from st_static.teachers import LICENSE_NOTICES, describe_license, find_teacher, is_repo_id

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

COPYLEFT_NOTE = (
    "Part of this text is under copyleft licences (GPL, CC BY-SA). Whether a table distilled from it is a "
    "derivative work is not settled: check these terms before redistributing the model commercially."
)

STAGE_TITLES = {
    "extraction": "Extraction",
    "completion": "the teacher's Chinese/Japanese tokens added",
    "pca": "PCA with All-But-The-Top",
    "distillation": "Similarity distillation",
    "contrastive": "Bilingual contrastive learning",
    "ensemble": "Ensemble",
}
TRAINING_KEY_ORDER = ("loss", "steps", "batch_size", "learning_rate", "temperature", "best_validation_loss")


@dataclass(frozen=True)
class TeacherInfo:
    """What the card says about the teacher."""

    name: str | None
    repo_id: str | None
    license: str | None
    members: tuple[TeacherInfo, ...] = ()
    """An ensemble's teachers, one per member (then ``name`` joins their names)."""

    @property
    def markdown(self) -> str:
        if self.members:
            return " + ".join(member.markdown for member in self.members)
        if self.repo_id:
            return f"[{self.repo_id}](https://huggingface.co/{self.repo_id})"
        if self.name:
            return f"`{self.name}`"
        return "a Sentence Transformer (teacher not recorded)"


def describe_teacher(teacher: str | None) -> TeacherInfo:
    """Hub id and licence of a teacher given as a repo id, a registry name or a local folder, as far as known."""
    if not teacher:
        return TeacherInfo(None, None, None)
    known = find_teacher(teacher)
    repo_id = known.repo_id if known is not None else (teacher if is_repo_id(teacher) else None)
    name = repo_id or Path(teacher.rstrip("/")).name
    return TeacherInfo(name, repo_id, describe_license(teacher))


def metadata_teacher(metadata: dict[str, Any]) -> TeacherInfo:
    """The teacher a model's metadata records; for an ensemble, its members' teachers together."""
    members = (metadata.get("ensemble") or {}).get("members") or []
    if metadata.get("teacher") or not members:
        return describe_teacher(metadata.get("teacher"))
    teachers = tuple(describe_teacher(member.get("teacher")) for member in members)
    licenses = {teacher.license for teacher in teachers}
    name = " + ".join((teacher.name or "unrecorded").split("/")[-1] for teacher in teachers)
    return TeacherInfo(name, None, licenses.pop() if len(licenses) == 1 else None, teachers)


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
        "ensemble": _ensemble_phrase(metadata.get("ensemble") or {}),
        "contrastive": (
            f"The table is trained{_loss_phrase(training)} on translation pairs, with a symmetric InfoNCE loss: "
            "each sentence's translation must be its nearest neighbour among the other language's sentences."
        ),
    }
    return [
        {"title": STAGE_TITLES.get(stage, str(stage).title()), "text": texts.get(stage, "")}
        for stage in as_list(metadata.get("stages"))
    ]


def _ensemble_phrase(ensemble: dict[str, Any]) -> str:
    members = ensemble.get("members") or []
    names = ", ".join(
        f"{describe_teacher(member.get('teacher')).markdown} ({format_number(member.get('embedding_dim'))} dimensions)"
        for member in members
    )
    weights = ", ".join(format_number(weight) for weight in ensemble.get("block_weights") or [])
    text = (
        f"The tables of {len(members)} static models distilled from {names or 'other models'} are concatenated over "
        f"the union of their vocabularies (Wada et al., 2025, App. D; weights {weights or 'equal'}), so a word is "
        "still one look-up."
    )
    if ensemble.get("folded"):
        texts = format_number(ensemble["folded"].get("texts"))
        text += (
            " Each member's block is scaled by its weight over the mean norm it has on "
            f"{texts} corpus sentences, and the whole vector is normalised: the cosine is then close to the weighted "
            "average of the members' cosines, and the model is a plain table that any sentence-transformers loads."
        )
    return text


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
    if license_ in LICENSE_NOTICES:
        text = f"{LICENSE_NOTICES[license_]}\n\n{text}"
    notes = []
    # The build records several corpus files as one "a.txt, b.tsv" string.
    corpus = [part.strip() for item in as_list(metadata.get("corpus")) for part in item.split(", ") if part.strip()]
    sources = corpus + as_list(metadata.get("parallel")) + as_list(metadata.get("extra_pairs"))
    if metadata.get("data_license"):
        listed = ", ".join(f"`{display_path(path)}`" for path in sources)
        notes.append(f"{listed}: {metadata['data_license']}" if listed else str(metadata["data_license"]))
    else:
        notes.extend(f"`{display_path(path)}`: licence not recorded, check it." for path in sources)
    if any("GPL" in note or "CC BY-SA" in note for note in notes):
        notes.append(COPYLEFT_NOTE)
    return license_, text, notes
