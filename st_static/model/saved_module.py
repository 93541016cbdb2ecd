"""A saved ``StaticWordAverage`` read back: its three files read, checked against each other, ready to build from."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch
from tokenizers import Tokenizer

from st_static.errors import ModelFolderError
from st_static.model.folder_checks import changed_files, table_problem
from st_static.model.metadata import ModelMetadata
from st_static.model.saved_files import (
    CONFIG_FILE_NAME,
    TOKENIZER_FILE_NAME,
    WEIGHTS_FILE_NAME,
    read_config,
    read_table,
    read_tokenizer,
    saved_by_sentence_transformers,
)
from st_static.model.tokenization import token_targets

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SavedModule:
    """What a saved module's files hold, checked: everything ``StaticWordAverage`` is built from.

    Attributes:
        tokenizer: The word tokenizer of ``tokenizer.json``.
        word_vectors: The word rows of the table (float32), ``column_scale`` already folded in.
        metadata: The metadata of ``st_static_config.json``; ``None`` when the folder has no config.
        column_scale: The per-dimension scale of an ``int8-column`` table (float32), else ``None``.
    """

    tokenizer: Tokenizer
    word_vectors: torch.Tensor
    metadata: ModelMetadata | None
    column_scale: torch.Tensor | None


def read_saved_module(name: str, find_file: Callable[[str], str | None]) -> SavedModule:
    """Read and check a saved module's files, each with :mod:`.saved_files`, then against each other.

    The tokenizer is read first, then the config, then the table; the table must have one row per token and agree
    with the config's counts, and (when the config records them) the files' sha256 must be those of the save.

    Args:
        name: The folder or Hub id, for messages.
        find_file: The local path of a file of the module given its name, ``None`` when it has none.

    Raises:
        ModelFolderError: Naming the folder and the problem: a file is missing, corrupt, changed since the
            save or not what st-static writes, or the table and vocabulary disagree.
    """
    tokenizer_path = find_file(TOKENIZER_FILE_NAME)
    if tokenizer_path is None:
        raise ModelFolderError(f"{name}: {TOKENIZER_FILE_NAME} is missing.")
    tokenizer = read_tokenizer(name, tokenizer_path)
    try:
        targets, num_words = token_targets(tokenizer)
    except ValueError as error:
        raise ModelFolderError(f"{name}: {error}") from error

    config_path = find_file(CONFIG_FILE_NAME)
    config = {} if config_path is None else read_config(name, config_path)

    weights_path = find_file(WEIGHTS_FILE_NAME)
    if weights_path is None:
        raise ModelFolderError(
            f"{name}: {WEIGHTS_FILE_NAME} is missing (st-static never opens pickled weights such as "
            "pytorch_model.bin); re-save the model with st_static.save_model."
        )
    table, column_scale = read_table(name, weights_path)
    if table.ndim != 2 or table.shape[0] != len(targets):
        raise ModelFolderError(
            f"{name}: the table has shape {tuple(table.shape)} but {TOKENIZER_FILE_NAME} has "
            f"{len(targets)} tokens; the tokenizer and the weights come from different models."
        )
    for key, actual in (("num_words", num_words), ("num_tokens", len(targets)), ("embedding_dim", table.shape[1])):
        if key in config and config[key] != actual:
            raise ModelFolderError(f"{name}: {CONFIG_FILE_NAME} says {key}={config[key]} but the files give {actual}.")
    if column_scale is not None and tuple(column_scale.shape) != (table.shape[1],):
        raise ModelFolderError(
            f"{name}: column_scale has shape {tuple(column_scale.shape)}, expected ({table.shape[1]},)."
        )
    word_vectors = table[:num_words].float()
    if column_scale is not None:
        word_vectors = word_vectors * column_scale.float()
        problem = table_problem(word_vectors, "the table times column_scale")
        if problem is not None:
            raise ModelFolderError(f"{name}: {WEIGHTS_FILE_NAME}: {problem}.")
    changed = changed_files(config, {TOKENIZER_FILE_NAME: tokenizer_path, WEIGHTS_FILE_NAME: weights_path})
    if changed == [WEIGHTS_FILE_NAME] and saved_by_sentence_transformers(weights_path):
        # sentence-transformers' own StaticEmbedding wrote the table (a bare SentenceTransformer(folder),
        # fine-tuned and saved in place): same tokenizer, new weights, the one layout st-static never writes.
        logger.warning(
            "%s: %s was re-saved by sentence-transformers (a fine-tuned bare SentenceTransformer); loading "
            "its word rows. Save it with st_static.save_model to record its hashes and model2vec's config.",
            name,
            WEIGHTS_FILE_NAME,
        )
        changed = []
    if changed:
        raise ModelFolderError(
            f"{name}: {' and '.join(changed)} {'has' if len(changed) == 1 else 'have'} changed since the model "
            f"was saved (sha256 differs from the one in {CONFIG_FILE_NAME}); restore the original, or re-save "
            "the model with st_static.save_model if the change was intended."
        )
    column_scale = None if column_scale is None else column_scale.float()
    return SavedModule(tokenizer, word_vectors, config.get("metadata"), column_scale)
