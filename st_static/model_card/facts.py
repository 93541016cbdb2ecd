"""What a card says about a model, computed from its metadata: teacher, stages, settings, speed, licences."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from st_static.losses.citation import WADA_2025_BIBTEX
from st_static.model.metadata import (
    EnsembleMember,
    EnsembleRecord,
    ExtendRecord,
    MeaningMapRecord,
    ModelMetadata,
    PCARecord,
    SecondPassRecord,
    TrainingRecord,
)
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
    "completion": "Completion",
    "pca": "PCA with All-But-The-Top",
    "distillation": "Similarity distillation",
    "contrastive": "Bilingual contrastive learning",
    "ensemble": "Ensemble",
    "extend": "Extend",
    "disentangle": "Meaning parts (language bias removed)",
    "second pass": "Second contrastive pass",
    "soup": "Seed soup",
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
            return inline_code(self.name)
        return "a Sentence Transformer (teacher not recorded)"


def describe_teacher(teacher: str | None) -> TeacherInfo:
    """Hub id and licence of a teacher given as a repo id, a registry name or a local folder, as far as known."""
    if not teacher:
        return TeacherInfo(None, None, None)
    known = find_teacher(teacher)
    repo_id = known.repo_id if known is not None else (teacher if is_repo_id(teacher) else None)
    name = repo_id or Path(teacher.rstrip("/")).name
    return TeacherInfo(name, repo_id, describe_license(teacher))


def metadata_teacher(metadata: ModelMetadata) -> TeacherInfo:
    """The teacher a model's metadata records; for an ensemble, its members' teachers together."""
    members = (metadata.ensemble.members if metadata.ensemble else None) or []
    if metadata.teacher or not members:
        return describe_teacher(metadata.teacher)
    teachers = tuple(
        describe_teacher(member.teacher) if member.teacher else TeacherInfo(member.name, None, member.license)
        for member in members
    )
    licenses = {teacher.license for teacher in teachers}
    name = " + ".join((teacher.name or "unrecorded").split("/")[-1] for teacher in teachers)
    return TeacherInfo(name, None, licenses.pop() if len(licenses) == 1 else None, teachers)


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [str(value)]
    return [str(item) for item in value]


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def code_fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (at least three): ``text`` cannot close it."""
    return "`" * max(3, _longest_backtick_run(text) + 1)


def inline_code(text: str) -> str:
    """``text`` as a Markdown code span it cannot end early (metadata may hold backticks or HTML).

    The span's backticks outnumber any run inside (CommonMark), a space pads a text that starts or ends with a
    backtick, and line breaks become spaces (a blank line would end the paragraph and leave the rest as Markdown).
    """
    text = " ".join(text.splitlines())
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def display_path(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def data_files(metadata: ModelMetadata, *, extra_pairs: bool = True) -> list[str]:
    """Every text file the build read, once each: the corpus files (recorded as one ``"a.txt, b.tsv"`` string, which
    names the pair files too in a cross-lingual build), the pair files and (with ``extra_pairs``) the training-only
    pairs."""
    corpus = [part.strip() for item in as_list(metadata.corpus) for part in item.split(", ") if part.strip()]
    extra = as_list(metadata.extra_pairs) if extra_pairs else []
    return list(dict.fromkeys([*corpus, *as_list(metadata.parallel), *extra]))


def pair_source_notes(metadata: ModelMetadata) -> list[str]:
    """How the build chose pair rows by source (``--keep-sources``, ``--leave-out-sources``,
    ``--training-leave-out-sources``), for the card."""
    keep, leave_out = as_list(metadata.keep_sources), as_list(metadata.leave_out_sources)
    training = as_list(metadata.training_leave_out_sources)
    if not keep and not leave_out and not training:
        return []
    parts = [f"only sources {', '.join(inline_code(item) for item in keep)} kept"] if keep else []
    parts += [f"sources {', '.join(inline_code(item) for item in leave_out)} left out"] if leave_out else []
    if training:
        listed = ", ".join(inline_code(item) for item in training)
        parts.append(f"the pairs of sources {listed} read by the extraction only, not by the contrastive training")
    return [f"files with a `.source.txt`: {' and '.join(parts)}"]


def format_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:g}"


