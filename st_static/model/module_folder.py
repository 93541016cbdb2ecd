"""The folder of a :class:`~st_static.model.static_word_average.StaticWordAverage`: what it writes and reads.

:class:`ModuleFolder` is the part of ``StaticWordAverage`` that saves and loads it (``tokenizer.json``,
``model.safetensors``, ``st_static_config.json`` with the first two's sha256, model2vec's ``config.json``), kept here
so that the module's own file holds what it computes. It reads the module's attributes (``tokenizer``, ``embedding``,
``metadata``, ...) and calls ``sync_token_rows``; sentence-transformers' ``StaticEmbedding`` comes after it in the
class order, so these methods replace that class's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from safetensors.torch import save_file

from st_static.files import write_file_atomically, write_text_atomically
from st_static.model.folder_checks import FILES_KEY, file_hashes
from st_static.model.model2vec_config import write_model2vec_config
from st_static.model.saved_files import (
    CONFIG_FILE_NAME,
    FORMAT_VERSION,
    HASHED_FILES,
    TOKENIZER_FILE_NAME,
    WEIGHTS_FILE_NAME,
)
from st_static.model.saved_module import read_saved_module


class ModuleFolder:
    """Saving and loading of ``StaticWordAverage`` (a base class of it, before ``StaticEmbedding``)."""

    config_file_name = CONFIG_FILE_NAME
    config_keys: ClassVar[list[str]] = ["metadata"]

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "format": "st-static",
            "format_version": FORMAT_VERSION,
            "num_words": self.num_words,
            "num_tokens": int(self.embedding.weight.shape[0]),
            "embedding_dim": self.embedding_dim,
            "lowercase": self.lowercase,
            "metadata": self.metadata.to_dict(),
        }

    @property
    def saves_column_scale(self) -> bool:
        """Whether the saved table holds int8 codes scaled per dimension by a module after it (``int8-column``)."""
        return False

    def tensors_to_save(self) -> dict[str, torch.Tensor]:
        """The tensors of ``model.safetensors``: the full token table (subclasses store it more compactly)."""
        self.sync_token_rows()
        # model2vec's key (StaticEmbedding.load reads it too): with config.json, model2vec loads the folder.
        return {"embeddings": self.embedding.weight.detach().to("cpu").contiguous()}

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        """Write ``tokenizer.json``, ``model.safetensors`` and ``st_static_config.json`` (with the first two's sha256).

        Each file is written to a temporary name and renamed into place. A ``modules.json`` already in the
        folder is removed first: ``SentenceTransformer.save`` writes it last, so a save interrupted in between
        leaves a folder that refuses to load rather than one that mixes two models.
        """
        weights = self.tensors_to_save()
        output = Path(output_path)
        output.mkdir(parents=True, exist_ok=True)
        (output / "modules.json").unlink(missing_ok=True)
        write_file_atomically(output / WEIGHTS_FILE_NAME, lambda path: save_file(weights, str(path)))
        write_file_atomically(output / TOKENIZER_FILE_NAME, lambda path: self.tokenizer.save(str(path)))
        config_text = json.dumps(
            self.get_config_dict() | {FILES_KEY: file_hashes(output, HASHED_FILES)}, indent=2, sort_keys=True
        )
        write_text_atomically(output / CONFIG_FILE_NAME, config_text)
        write_model2vec_config(output, self.embedding_dim, self.metadata, has_column_scale=self.saves_column_scale)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> Self:
        """Load a saved module, checking that its files are complete, sound and agree with each other.

        The checks (:func:`~st_static.model.saved_module.read_saved_module`, :mod:`st_static.model.folder_checks`)
        run before anything is built from the files: only the word tokenizer's structure, finite float tables of
        sane magnitude, a well-formed config, and (when the config records them) the sha256 of ``tokenizer.json``
        and ``model.safetensors`` written at save time. Weights are read from ``model.safetensors`` only, never
        from a pickle.

        Raises:
            ModelFolderError: Naming the folder and the problem: a file is missing, corrupt, changed since the
                save or not what st-static writes, or the table and vocabulary disagree.
        """
        hub_kwargs = {
            "subfolder": subfolder,
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }

        def find_file(file_name: str) -> str | None:
            return cls.load_file_path(model_name_or_path, filename=file_name, **hub_kwargs)

        saved = read_saved_module(model_name_or_path, find_file)
        module = cls(saved.tokenizer, saved.word_vectors, metadata=saved.metadata)
        module.folded_column_scale = saved.column_scale
        return module
