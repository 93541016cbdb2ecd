"""Model cards of static models: sentence-transformers' own card, extended with what st-static knows.

:class:`StaticModelCardData` subclasses ``SentenceTransformerModelCardData``; its template is ST's own template
with the st-static sections of ``model_card_sections.md`` spliced in (intro, details, speed, limitations,
method, licence), so every section ST generates is kept. The card is computed from the model at save time
(``StaticWordAverage.metadata``, the table, ``evaluation.json`` in the save folder), so a re-saved model never
carries the card of an older one. st-static attaches it wherever it builds or loads a model
(:func:`attach_card_data`, called by :func:`st_static.io.save_model` and :func:`st_static.io.load_model`);
``model.save_pretrained`` and ``model.push_to_hub`` then regenerate it like any ST card.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub.repocard import metadata_load
from huggingface_hub.repocard_data import EvalResult, eval_results_to_model_index
from sentence_transformers.base.model_card import generate_model_card
from sentence_transformers.sentence_transformer.model_card import SentenceTransformerModelCardData
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.inference import static_module
from st_static.static_word_average import WEIGHTS_FILE_NAME
from st_static.teachers import teacher_repo_id

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EVALUATION_FILE_NAME = "evaluation.json"
CARD_FILE_NAME = "README.md"
MODEL_ID_PLACEHOLDER = "sentence_transformers_model_id"
TBD = "**TBD**"
SECTIONS_PATH = Path(__file__).with_name("model_card_sections.md")

WADA_2025_CITATION = """
@inproceedings{wada-etal-2025-static,
    title = "Static Word Embeddings for Sentence Semantic Representation",
    author = "Wada, Takashi and Hirakawa, Yuki and Shimizu, Ryotaro and Kawashima, Takahiro and Saito, Yuki",
    booktitle = "Proceedings of the 2025 Conference on Empirical Methods in Natural Language Processing",
    month = nov,
    year = "2025",
    address = "Suzhou, China",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2025.emnlp-main.316/",
    doi = "10.18653/v1/2025.emnlp-main.316",
    eprint = "2506.04624",
    archivePrefix = "arXiv",
}
"""
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
    "en-de.tsv": _PARALLEL_SOURCES + " and the Ding German-English dictionary (GPL-2+)",
    "en-ja.tsv": _PARALLEL_SOURCES,
    "en-zh.tsv": _PARALLEL_SOURCES,
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
    "pca": "PCA with All-But-The-Top",
    "distillation": "Similarity distillation",
    "contrastive": "Bilingual contrastive learning",
}
TRAINING_KEY_ORDER = ("loss", "steps", "batch_size", "learning_rate", "temperature", "best_validation_loss")


class EvaluationFileError(ValueError):
    """An ``evaluation.json`` file is not valid JSON or does not follow the documented schema."""


# ---------------------------------------------------------------------------------------------- evaluation table
EVALUATION_BEGIN = "<!-- st-static evaluation table -->"
EVALUATION_END = "<!-- /st-static evaluation table -->"


def read_evaluation(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check an ``evaluation.json`` (``{"results": {task: {"metric": str, "score": float}}, ...}``).

    Raises:
        EvaluationFileError: If the file is not JSON or a result lacks its metric or numeric score.
    """
    path = Path(path)
    try:
        evaluation = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvaluationFileError(f"{path}: cannot be read as JSON ({error}).") from error
    check_evaluation(evaluation, source=str(path))
    return evaluation


def check_evaluation(evaluation: object, source: str = "evaluation") -> None:
    """Raise :class:`EvaluationFileError` unless ``evaluation`` follows the ``evaluation.json`` schema.

    A score may be ``None`` (not measured yet): preview cards show it as TBD.
    """
    results = evaluation.get("results") if isinstance(evaluation, dict) else None
    if not isinstance(results, dict):
        raise EvaluationFileError(f"{source}: expected an object with a 'results' object (task -> result).")
    for task, result in results.items():
        if not isinstance(result, dict) or not isinstance(result.get("metric"), str):
            raise EvaluationFileError(f"{source}: result {task!r} has no 'metric' string.")
        score = result.get("score")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
        ):
            raise EvaluationFileError(f"{source}: result {task!r} has score {score!r}, not a finite number.")