def stage_descriptions(metadata: ModelMetadata) -> list[dict[str, str]]:
    """One ``{"title", "text"}`` per finished stage recorded in the metadata."""
    training = metadata.training or TrainingRecord()
    pca = metadata.pca or PCARecord()
    sentences_per_word = metadata.sentences_per_word
    corpus = ", ".join(inline_code(display_path(path)) for path in data_files(metadata, extra_pairs=False))
    corpus = corpus or "the corpus"
    texts = {
        "extraction": (
            "Each vocabulary word's vector is the mean of the teacher's last-layer token vectors at the word's "
            f"positions in {'up to ' + format_number(sentences_per_word) if sentences_per_word else 'the'} "
            f"sentences of {corpus} that contain it (read before the teacher's pooling)."
        ),
        "completion": (
            (
                "The teacher's Chinese/Japanese tokens that the corpus missed"
                if len(as_list(metadata.languages)) > 1
                else "Frequent words of the language (wordfreq's list) that the corpus lacked"
            )
            + " are encoded alone by the teacher and mapped into the table by a linear map fitted on the table's own "
            "words."
        ),
        "pca": (
            "PCA fitted on "
            f"{'the word vectors' if pca.level == 'word' else 'sentence embeddings (means of word vectors)'}, "
            f"the first {_or(pca.removed_components, 'r')} component(s) removed (All-But-The-Top: they carry "
            f"frequency, style and language identity) and the next {_or(pca.dim, 'd')} kept; the projection is "
            "applied to every word once."
        ),
        "distillation": (
            f"The table is trained{_loss_phrase(training)} so that the student's in-batch cosine-similarity "
            "distribution (row-wise softmax at a temperature) matches the teacher's, on the teacher's sentence "
            "embeddings of the corpus."
        ),
        "ensemble": _ensemble_phrase(metadata.ensemble or EnsembleRecord()),
        "extend": _extend_phrase(metadata.extend or []),
        "disentangle": _meaning_map_phrase(metadata.meaning_map or MeaningMapRecord()),
        "second pass": _second_pass_phrase(metadata.second_pass or SecondPassRecord()),
        "soup": _soup_phrase(metadata.soup_seeds or []),
        "contrastive": (
            f"The table is trained{_loss_phrase(training)} on translation pairs, with a symmetric InfoNCE loss: "
            "each sentence's translation must be its nearest neighbour among the other language's sentences."
        ),
    }
    return [
        {"title": STAGE_TITLES.get(stage, str(stage).title()), "text": texts.get(stage, "")}
        for stage in as_list(metadata.stages)
    ]


def _or(value: Any, default: str) -> Any:
    """``value``, or ``default`` when the metadata does not record it."""
    return default if value is None else value


MEMBER_KINDS = {
    "st-static": "st-static table",
    "model2vec": "model2vec model",
    "static-embedding": "sentence-transformers StaticEmbedding",
    "wordllama": "WordLlama table",
}


def _member_phrase(member: EnsembleMember) -> str:
    """One member: its name, or its teacher for a st-static table; kind, dimensions and licence where recorded."""
    if member.kind in (None, "st-static") and member.teacher:
        label = f"a table distilled from {describe_teacher(member.teacher).markdown}"
        if member.name:
            label = f"{inline_code(member.name)} ({label})"
    else:
        label = inline_code(member.name) if member.name else "a static model"
        if member.kind:
            label += f", a {MEMBER_KINDS.get(member.kind, member.kind)}"
    details = [f"{format_number(member.embedding_dim)} dimensions"]
    if member.license:
        details.append(f"licence {member.license}")
    return f"{label} ({', '.join(details)})"


