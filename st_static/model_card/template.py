"""The card template (ST's own, with the st-static sections spliced in) and what a rendered card records."""

from __future__ import annotations

import atexit
import functools
import logging
import os
import re
import shutil
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


@functools.cache
def composed_template() -> str:
    """ST's card template with the st-static sections spliced in, composed once per process from installed files."""
    base = Path(SentenceTransformerModelCardData.__dataclass_fields__["template_path"].default)
    return compose_template(base.read_text(encoding="utf-8"), read_sections(SECTIONS_PATH.read_text(encoding="utf-8")))


_PRIVATE_FOLDERS: dict[int, Path] = {}


def _private_folder() -> Path:
    """This process's own temporary folder (``mkdtemp``: mode 0700, an unpredictable name), removed at exit."""
    folder = _PRIVATE_FOLDERS.get(os.getpid())
    if folder is None or not folder.is_dir():
        folder = Path(tempfile.mkdtemp(prefix="st-static-card-"))
        _PRIVATE_FOLDERS[os.getpid()] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def composed_template_path() -> Path:
    """A file holding :func:`composed_template`, written afresh on every call into this process's private folder.

    ``huggingface_hub.ModelCard.from_template`` (which sentence-transformers calls) reads templates from a path.
    Jinja2 templates run code, so the file never lives under a shared, predictable name: the card data rewrites it
    from the in-memory text right before each render, and a change made to it after a load renders nothing.
    """
    return write_text_atomically(_private_folder() / "model_card_template.md", composed_template())
