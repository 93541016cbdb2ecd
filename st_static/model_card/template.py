"""The card template (ST's own, with the st-static sections spliced in) and what a rendered card records."""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
from pathlib import Path

from sentence_transformers.sentence_transformer.model_card import SentenceTransformerModelCardData

from st_static.files import write_text_atomically

logger = logging.getLogger(__name__)

SECTIONS_PATH = Path(__file__).with_name("sections.md")
MODEL_ID_PLACEHOLDER = "sentence_transformers_model_id"

_FINGERPRINT = re.compile(r"<!-- st-static card for model\.safetensors sha256=([0-9a-f]{64}) -->")
_MODEL_ID_IN_SNIPPET = re.compile(r'SentenceTransformer\("([^"]+)"\)')


def card_weights_sha256(card_text: str) -> str | None:
    """The ``model.safetensors`` sha256 an st-static card was generated for, or ``None``."""
    match = _FINGERPRINT.search(card_text)
    return match.group(1) if match else None


def card_model_ids(card_text: str) -> set[str]:
    """The repo ids the card's usage snippets load (``SentenceTransformer("...")``)."""
    return set(_MODEL_ID_IN_SNIPPET.findall(card_text))


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
    """Split ``sections.md`` into its ``{# @section NAME #}`` blocks."""
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
        write_text_atomically(path, text)
    return path