def _ensemble_phrase(ensemble: EnsembleRecord) -> str:
    members = ensemble.members or []
    names = "; ".join(_member_phrase(member) for member in members)
    weights = ", ".join(format_number(weight) for weight in ensemble.block_weights or [])
    # Ensembles recording their members' kinds were laid out over every key (issue 64); older ones over the words.
    keys = (
        "their words, subword pieces and symbols, each member's block of a key holding what that member reads for it"
        if any(member.kind for member in members)
        else "their vocabularies"
    )
    text = (
        f"The tables of {len(members)} static models ({names or 'other models'}) are concatenated over the union of "
        f"{keys} (Wada et al., 2025, App. D; weights {weights or 'equal'}), so a word is still one look-up."
    )
    if ensemble.folded:
        texts = format_number(ensemble.folded.texts)
        text += (
            " Each member's block is scaled by its weight over the mean norm it has on "
            f"{texts} corpus sentences, and the whole vector is normalised: the cosine is then close to the weighted "
            "average of the members' cosines, and the model is a plain table that any sentence-transformers loads."
        )
        differences = ensemble.folded.score_differences
        if differences:
            measured = ", ".join(f"{task} {value:+.2f}" for task, value in differences.items())
            text += f" Folded against the exact per-member normalisation (x100): {measured}."
    return text


def _extend_phrase(records: list[ExtendRecord]) -> str:
    """What ``st-static extend`` added: how many words, from which files, seen how often."""
    parts = []
    for record in records:
        files = ", ".join(inline_code(name) for name in record.files or []) or "documents"
        seen = f" (seen at least {format_number(record.min_count)} times)" if record.min_count else ""
        parts.append(f"{format_number(record.words or 0)} words of {files}{seen}")
    return (
        f"Rows were added for words the table lacked: {'; '.join(parts) or 'none recorded'}. Each is the mean of the "
        "teacher's token vectors of the word in those texts' sentences, mapped into the table by a linear map fitted "
        "on the table's own words in the same sentences; every other row is unchanged."
    )


def _meaning_map_phrase(record: MeaningMapRecord) -> str:
    """How the table came to hold meaning parts (``st-static disentangle``, ``build --disentangle``)."""
    constraints = {"intra": "intra-component", "inter": "inter-component", "both": "intra- and inter-component"}
    kind = constraints.get(record.constraints or "", "the")
    files = ", ".join(inline_code(name) for name in record.files or []) or "translation pairs"
    pairs = f"{format_number(record.pairs)} pairs of " if record.pairs else ""
    return (
        "The table holds the meaning parts of its texts, not their full embeddings: a linear map W (no bias, from the "
        f"identity) was trained with the {kind} constraints of Nonomura et al. on {pairs}{files} to split each "
        "sentence embedding e into a meaning part W e, alike across translations, and a language part e - W e, and "
        "every row r of the table became W r. A mean of rows is linear, so each text's vector is exactly the meaning "
        "part of its old vector (after normalisation); nothing changes at inference."
    )


def _second_pass_phrase(record: SecondPassRecord) -> str:
    """What the second contrastive pass trained on, how long and how fast (``build --second-pass-pairs``)."""
    files = ", ".join(inline_code(name) for name in record.files or []) or "chosen translation pairs"
    steps = f" for {format_number(record.steps)} more steps" if record.steps else ""
    rate = f" at learning rate {format_number(record.learning_rate)}" if record.learning_rate else ""
    return (
        f"The contrastive training continued on {files} alone{steps}{rate}, without early stopping, before the "
        "fallback and piece rows were fitted: translations of the pairs closest to the task are pulled together "
        "further than the first training, over every pair file, leaves them (issue 68)."
    )


def _soup_phrase(seeds: list[int]) -> str:
    """How many trainings the table averages (``build --soup-seeds``)."""
    count = f"{len(seeds)} trainings" if seeds else "several trainings"
    listed = f" (seeds {', '.join(str(seed) for seed in seeds)})" if seeds else ""
    return (
        f"The table is the row-by-row mean of {count}{listed} of the same reduced table that differ only in their "
        "seed (batch order and validation split): a model soup, which keeps what the trainings agree on and "
        "averages away what each one's batches left."
    )


def _loss_phrase(training: TrainingRecord) -> str:
    return f" with {inline_code(training.loss)}" if training.loss else ""


def training_rows(metadata: ModelMetadata) -> list[tuple[str, str]]:
    """The refinement settings recorded in the metadata's ``training`` (every key it holds), known keys first."""
    if metadata.training is None:
        return []
    training = metadata.training.to_dict()
    keys = [key for key in TRAINING_KEY_ORDER if key in training] + sorted(set(training) - set(TRAINING_KEY_ORDER))
    return [(key, inline_code(str(training[key])) if key == "loss" else format_number(training[key])) for key in keys]


