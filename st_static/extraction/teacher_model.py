"""The teacher model: loading it (tokenizer first, Hub presence, precision) and checking it gives token vectors."""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from st_static.teachers import TeacherError, find_teacher, is_repo_id, resolve_teacher
from st_static.tensors import to_numpy

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

LoadedTeacher = TypeVar("LoadedTeacher")
"""What a teacher loader returns: its tokenizer or its model."""

# Model types some teachers need that older transformers releases lack: the first release that knows each (checked
# against the PyPI wheels: transformers 5.4.0 has no models/nomic_bert, 5.5.0 has it).
MODEL_TYPE_RELEASES: dict[str, str] = {"nomic_bert": "5.5.0"}


def load_given_or_recorded_teacher(
    teacher: str | os.PathLike[str] | None,
    recorded: str | None,
    load: Callable[[str | os.PathLike[str]], LoadedTeacher],
    use: str,
) -> LoadedTeacher:
    """``load`` of ``teacher`` (given with ``--teacher``), else of the teacher a table records; errors say which.

    Args:
        teacher: The teacher given, or ``None`` to read the recorded one.
        recorded: The table's ``metadata.teacher``.
        load: Loads a teacher by name (the tokenizer alone, or the model).
        use: The teacher the command needs, for the messages (``"the teacher it was distilled from"``).

    Raises:
        TeacherError: If no teacher is given or recorded, or it cannot be loaded (named as ``--teacher`` or as the
            recorded one).
    """
    name = teacher if teacher is not None else recorded
    if not name:
        raise TeacherError(f"The table records no teacher (metadata.teacher); give {use} (--teacher).")
    try:
        return load(name)
    except TeacherError as error:
        if teacher is not None:
            raise TeacherError(f"--teacher {teacher}: {error}") from error
        raise TeacherError(
            f"{error} That is the teacher the table records (metadata.teacher): give it with --teacher (its Hub id, "
            "alias or folder)."
        ) from error


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
    check_model_type(name_or_path, path)
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


def _first_module_type(path: str) -> str:
    """The class ``modules.json`` names first in the local folder ``path`` (``""`` when there is none)."""
    try:
        with open(os.path.join(path, "modules.json"), encoding="utf-8") as handle:
            modules = json.load(handle)
        return str(modules[0].get("type", "")) if isinstance(modules, list) and isinstance(modules[0], dict) else ""
    except (OSError, ValueError, TypeError, IndexError, RecursionError):
        return ""


def _transformer_config(path: str) -> dict[str, Any] | None:
    """The teacher transformer's ``config.json`` (local folder, or the Hugging Face cache), or ``None``."""
    from huggingface_hub import try_to_load_from_cache

    folder = "."
    try:
        if os.path.isdir(path):
            modules_file = os.path.join(path, "modules.json")
            if os.path.isfile(modules_file):
                with open(modules_file, encoding="utf-8") as handle:
                    modules = json.load(handle)
                paths = [
                    entry.get("path", "") for entry in modules if str(entry.get("type", "")).endswith("Transformer")
                ]
                folder = (paths[0] or ".") if paths else "."
            config_file: str | None = os.path.join(path, folder, "config.json")
        else:
            cached = try_to_load_from_cache(path, "config.json")
            config_file = cached if isinstance(cached, str) else None
        if config_file is None or not os.path.isfile(config_file):
            return None
        with open(config_file, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError, TypeError, AttributeError):
        return None  # loading the teacher says what is wrong with its files
    return config if isinstance(config, dict) else None


def check_model_type(name: object, path: str) -> None:
    """Refuse a teacher whose model type the installed transformers does not know, naming the release it needs.

    Without this the load ends in transformers' own traceback ("... has model type `nomic_bert` but Transformers
    does not recognize this architecture"), and only after the build has read and selected its corpus.

    Raises:
        TeacherError: If the teacher's ``config.json`` names a model type transformers lacks (and no remote code),
            or the teacher is a static model (model2vec's or sentence-transformers' ``StaticEmbedding``).
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    config = _transformer_config(path)
    model_type = config.get("model_type") if config else None
    if model_type == "model2vec" or _first_module_type(path).endswith("StaticEmbedding"):
        raise TeacherError(
            f"The teacher {name} is a static model (a table of word or token vectors), not a transformer teacher: "
            "st-static distils a Sentence Transformer with a transformer (e.g. "
            "sentence-transformers/all-MiniLM-L6-v2) into a table. To change a static model, use st-static "
            "compress, fallback or st_static.training.refine."
        )
    if not isinstance(model_type, str) or model_type in CONFIG_MAPPING_NAMES or "auto_map" in (config or {}):
        return
    release = MODEL_TYPE_RELEASES.get(model_type)
    needed = f"transformers >= {release}" if release else "a newer transformers release that knows it"
    install = f"pip install -U 'transformers>={release}'" if release else "pip install -U transformers"
    raise TeacherError(
        f"The teacher {name} is a `{model_type}` model, which the installed transformers {transformers.__version__} "
        f"does not know: it needs {needed} ({install})."
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
    path = Path(os.path.expanduser(str(name)))
    if path.is_dir():
        where = "It is a local folder, but not a Sentence Transformer one"
    elif path.exists():
        where = "It is a file, not a model folder"
    else:
        where = "It is not a local folder"
    return f"Cannot load the teacher {name}: {first_line}. {where}; {hint}."


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
        precision: ``float32``, ``bfloat16``, ``int8`` (CPU only; :func:`quantize_teacher`) or ``auto``
            (:func:`teacher_precision`): the weights' number format.
        **model_arguments: Passed to ``SentenceTransformer`` (e.g. ``backend``, ``model_kwargs``).

    Raises:
        TeacherError: If it cannot be loaded or used.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    path = resolve_teacher(name_or_path)
    precision = teacher_precision(precision, device)
    if precision == "int8" and device is not None and torch.device(device).type != "cpu":
        raise TeacherError(f"--teacher-precision int8 is a CPU format; on {device} use bfloat16 or auto.")
    if precision == "bfloat16":
        model_arguments["model_kwargs"] = {"dtype": torch.bfloat16, **model_arguments.get("model_kwargs", {})}
    if not os.path.exists(path) and is_repo_id(path):
        check_hub_teacher(name_or_path, path)
    check_model_type(name_or_path, path)
    try:
        teacher = SentenceTransformer(path, device=device, **model_arguments)
    except (OSError, ValueError) as error:
        raise TeacherError(_unavailable(name_or_path, error)) from error
    if precision == "int8":
        if teacher.device.type != "cpu":
            raise TeacherError(f"--teacher-precision int8 is a CPU format; on {teacher.device} use bfloat16 or auto.")
        quantize_teacher(teacher)
    check_teacher(teacher)
    return teacher


def quantize_teacher(teacher: SentenceTransformer) -> None:
    """Quantise the teacher's linear layers to int8 in place (weights per output channel, activations per batch).

    For CPUs without native bfloat16: on an AVX512 CPU it read 2.85x the float32 tokens per second (bfloat16 2.36x),
    with word vectors at mean cosine 0.984 to float32's (bfloat16 0.99997; ``benchmarks/teacher_pass_profile.py``).
    """
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=UserWarning)
        for module in teacher:
            quantize_dynamic(module, {torch.nn.Linear: per_channel_dynamic_qconfig}, inplace=True)


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
        return to_numpy(mapped)

    return apply
