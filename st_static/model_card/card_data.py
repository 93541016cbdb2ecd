"""``StaticModelCardData`` and the hooks that attach it to static models and write cards."""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub.repocard_data import eval_results_to_model_index
from sentence_transformers.base.model_card import generate_model_card
from sentence_transformers.sentence_transformer.model_card import SentenceTransformerModelCardData
from sentence_transformers.sentence_transformer.modules import StaticEmbedding

from st_static.files import file_sha256, write_text_atomically
from st_static.losses.citation import NONOMURA_2026_BIBTEX
from st_static.model.empty_text import with_empty_text_dense
from st_static.model.inference import static_module
from st_static.model.languages import has_spaceless_language, language_name
from st_static.model.model2vec_config import model2vec_incompatibility, modules_incompatibility
from st_static.model.static_word_average import WEIGHTS_FILE_NAME
from st_static.model_card.evaluation_table import (
    EVALUATION_FILE_NAME,
    TBD,
    EvaluationFileError,
    check_evaluation,
    model_index_results,
    read_evaluation,
    render_evaluation_table,
    render_task_type_table,
    teacher_results,
)
from st_static.model_card.facts import (
    CARD_FILE_NAME,
    SENTENCE_TRANSFORMERS_CITATION,
    STAGE_TITLES,
    WADA_2025_CITATION,
    as_list,
    build_facts,
    code_fence,
    data_files,
    display_path,
    format_number,
    inline_code,
    license_facts,
    metadata_teacher,
    pair_source_notes,
    second_teacher_facts,
    speed_facts,
    stage_descriptions,
    training_rows,
)
from st_static.model_card.language_summary import render_language_summary
from st_static.model_card.template import MODEL_ID_PLACEHOLDER, card_model_ids, composed_template_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


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
        default_tags = cls.__dataclass_fields__["tags"].default_factory()
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

    def get_model_specific_metadata(self) -> dict[str, Any]:
        """ST's facts of the model, its architecture as the folder holds it: with the empty text's ``Dense``, which a
        save writes and ``load_model`` drops, so the build's card and ``st-static card`` describe the same folder."""
        if self.model is None:
            return super().get_model_specific_metadata()
        with with_empty_text_dense(self.model):
            return super().get_model_specific_metadata()

    def get_default_model_name(self) -> str:
        module = self._static_module()
        teacher = metadata_teacher(module.metadata)
        source = f" distilled from {teacher.name.split('/')[-1]}" if teacher.name else ""
        languages = "-".join(as_list(module.metadata.languages))
        suffix = f", {languages}" if len(as_list(module.metadata.languages)) > 1 else ""
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
        teacher = metadata_teacher(metadata)
        languages = as_list(metadata.languages)
        license_, license_text, data_notes = license_facts(metadata, teacher)
        build_command = self.build_command or metadata.build_command
        weights = Path(self.save_dir) / WEIGHTS_FILE_NAME if self.save_dir else None
        if self.preview:
            target = metadata.vocab_size
            vocab_size = f"{format_number(target)} (target)" if target else TBD
        else:
            vocab_size = format_number(module.num_vocabulary_words)
        from st_static import __version__

        return {
            "preview": self.preview,
            "version": __version__,
            "teacher_name": teacher.name,
            "teacher_markdown": teacher.markdown,
            "teacher_dim": metadata.teacher_dim,
            "second_teacher": second_teacher_facts(metadata),
            "license": license_,
            "license_text": license_text,
            "data_license_notes": data_notes,
            "prompt": inline_code(json.dumps(metadata.prompt, ensure_ascii=False)) if metadata.prompt else None,
            "language_names": [language_name(code) for code in languages],
            "spaceless": has_spaceless_language(languages),
            "casing": TBD if self.preview else ("lowercased" if module.lowercase else "case-sensitive"),
            "vocab_size": vocab_size,
            "corpora": self._corpora(metadata),
            "stages": stage_descriptions(metadata),
            "stage_titles": [STAGE_TITLES.get(stage, stage) for stage in as_list(metadata.stages)],
            "training_rows": training_rows(metadata),
            "speed": None if self.preview else speed_facts(metadata),
            "build": None if self.preview else build_facts(self.save_dir),
            "build_command": build_command,
            "build_command_fence": code_fence(build_command or ""),
            "evaluation_error": evaluation_error,
            "weights_sha256": file_sha256(weights) if weights is not None and weights.is_file() else None,
            "fallback_characters": None if module.fallback is None else format_number(len(module.fallback_characters)),
            "piece_rows": format_number(module.num_piece_rows) if getattr(module, "num_piece_rows", 0) else None,
            "model2vec_blocker": model2vec_incompatibility(metadata, getattr(module, "column_scale", None) is not None)
            or modules_incompatibility(self.model)
            or (
                f"the model keeps the first {self.model.truncate_dim} dimensions (truncate_dim), and model2vec "
                "returns all of them"
                if self.model.truncate_dim is not None
                else None
            ),
        }

    @staticmethod
    def _corpora(metadata: Any) -> list[str]:
        """Each text file the build read, once: the corpus files (the metadata joins their names in one string, with
        the pair files in a cross-lingual build), then the pair files marked as such, then how sources were chosen."""
        parallel = as_list(metadata.parallel)
        corpus = [path for path in data_files(metadata, extra_pairs=False) if path not in parallel]
        return [
            *(inline_code(display_path(path)) for path in corpus),
            *(f"{inline_code(display_path(path))} (parallel)" for path in parallel),
            *pair_source_notes(metadata),
        ]

    # -------------------------------------------------------------------------------- rendering
    def to_dict(self) -> dict[str, Any]:
        # The template file is read right after this call: rewrite it from the in-memory text first.
        self.template_path = composed_template_path()
        module = self._static_module()
        metadata = module.metadata
        teacher = metadata_teacher(metadata)
        self._set_automatic("language", as_list(metadata.languages))
        self._set_automatic("license", license_facts(metadata, teacher)[0])
        self._set_automatic("base_model", teacher.repo_id)
        self._set_automatic("model_name", self.get_default_model_name())
        loss = metadata.training.loss if metadata.training else None
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
        data["citations"] = self._citations(loss, disentangled=metadata.meaning_map is not None)
        if evaluation is not None or evaluation_error:
            self._add_evaluation(data, evaluation, evaluation_error)
        return data

    def _citations(self, loss: str | None, disentangled: bool = False) -> dict[str, str]:
        citations = dict(self.citations) or {"Sentence Transformers": SENTENCE_TRANSFORMERS_CITATION}
        if not any("wada-etal-2025-static" in citation for citation in citations.values()):
            name = "Static Word Embeddings (Wada et al., 2025)" + (f" and {loss}" if loss else "")
            citations[name] = WADA_2025_CITATION
        if disentangled and not any("nonomura-etal-2026" in citation for citation in citations.values()):
            citations["The meaning map (Nonomura et al.)"] = NONOMURA_2026_BIBTEX
        return citations

    def _add_evaluation(self, data: dict[str, Any], evaluation: dict[str, Any] | None, error: str | None) -> None:
        if evaluation is None:
            table = f"**{EVALUATION_FILE_NAME} could not be read:** {error}"
            tasks: list[str] = []
        else:
            table = render_evaluation_table(evaluation)
            task_types = render_task_type_table(evaluation)
            if task_types:
                table += f"\n\nTask types (task files through mteb's task classes, \u00d7 100):\n\n{task_types}"
            teacher = teacher_results(evaluation)
            languages = render_language_summary(evaluation["results"], teacher)
            if languages:
                beside = ", the teacher's beside" if teacher is not None else ""
                table += (
                    "\n\nTranslation retrieval per language (accuracy \u00d7 100, mean of both directions, dev "
                    f"halves{beside}):\n\n{languages}"
                )
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
        results = model_index_results(evaluation) if evaluation is not None else []
        if results:
            index = eval_results_to_model_index(self.model_name, results)
            if data.get("model-index"):
                data["model-index"][0]["results"].extend(index[0]["results"])
            else:
                data["model-index"] = index


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
    model: SentenceTransformer,
    folder: str | os.PathLike[str],
    model_id: str | None = None,
    build_command: str | None = None,
    output: str | os.PathLike[str] | None = None,
) -> Path:
    """Regenerate ``folder/README.md`` for ``model``, the model saved in ``folder`` (e.g. ``load_model(folder)``).

    Args:
        model: The loaded static model whose files are in ``folder``.
        folder: The saved model's folder (the card describes its weights and ``evaluation.json``).
        model_id: Hub id shown in the usage snippets; defaults to the one in the current card, if any (in a current
            card that is not UTF-8 text, its other bytes are replaced first).
        build_command: The command that built the model, if the metadata lacks it.
        output: Also write the card to this file (e.g. ``hub_cards/NAME.md``).

    Returns:
        The path of the regenerated README.

    Raises:
        EvaluationFileError: If ``evaluation.json`` is malformed.
    """
    folder = Path(folder)
    readme = folder / CARD_FILE_NAME
    if model_id is None and readme.is_file():  # a card that is not UTF-8: its bad bytes replaced
        known = card_model_ids(readme.read_text(encoding="utf-8", errors="replace")) - {MODEL_ID_PLACEHOLDER}
        model_id = next(iter(known)) if len(known) == 1 else None
    if (folder / EVALUATION_FILE_NAME).is_file():
        read_evaluation(folder / EVALUATION_FILE_NAME)
    card_fields: dict[str, Any] = {"model_id": model_id}
    if build_command:
        card_fields["build_command"] = build_command
    attach_card_data(model, **card_fields)
    text = render_model_card(model, folder)
    targets = [readme] + ([Path(output)] if output is not None else [])
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(target, text)
    return readme