def speed_facts(metadata: ModelMetadata) -> dict[str, str] | None:
    """The ``speed`` metadata formatted for the card (all its keys), or ``None`` if absent or lacking its figure."""
    speed = metadata.speed
    if speed is None or speed.sentences_per_second is None:
        return None
    facts = {key: str(value) for key, value in speed.to_dict().items()}
    facts["sentences_per_second"] = f"{speed.sentences_per_second:,.0f}"
    teacher_speed = speed.teacher_sentences_per_second
    facts["teacher_sentences_per_second"] = f"{teacher_speed:,.0f}" if teacher_speed is not None else ""
    facts["machine"] = speed.machine if speed.machine is not None else "an unrecorded machine"
    if speed.command:
        facts["command"] = inline_code(speed.command)
    return facts


STAGE_SCORES_JSON = "stage_scores.json"  # written next to a built model by st_static.pipeline.publish


def build_facts(folder: str | os.PathLike[str] | None) -> dict[str, str] | None:
    """What the build cost, from the folder's ``stage_scores.json``: total time, seconds per stage, the machine.

    ``None`` when the folder has no such record (a model saved by hand, an ensemble) or it records no seconds. The
    seconds are those the publishing run spent: a build resumed from a filled work folder records only what it redid.
    """
    path = Path(folder) / STAGE_SCORES_JSON if folder is not None else None
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else None
    except (OSError, ValueError):
        return None
    seconds = record.get("seconds") if isinstance(record, dict) else None
    if not isinstance(seconds, dict) or not seconds:
        return None
    stages = {
        ("PCA" if stage == "pca" else str(stage)): value
        for stage, value in seconds.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    if not stages:
        return None
    total = sum(stages.values())
    machine = record.get("machine")
    return {
        "total": f"{total / 60:.0f} min" if total >= 60 else f"{total:.0f} s",
        "stages": ", ".join(f"{stage} {value:,.0f} s" for stage, value in stages.items()),
        "machine": machine if isinstance(machine, str) and machine else "an unrecorded machine",
    }


def license_facts(metadata: ModelMetadata, teacher: TeacherInfo) -> tuple[str | None, str, list[str]]:
    """``(licence id, explanation, data notes)`` for the card."""
    if metadata.license:
        license_ = metadata.license
        text = f"Licence: **{license_}**, as recorded by the model's builder."
    elif teacher.license:
        license_ = teacher.license
        text = (
            f"Licence: **{license_}**, inherited from the teacher, {teacher.markdown}. The table is also derived "
            "from the text it was distilled on:"
        )
    elif teacher.members and all(member.license for member in teacher.members):
        license_ = None
        listed = "; ".join(f"{member.markdown}: **{member.license}**" for member in teacher.members)
        text = (
            f"The members' licences: {listed}. The ensemble is derived from each member and carries each licence. "
            "Its st-static tables are also derived from the text they were distilled on:"
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
    sources = data_files(metadata)
    if metadata.data_license:
        listed = ", ".join(inline_code(display_path(path)) for path in sources)
        notes.append(f"{listed}: {metadata.data_license}" if listed else metadata.data_license)
    else:
        notes.extend(f"{inline_code(display_path(path))}: licence not recorded, check it." for path in sources)
    if any("GPL" in note or "CC BY-SA" in note for note in notes):
        notes.append(COPYLEFT_NOTE)
    return license_, text, notes


def second_teacher_facts(metadata: ModelMetadata) -> dict[str, str] | None:
    """The second teacher whose similarities the distillation mixed in (``--second-teacher``), as the card says it."""
    record = metadata.second_teacher
    if record is None:
        return None
    return {
        "markdown": describe_teacher(record.teacher).markdown,
        "weight": f"{record.weight:g}" if record.weight is not None else "a share",
        "sentences": format_number(record.sentences) if record.sentences else "its",
        "mixed": "neighbour distributions" if record.mix == "distributions" else "cosines",
    }
