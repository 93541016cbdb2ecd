"""Model cards of static models: sentence-transformers' own card, extended with what st-static knows.

:class:`StaticModelCardData` subclasses ``SentenceTransformerModelCardData``; its template is ST's own template
with the st-static sections of ``sections.md`` spliced in (intro, details, speed, limitations, method, licence),
so every section ST generates is kept. The card is computed from the model at save time
(``StaticWordAverage.metadata``, the table, ``evaluation.json`` in the save folder), so a re-saved model never
carries the card of an older one. st-static attaches it wherever it builds or loads a model
(:func:`attach_card_data`, called by :func:`st_static.save_model` and :func:`st_static.load_model`);
``model.save_pretrained`` and ``model.push_to_hub`` then regenerate it like any ST card.

Modules: ``card_data`` (the card data class and the hooks), ``facts`` (what the metadata says), ``template``
(ST's template plus ours; what a rendered card records), ``evaluation_table`` (``evaluation.json`` <-> table).
"""

from __future__ import annotations

from st_static.files import file_sha256
from st_static.model_card.card_data import (
    StaticModelCardData,
    attach_card_data,
    render_model_card,
    write_model_card,
)
from st_static.model_card.evaluation_table import (
    EVALUATION_FILE_NAME,
    TBD,
    EvaluationFileError,
    check_evaluation,
    evaluation_table_differences,
    parse_evaluation_table,
    read_evaluation,
    render_evaluation_table,
)
from st_static.model_card.facts import CARD_FILE_NAME, WADA_2025_CITATION, TeacherInfo, describe_teacher
from st_static.model_card.template import (
    MODEL_ID_PLACEHOLDER,
    SECTIONS_PATH,
    card_model_ids,
    card_weights_sha256,
    compose_template,
    read_sections,
)

__all__ = [
    "CARD_FILE_NAME",
    "EVALUATION_FILE_NAME",
    "MODEL_ID_PLACEHOLDER",
    "SECTIONS_PATH",
    "TBD",
    "WADA_2025_CITATION",
    "EvaluationFileError",
    "StaticModelCardData",
    "TeacherInfo",
    "attach_card_data",
    "card_model_ids",
    "card_weights_sha256",
    "check_evaluation",
    "compose_template",
    "describe_teacher",
    "evaluation_table_differences",
    "file_sha256",
    "parse_evaluation_table",
    "read_evaluation",
    "read_sections",
    "render_evaluation_table",
    "render_model_card",
    "write_model_card",
]