def format_score(score: float | None) -> str:
    """A score as the card shows it (two decimals; TBD when not measured)."""
    return TBD if score is None else f"{score:.2f}"


def evaluation_rows(evaluation: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``{task: (metric, score as shown)}`` of an evaluation, in the file's order."""
    return {
        task: (result["metric"], format_score(result.get("score"))) for task, result in evaluation["results"].items()
    }


def render_evaluation_table(evaluation: dict[str, Any]) -> str:
    """The Markdown table of an evaluation, between the markers :func:`parse_evaluation_table` reads."""
    lines = [EVALUATION_BEGIN, "| task | metric | score |", "|:-----|:-------|------:|"]
    lines += [f"| {task} | {metric} | {score} |" for task, (metric, score) in evaluation_rows(evaluation).items()]
    lines.append(EVALUATION_END)
    return "\n".join(lines)


def parse_evaluation_table(card_text: str) -> dict[str, tuple[str, str]] | None:
    """``{task: (metric, score as shown)}`` of the card's evaluation table, or ``None`` if it has none."""
    match = re.search(re.escape(EVALUATION_BEGIN) + r"\n(.*?)\n" + re.escape(EVALUATION_END), card_text, re.S)
    if match is None:
        return None
    rows: dict[str, tuple[str, str]] = {}
    for line in match.group(1).splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def evaluation_table_differences(card_text: str, evaluation: dict[str, Any] | None) -> list[str]:
    """What differs between the card's evaluation table and ``evaluation`` (empty when they agree)."""
    shown = parse_evaluation_table(card_text)
    expected = evaluation_rows(evaluation) if evaluation is not None else None
    if shown is None and expected is None:
        return []
    if shown is None:
        return [f"the card has no evaluation table, but {EVALUATION_FILE_NAME} has {len(expected)} result(s)"]
    if expected is None:
        return [f"the card shows {len(shown)} evaluation result(s), but the folder has no {EVALUATION_FILE_NAME}"]
    differences = []
    for task, (metric, score) in expected.items():
        if task not in shown:
            differences.append(f"{task}: {EVALUATION_FILE_NAME} has {metric} {score}, the card does not list it")
        elif shown[task] != (metric, score):
            differences.append(
                f"{task}: the card shows {shown[task][0]} {shown[task][1]}, {EVALUATION_FILE_NAME} has {metric} {score}"
            )
    differences += [
        f"{task}: the card shows {metric} {score}, {EVALUATION_FILE_NAME} does not have it"
        for task, (metric, score) in shown.items()
        if task not in expected
    ]
    return differences


def _evaluation_task(task: str) -> tuple[str, str]:
    if task.startswith(("sts", "sick")):
        return "Semantic Similarity", "semantic-similarity"
    if task.startswith("tatoeba"):
        return "Translation Retrieval", "translation-retrieval"
    if task.startswith(("msrp", "pair")):
        return "Pair Classification", "pair-classification"
    return "Evaluation", "evaluation"


def _model_index_results(evaluation: dict[str, Any]) -> list[EvalResult]:
    results = []
    for task, result in evaluation["results"].items():
        if result.get("score") is None:
            continue
        task_name, task_type = _evaluation_task(task)
        results.append(
            EvalResult(
                task_name=task_name,
                task_type=task_type,
                dataset_type=task,
                dataset_name=task.replace("-", " "),
                metric_name=result["metric"].replace("_", " ").title(),
                metric_type=result["metric"],
                metric_value=float(result["score"]),
            )
        )
    return results


# ---------------------------------------------------------------------------------------------- card fingerprint
_FINGERPRINT = re.compile(r"<!-- st-static card for model\.safetensors sha256=([0-9a-f]{64}) -->")
_MODEL_ID_IN_SNIPPET = re.compile(r'SentenceTransformer\("([^"]+)"\)')


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def card_weights_sha256(card_text: str) -> str | None:
    """The ``model.safetensors`` sha256 an st-static card was generated for, or ``None``."""
    match = _FINGERPRINT.search(card_text)
    return match.group(1) if match else None


def card_model_ids(card_text: str) -> set[str]:
    """The repo ids the card's usage snippets load (``SentenceTransformer("...")``)."""
    return set(_MODEL_ID_IN_SNIPPET.findall(card_text))


# ---------------------------------------------------------------------------------------------- template
# (section, how, anchor): insert "before"/"after" the anchor text, or "replace" the regex match.
_SECTION_PLACES: tuple[tuple[str, str, str | re.Pattern[str] | None], ...] = (
    ("intro", "before", "\n## Model Details\n"),
    ("details", "after", "- **Similarity Function:** {{ similarity_fn_name }}\n"),
    ("speed", "before", "{% if eval_metrics %}"),
    ("limitations", "replace", re.compile(r"<!--\n## Bias, Risks and Limitations\n.*?-->\n", re.S)),
    ("method", "after", "## Training Details\n"),
    ("license", "before", "## Citation\n"),
    ("footer", "end", None),
)
# Small rewrites of ST's wording that would be wrong for a static model.
_REWRITES = (
    ("{% if base_model %} finetuned from ", "{% if base_model %} distilled from "),
    ("- **Base model:**", "- **Base model (teacher):**"),
    (
        "- **Maximum Sequence Length:** {{ model_max_length }} tokens",
        '- **Maximum Sequence Length:** {{ model_max_length }}{{ " tokens" if model_max_length is number else "" }}',
    ),
)


def read_sections(text: str) -> dict[str, str]:
    """Split ``model_card_sections.md`` into its ``{# @section NAME #}`` blocks."""
    parts = re.split(r"^\{# @section (\w+) #\}\n", text, flags=re.M)
    return {name: body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def compose_template(base_template: str, sections: dict[str, str]) -> str:
    """Splice the st-static ``sections`` into sentence-transformers' card template.

    A section whose anchor is missing (a future ST template) is appended at the end rather than lost.
    """
    template = base_template
    for old, new in _REWRITES:
        template = template.replace(old, new)
    for name, how, anchor in _SECTION_PLACES:
        body = sections[name]
        if how == "replace" and isinstance(anchor, re.Pattern) and anchor.search(template):
            template = anchor.sub(lambda _, body=body: body, template, count=1)
        elif how in ("before", "after") and isinstance(anchor, str) and anchor in template:
            position = template.index(anchor) + (len(anchor) if how == "after" else 0)
            if how == "before" and anchor.startswith("\n"):
                position += 1
            template = template[:position] + body + template[position:]
        else:
            if how != "end":
                logger.debug("Card template anchor of section %r not found; appending the section.", name)
            template = template.rstrip("\n") + "\n\n" + body
    return template


def composed_template_path() -> Path:
    """A file holding ST's card template with the st-static sections (written once per content, in the temp dir).

    ``huggingface_hub.ModelCard.from_template`` reads templates from a path, so the composed text is stored
    under a name derived from its hash; the file is a pure function of the two installed templates.
    """
    base = Path(SentenceTransformerModelCardData.__dataclass_fields__["template_path"].default)
    text = compose_template(base.read_text(encoding="utf-8"), read_sections(SECTIONS_PATH.read_text(encoding="utf-8")))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"st-static-model-card-{digest}.md"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    return path


# ---------------------------------------------------------------------------------------------- facts
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


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [str(value)]
    return [str(item) for item in value]


def _display_path(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def _format_number(value: Any) -> str:
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
    sources = _as_list(metadata.get("corpus")) or _as_list(metadata.get("parallel"))
    corpus = ", ".join(f"`{_display_path(path)}`" for path in sources) or "the corpus"
    texts = {
        "extraction": (
            "Each vocabulary word's vector is the mean of the teacher's last-layer token vectors at the word's "
            f"positions in {'up to ' + _format_number(sentences_per_word) if sentences_per_word else 'the'} "
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
        for stage in _as_list(metadata.get("stages"))
    ]


def _loss_phrase(training: dict[str, Any]) -> str:
    return f" with `{training['loss']}`" if training.get("loss") else ""


def training_rows(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """The refinement settings recorded in ``metadata["training"]``, known keys first."""
    training = metadata.get("training")
    if not isinstance(training, dict):
        return []
    keys = [key for key in TRAINING_KEY_ORDER if key in training] + sorted(set(training) - set(TRAINING_KEY_ORDER))
    return [(key, f"`{training[key]}`" if key == "loss" else _format_number(training[key])) for key in keys]


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
    for path in _as_list(metadata.get("corpus")) + _as_list(metadata.get("parallel")):
        known = KNOWN_DATA_LICENSES.get(Path(path).name)
        notes.append(f"`{_display_path(path)}`: {known if known else 'licence not recorded, check it'}.")
    if metadata.get("data_license"):
        notes.append(str(metadata["data_license"]))
    if any("GPL" in note or "CC BY-SA" in note for note in notes):
        notes.append(COPYLEFT_NOTE)
    return license_, text, notes


# ---------------------------------------------------------------------------------------------- card data
@dataclass
class StaticModelCardData(SentenceTransformerModelCardData):
    """Model card data for st-static models: ST's card plus method, stages, evaluation, speed and limitations.

    Everything is read from the model when the card is rendered (on every save): the first module's
    ``metadata`` (keys in DEVELOPING.md), its vocabulary and dimension, and ``evaluation.json`` in the folder
    being written. Language, licence, base model (teacher) and model name follow the metadata unless set
    explicitly.

    Args:
        build_command: The ``st-static build`` command that reproduces the model; defaults to the metadata's
            ``build_command``.
        evaluation: An ``evaluation.json`` dict to show; defaults to ``evaluation.json`` in the save folder.
        preview: Card of a model not built yet: vocabulary size, evaluation scores and speed show as TBD.
        **kwargs: The fields of ``SentenceTransformerModelCardData`` (``model_id``, ``language``, ``license``,
            ``model_name``, ...).

    Example::

        from sentence_transformers import SentenceTransformer
        from st_static.model_card import StaticModelCardData

        model = SentenceTransformer(modules=[module, Normalize()], model_card_data=StaticModelCardData())
        model.save_pretrained("swe-model")  # README.md describes this table, its metadata and evaluation
    """

    build_command: str | None = None
    evaluation: dict[str, Any] | None = None
    preview: bool = False
    tags: list[str] = field(
        default_factory=lambda: [
            "sentence-transformers",
            "sentence-similarity",
            "feature-extraction",
            "dense",
            "static-embeddings",
            "st-static",
        ]
    )
    template_path: Path = field(default_factory=composed_template_path, init=False, repr=False)
    _automatic: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.evaluation is not None:
            check_evaluation(self.evaluation, source="StaticModelCardData.evaluation")

    @classmethod
    def from_card_data(cls, card_data: SentenceTransformerModelCardData | None) -> StaticModelCardData:
        """Carry an existing card data object's fields (set by the user or the trainer) over to this class."""
        if card_data is None:
            return cls()
        if isinstance(card_data, cls):
            return card_data
        own = {item.name: item for item in fields(cls)}
        skipped = {"model", "template_path", "train_datasets", "eval_datasets", "local_files_only"}
        # local_files_only=True while copying: the datasets were validated against the Hub already.
        new = cls(
            local_files_only=True,
            **{
                item.name: getattr(card_data, item.name)
                for item in fields(card_data)
                if item.init and item.name in own and item.name not in skipped
            },
        )
        default_tags = list(new.tags)
        for item in fields(card_data):
            if item.name in own and item.name not in {"model", "template_path"}:
                setattr(new, item.name, getattr(card_data, item.name))
        new.tags = list(card_data.tags or [])
        new.add_tags(default_tags)
        return new

    # -------------------------------------------------------------------------------- facts from the model
    def _static_module(self) -> Any:
        if self.model is None or not isinstance(self.model[0], StaticEmbedding):
            raise TypeError("StaticModelCardData describes static models: the first module must be a StaticEmbedding.")
        return static_module(self.model)

    def _set_automatic(self, name: str, value: Any) -> None:
        """Set a field from the metadata unless the user set it to something else."""
        current = getattr(self, name)
        if not current or current == self._automatic.get(name):
            setattr(self, name, value)
            self._automatic[name] = value

    def try_to_set_base_model(self) -> None:
        """The base model is the teacher, read from the metadata in :meth:`to_dict` (no Hub look-up)."""

    def get_default_model_name(self) -> str:
        module = self._static_module()
        teacher = describe_teacher(module.metadata.get("teacher"))
        source = f" distilled from {teacher.name.split('/')[-1]}" if teacher.name else ""
        languages = "-".join(_as_list(module.metadata.get("languages")))
        suffix = f", {languages}" if len(_as_list(module.metadata.get("languages"))) > 1 else ""
        return f"Static word embeddings{source} ({module.embedding_dim} dimensions{suffix})"

    def _evaluation(self) -> tuple[dict[str, Any] | None, str | None]:
        if self.evaluation is not None:
            return self.evaluation, None
        if self.save_dir and (path := Path(self.save_dir) / EVALUATION_FILE_NAME).is_file():
            try:
                return read_evaluation(path), None
            except EvaluationFileError as error:
                logger.warning("Model card without evaluation table: %s", error)
                return None, str(error)
        return None, None

    def _facts(self, evaluation_error: str | None) -> dict[str, Any]:
        module = self._static_module()
        metadata = module.metadata
        teacher = describe_teacher(metadata.get("teacher"))
        languages = _as_list(metadata.get("languages"))
        license_, license_text, data_notes = license_facts(metadata, teacher)
        weights = Path(self.save_dir) / WEIGHTS_FILE_NAME if self.save_dir else None
        if self.preview:
            target = metadata.get("vocab_size")
            vocab_size = f"{_format_number(target)} (target)" if target else TBD
        else:
            vocab_size = _format_number(module.num_words)
        from st_static import __version__

        return {
            "preview": self.preview,
            "version": __version__,
            "teacher_name": teacher.name,
            "teacher_markdown": teacher.markdown,
            "teacher_dim": metadata.get("teacher_dim"),
            "license": license_,
            "license_text": license_text,
            "data_license_notes": data_notes,
            "prompt": json.dumps(metadata["prompt"], ensure_ascii=False) if metadata.get("prompt") else None,
            "language_names": [LANGUAGE_NAMES.get(code, code) for code in languages],
            "spaceless": bool(SPACELESS_LANGUAGES & set(languages)),
            "casing": TBD if self.preview else ("lowercased" if module.lowercase else "case-sensitive"),
            "vocab_size": vocab_size,
            "corpora": [f"`{_display_path(path)}`" for path in _as_list(metadata.get("corpus"))]
            + [f"`{_display_path(path)}` (parallel)" for path in _as_list(metadata.get("parallel"))],
            "stages": stage_descriptions(metadata),
            "stage_titles": [STAGE_TITLES.get(stage, stage) for stage in _as_list(metadata.get("stages"))],
            "training_rows": training_rows(metadata),
            "speed": None if self.preview else speed_facts(metadata),
            "build_command": self.build_command or metadata.get("build_command"),
            "evaluation_error": evaluation_error,
            "weights_sha256": file_sha256(weights) if weights is not None and weights.is_file() else None,
        }

    # -------------------------------------------------------------------------------- rendering
    def to_dict(self) -> dict[str, Any]:
        module = self._static_module()
        metadata = module.metadata
        teacher = describe_teacher(metadata.get("teacher"))
        self._set_automatic("language", _as_list(metadata.get("languages")))
        self._set_automatic("license", license_facts(metadata, teacher)[0])
        self._set_automatic("base_model", teacher.repo_id)
        self._set_automatic("model_name", self.get_default_model_name())
        loss = (metadata.get("training") or {}).get("loss")
        if loss:
            self.add_tags(f"loss:{loss}")
        evaluation, evaluation_error = self._evaluation()

        data = super().to_dict()
        facts = self._facts(evaluation_error)
        data["st"] = facts
        data["model_max_length"] = "no limit (a bag of words)"
        if self.preview:
            model_string = re.sub(r"num_words=\d+", "num_words=TBD", data.get("model_string", ""))
            data["model_string"] = re.sub(r"lowercase=(True|False)", "lowercase=TBD", model_string)
        data["citations"] = self._citations(loss)
        if evaluation is not None or evaluation_error:
            self._add_evaluation(data, evaluation, evaluation_error)
        return data

    def _citations(self, loss: str | None) -> dict[str, str]:
        citations = dict(self.citations) or {"Sentence Transformers": SENTENCE_TRANSFORMERS_CITATION}
        if not any("wada-etal-2025-static" in citation for citation in citations.values()):
            name = "Static Word Embeddings (Wada et al., 2025)" + (f" and {loss}" if loss else "")
            citations[name] = WADA_2025_CITATION
        return citations

    def _add_evaluation(self, data: dict[str, Any], evaluation: dict[str, Any] | None, error: str | None) -> None:
        if evaluation is None:
            table = f"**{EVALUATION_FILE_NAME} could not be read:** {error}"
            tasks: list[str] = []
        else:
            table = render_evaluation_table(evaluation)
            tasks = list(evaluation["results"])
            versions = evaluation.get("versions")
            if isinstance(versions, dict) and versions:
                listed = ", ".join(f"{name} {version}" for name, version in versions.items())
                table = f"Scores \u00d7 100. Versions: {listed}.\n\n{table}"
            else:
                table = f"Scores \u00d7 100.\n\n{table}"
        data["eval_metrics"] = [
            *(data.get("eval_metrics") or []),
            {
                "class_name": "st-static evaluate",
                "description": f"st-static evaluation ({EVALUATION_FILE_NAME})",
                "dataset_name": tasks,
                "config_code": "",
                "table": table,
            },
        ]
        results = _model_index_results(evaluation) if evaluation is not None else []
        if results:
            index = eval_results_to_model_index(self.model_name, results)
            if data.get("model-index"):
                data["model-index"][0]["results"].extend(index[0]["results"])
            else:
                data["model-index"] = index


# ---------------------------------------------------------------------------------------------- hooks
def attach_card_data(model: SentenceTransformer, **card_fields: Any) -> StaticModelCardData:
    """Give a static model the st-static card data (keeping any fields already set), so saves regenerate it.

    Also forgets a README read when the model was loaded: sentence-transformers would otherwise copy that old
    card into every later save, even after the table changed.

    Args:
        model: A ``SentenceTransformer`` whose first module is a static embedding.
        **card_fields: Fields to set on the card data (``model_id``, ``build_command``, ``license``, ...).

    Returns:
        The card data now attached to ``model``.
    """
    card_data = StaticModelCardData.from_card_data(model.model_card_data)
    for name, value in card_fields.items():
        setattr(card_data, name, value)
    model.model_card_data = card_data
    card_data.register_model(model)
    model._model_card_text = None
    return card_data


def render_model_card(model: SentenceTransformer, folder: str | os.PathLike[str] | None = None) -> str:
    """The card text of ``model``, as saved into ``folder`` (whose ``evaluation.json`` and weights it describes)."""
    card_data = attach_card_data(model)
    card_data.save_dir = str(folder) if folder is not None else None
    return generate_model_card(model)


def write_model_card(
    folder: str | os.PathLike[str],
    model_id: str | None = None,
    build_command: str | None = None,
    output: str | os.PathLike[str] | None = None,
) -> Path:
    """Regenerate ``folder/README.md`` from the saved model, its metadata and its ``evaluation.json``.

    Args:
        folder: A saved static model.
        model_id: Hub id shown in the usage snippets; defaults to the one in the current card, if any.
        build_command: The command that built the model, if the metadata lacks it.
        output: Also write the card to this file (e.g. ``hub_cards/NAME.md``).

    Returns:
        The path of the regenerated README.

    Raises:
        ModelFolderError: If the folder is not a valid static model.
        EvaluationFileError: If ``evaluation.json`` is malformed.
    """
    from st_static.io import load_model

    folder = Path(folder)
    readme = folder / CARD_FILE_NAME
    if model_id is None and readme.is_file():
        known = card_model_ids(readme.read_text(encoding="utf-8")) - {MODEL_ID_PLACEHOLDER}
        model_id = next(iter(known)) if len(known) == 1 else None
    if (folder / EVALUATION_FILE_NAME).is_file():
        read_evaluation(folder / EVALUATION_FILE_NAME)
    model = load_model(folder)
    card_fields: dict[str, Any] = {"model_id": model_id}
    if build_command:
        card_fields["build_command"] = build_command
    attach_card_data(model, **card_fields)
    text = render_model_card(model, folder)
    targets = [readme] + ([Path(output)] if output is not None else [])
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
    return readme
