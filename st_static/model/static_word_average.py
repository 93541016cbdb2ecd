"""``StaticWordAverage``: the sentence-transformers input module of a static word embedding model."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers.sentence_transformer.modules import StaticEmbedding
from tokenizers import Tokenizer
from torch import nn
from transformers import PreTrainedTokenizerFast

from st_static.errors import ModelFolderError as ModelFolderError  # re-export: callers import it from here
from st_static.model.half_precision import after_cast, float32_means, keep_float32_rows
from st_static.model.metadata import ModelMetadata
from st_static.model.module_folder import ModuleFolder
from st_static.model.row_sums import SMALL_TEXT_ROWS, known_counts, sum_rows, text_vector
from st_static.model.saved_files import CONFIG_FILE_NAME as CONFIG_FILE_NAME  # re-export, as the two below
from st_static.model.saved_files import HASHED_FILES as HASHED_FILES
from st_static.model.saved_files import WEIGHTS_FILE_NAME as WEIGHTS_FILE_NAME
from st_static.model.text_forms import UNKNOWN_TOKEN
from st_static.model.tokenization import (
    DROPPED,
    FallbackLayout,
    add_words,
    build_word_tokenizer,
    fallback_characters_of,
    fallback_layout,
    is_lowercase_tokenizer,
    piece_rows_of,
    pieces_of,
    remove_fallback_layout,
    token_targets,
)
from st_static.model.word_rows import WordRows
from st_static.model.word_rows import check_texts as check_texts  # re-export: callers import it from here
from st_static.tensors import to_numpy

NO_TRUNCATION = 2**31 - 1
"""What :attr:`StaticWordAverage.max_seq_length` says: a finite number for "texts are never cut"."""


class StaticWordAverage(ModuleFolder, StaticEmbedding):
    """A word -> vector table; a text's embedding is the mean of its words' vectors.

    The word rules (punctuation dropped, exact then lowercase look-up, longest-known-prefix fallback,
    space-less scripts segmented into vocabulary tokens) live in the Rust tokenizer built by
    :func:`st_static.model.tokenization.build_word_tokenizer`. Follow the module with
    ``sentence_transformers.base.modules.Normalize`` to get unit vectors. Without fallback rows a text without a
    known word gives the zero vector; with them (:func:`st_static.add_fallback_rows`) every text reads the tiny
    empty-text row and the tiny rows of its unknown characters, so every text has a direction and a text with a
    known word keeps its own (see :mod:`st_static.model.tokenization`). Training never moves the fallback rows.

    The module *is* a sentence-transformers ``StaticEmbedding`` and saves exactly that class's files
    (``tokenizer.json``, ``model.safetensors`` with one row per token id), plus ``st_static_config.json`` and
    model2vec's ``config.json`` (:mod:`st_static.model.model2vec_config`: the folder also loads in model2vec).
    It is recorded in ``modules.json`` under ``StaticEmbedding``'s name, so a saved model loads with a bare
    ``SentenceTransformer(path_or_repo_id)`` — no ``trust_remote_code`` and no st-static needed — and encodes
    identically. :meth:`load` (or :func:`st_static.load_model`) gives the richer class back, with checks. Saving and
    loading (:meth:`save`, :meth:`load`, the config) live in :class:`~st_static.model.module_folder.ModuleFolder`.

    Args:
        tokenizer: A word tokenizer from :func:`~st_static.model.tokenization.build_word_tokenizer`.
        word_vectors: The table, one row per vocabulary word, shape ``(num_words, dim)``.
        metadata: What the model records about itself (teacher, stages, corpus, ...), saved with it: a
            :class:`~st_static.model.metadata.ModelMetadata`, or its JSON object as a dict (parsed and checked).
            The module keeps a copy, in :attr:`metadata`.

    Example::

        from sentence_transformers import SentenceTransformer
        from sentence_transformers.base.modules import Normalize
        from st_static import StaticWordAverage

        module = StaticWordAverage.from_word_vectors(["hello", "world"], vectors)
        model = SentenceTransformer(modules=[module, Normalize()])
        model.save_pretrained("swe-model")  # loads anywhere with SentenceTransformer("swe-model")
    """

    def __init__(
        self,
        tokenizer: Tokenizer | PreTrainedTokenizerFast,
        word_vectors: np.ndarray | torch.Tensor,
        metadata: ModelMetadata | Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(tokenizer, PreTrainedTokenizerFast):
            tokenizer = tokenizer._tokenizer
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}.")
        vocab = tokenizer.get_vocab(with_added_tokens=False)  # read once: a copy of ~10^5 keys each time
        targets, num_words = token_targets(tokenizer, vocab)
        word_vectors = torch.as_tensor(np.asarray(word_vectors) if not torch.is_tensor(word_vectors) else word_vectors)
        if word_vectors.ndim != 2:
            raise ValueError(
                f"word_vectors must be a 2-D (num_words, dim) matrix, got shape {tuple(word_vectors.shape)}."
            )
        if word_vectors.shape[0] != num_words:
            raise ValueError(
                f"The vocabulary has {num_words} words but the table has {word_vectors.shape[0]} rows; "
                "they must match one to one."
            )
        if word_vectors.shape[1] < 1:
            raise ValueError("word_vectors must have at least one column.")
        if not torch.is_floating_point(word_vectors):
            raise TypeError(f"word_vectors must be floating point, got {word_vectors.dtype}.")
        word_vectors = word_vectors.detach().to(torch.float32)
        if not torch.isfinite(word_vectors).all():
            raise ValueError("word_vectors contains NaN or infinite values.")

        token_rows = torch.from_numpy(np.where(targets == DROPPED, num_words, targets))
        table = torch.zeros(len(targets), word_vectors.shape[1], dtype=torch.float32)
        kept = token_rows < num_words
        table[kept] = word_vectors[token_rows[kept]]
        super().__init__(tokenizer, embedding_weights=table)
        # The [UNK] row (index num_words) stands for every dropped token: zero, excluded from the mean and
        # never trained. Case variants and space-less continuation forms read their word's row.
        self.embedding = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="mean", padding_idx=num_words)
        self.register_buffer("token_rows", token_rows, persistent=False)
        self.num_words = num_words
        self.fallback: FallbackLayout | None = fallback_layout(tokenizer, vocab)
        """Where the fallback rows are (the empty-text row, then one per fallback character), or ``None``."""
        self.piece_rows: range = piece_rows_of(tokenizer, vocab)
        """The rows of the subword pieces unknown words read after their prefix (empty without them)."""
        self.lowercase = is_lowercase_tokenizer(tokenizer)
        self.metadata = metadata
        self._vocabulary: list[str] | None = None
        # Set by ``load`` when the saved table held int8 codes plus a ``column_scale`` (st_static.compression's
        # int8-column format): the scale is folded into this table, and the saved pipeline repeats it in the
        # ``Dense`` module that follows, which ``st_static.load_model`` then drops.
        self.folded_column_scale: torch.Tensor | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_word_vectors(
        cls,
        words: Sequence[str],
        word_vectors: np.ndarray | torch.Tensor,
        teacher_tokenizer: Tokenizer | PreTrainedTokenizerFast | str | None = None,
        lowercase: bool | None = None,
        metadata: ModelMetadata | Mapping[str, Any] | None = None,
    ) -> StaticWordAverage:
        """Build the module from a vocabulary and its table.

        Args:
            words: Vocabulary words, one per row of ``word_vectors``.
            word_vectors: Matrix of shape ``(len(words), dim)``, numpy or torch.
            teacher_tokenizer: The teacher's tokenizer (object or ``tokenizer.json`` path), whose characters
                are accepted inside unknown words for the prefix fallback.
            lowercase: Lowercase inputs before the look-up; defaults to whether all words are lowercase.
            metadata: What the model records about itself (a ``ModelMetadata`` or its JSON object), saved with it.

        Returns:
            The module.
        """
        if isinstance(teacher_tokenizer, str | os.PathLike):
            if not Path(teacher_tokenizer).is_file():
                raise FileNotFoundError(f"teacher_tokenizer {teacher_tokenizer}: no such tokenizer.json file.")
            try:
                teacher_tokenizer = Tokenizer.from_file(str(teacher_tokenizer))
            except Exception as error:  # the Rust side raises a bare Exception
                raise ValueError(f"teacher_tokenizer {teacher_tokenizer}: not a tokenizer.json ({error}).") from None
        elif isinstance(teacher_tokenizer, PreTrainedTokenizerFast):
            teacher_tokenizer = teacher_tokenizer._tokenizer
        tokenizer = build_word_tokenizer(words, teacher_tokenizer=teacher_tokenizer, lowercase=lowercase)
        return cls(tokenizer, word_vectors, metadata=metadata)

    def without_fallback(self) -> StaticWordAverage:
        """A new module with this one's words and without fallback rows (``self`` when it has none)."""
        if self.fallback is None:
            return self
        metadata = self.metadata.copy()
        metadata.fallback = None
        rows = self.word_vectors.detach()[: self.fallback.sentinel_row].clone()  # the words and the pieces
        return StaticWordAverage(remove_fallback_layout(self.tokenizer), rows, metadata=metadata)

    def with_words(
        self,
        words: Sequence[str],
        rows: np.ndarray | torch.Tensor,
        metadata: ModelMetadata | Mapping[str, Any] | None = None,
    ) -> StaticWordAverage:
        """A new module with rows for ``words`` after this one's words, before its piece and fallback rows.

        Every row this module has keeps its values bit for bit (the piece and fallback rows move up by
        ``len(words)``), and every known word reads the row it read (:func:`~st_static.model.tokenization.add_words`).

        Args:
            words: The new words, in row order: words the table lacks, in its normalised form
                (:func:`~st_static.model.tokenization.addable_words`).
            rows: Their vectors, ``(len(words), embedding_dim)``.
            metadata: The new module's metadata (default: a copy of this one's).

        Raises:
            ValueError: If a word cannot be added, or ``rows`` does not have one row of this width per word.
        """
        rows = torch.as_tensor(np.asarray(rows) if not torch.is_tensor(rows) else rows).detach().to("cpu")
        if rows.shape != (len(words), self.embedding_dim):
            raise ValueError(
                f"Expected one {self.embedding_dim}-wide row per new word, {len(words)} in all; got shape "
                f"{tuple(rows.shape)}."
            )
        table = self.word_vectors.detach().to("cpu", torch.float32)
        split = self.num_vocabulary_words
        extended = torch.cat([table[:split], rows.to(torch.float32), table[split:]])
        chosen = self.metadata if metadata is None else metadata
        return StaticWordAverage(add_words(self.tokenizer, words), extended, metadata=chosen)

    @classmethod
    def from_static_embedding(
        cls, module: StaticEmbedding, metadata: ModelMetadata | Mapping[str, Any] | None = None
    ) -> StaticWordAverage:
        """Recover a ``StaticWordAverage`` from the ``StaticEmbedding`` a bare ``SentenceTransformer`` loaded."""
        if isinstance(module, StaticWordAverage):
            return module
        num_words = module.tokenizer.model.token_to_id(UNKNOWN_TOKEN)  # the layout is checked by the constructor
        if num_words is None:
            raise ValueError(f"Not a st-static word tokenizer: it has no {UNKNOWN_TOKEN} token.")
        weight = module.embedding.weight.detach()
        return cls(module.tokenizer, weight[:num_words].clone(), metadata=metadata)

    # ------------------------------------------------------------------ properties
    @property
    def max_seq_length(self) -> int:
        """A finite stand-in for "no limit": the module reads texts of any length whole.

        sentence-transformers' ``StaticEmbedding`` says ``math.inf`` and has no setter; clients that need a number
        (LlamaIndex's ``max_length``) or set one get it here. Setting it records the value and truncates nothing.
        """
        return self.__dict__.get("_max_seq_length", NO_TRUNCATION)

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self.__dict__["_max_seq_length"] = value

    @property
    def metadata(self) -> ModelMetadata:
        """What the model records about itself; read and set its fields as attributes (``metadata.teacher``).

        Assigning a ``ModelMetadata`` stores a copy; assigning a dict (the JSON object of ``st_static_config.json``)
        parses it, raising ``ModelFolderError`` for a known key of the wrong type; ``None`` empties it.
        """
        return self._metadata

    @metadata.setter
    def metadata(self, value: ModelMetadata | Mapping[str, Any] | None) -> None:
        self._metadata = ModelMetadata.from_dict(value, source="the metadata given to StaticWordAverage")

    @property
    def vocabulary(self) -> list[str]:
        """The vocabulary words, in row order (the rows ``[0, num_vocabulary_words)``; fallback rows follow them)."""
        if self._vocabulary is None:
            words = [""] * self.num_vocabulary_words
            for token, token_id in self.tokenizer.get_vocab(with_added_tokens=False).items():
                if token_id < self.num_vocabulary_words:
                    words[token_id] = token
            self._vocabulary = words
        return self._vocabulary

    @property
    def num_fallback_rows(self) -> int:
        """The fallback rows at the end of the table (the empty-text row and the characters'), 0 without them."""
        return 0 if self.fallback is None else self.fallback.num_rows

    @property
    def num_piece_rows(self) -> int:
        """The subword pieces' rows, right after the words (0 without them)."""
        return len(self.piece_rows)

    @property
    def pieces(self) -> list[str]:
        """The subword pieces (without ``##``) in row order; none without piece rows."""
        return pieces_of(self.tokenizer)

    @property
    def fallback_start(self) -> int:
        """The first fallback row: the rows before it are the words and the pieces (``num_words`` without fallback)."""
        return self.num_words - self.num_fallback_rows

    @property
    def num_vocabulary_words(self) -> int:
        """The vocabulary words: the table's rows before the piece and fallback rows."""
        return self.num_words - self.num_fallback_rows - self.num_piece_rows

    @property
    def fallback_characters(self) -> list[str]:
        """The characters with a fallback row, in row order (after the empty-text row); none without fallback rows."""
        return fallback_characters_of(self.tokenizer)

    @property
    def word_vectors(self) -> torch.Tensor:
        """The table, one row per vocabulary word, then the fallback rows (a view of the trainable weight)."""
        return self.embedding.weight[: self.num_words]

    # ------------------------------------------------------------------ inference
    @property
    def word_rows(self) -> WordRows:
        """Texts -> rows of this table (:class:`~st_static.model.word_rows.WordRows`), made on first use."""
        reader = self.__dict__.get("_word_rows")
        if reader is None:
            reader = WordRows(self.tokenizer, to_numpy(self.token_rows), self.num_words)
            self._word_rows = reader
        return reader

    def token_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Tokenise ``texts`` into table rows (see :meth:`st_static.model.word_rows.WordRows.rows`).

        Args:
            texts: The texts (str only). Lone surrogates are read as U+FFFD; long texts are tokenised in pieces.

        Returns:
            ``(rows, offsets)``: flat int64 row ids (dropped tokens point at the zero ``[UNK]`` row) and the
            start of each text in ``rows``.
        """
        return self.word_rows.rows(texts)

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs: Any) -> dict[str, torch.Tensor]:
        """Turn texts into the ``input_ids``/``offsets`` features of the embedding bag."""
        texts = check_texts(inputs)
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}: {prompt!r:.80}.")
        if prompt:
            texts = self._prepend_prompt(texts, prompt)
        rows, offsets = self.token_ids(texts)
        return {"input_ids": torch.from_numpy(rows), "offsets": torch.from_numpy(offsets)}

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and copy without the inference caches (rebuilt on first use)."""
        state = dict(self.__dict__)
        state.pop("_numpy_table", None)
        state.pop("_word_rows", None)
        return state

    def numpy_table(self) -> np.ndarray | None:
        """A numpy view of the token table (no copy; it follows in-place updates), or ``None`` off the CPU."""
        weight = self._modules["embedding"]._parameters["weight"]  # what self.embedding.weight reads, without its hops
        cached = self.__dict__.get("_numpy_table")
        if cached is not None and cached[0] is weight and cached[1] == weight.data_ptr():
            return cached[2]
        if weight.device.type != "cpu" or weight.dtype != torch.float32:
            return None
        table = to_numpy(weight)
        self._numpy_table = (weight, weight.data_ptr(), table)
        return table

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:
        """Add ``sentence_embedding``: the mean of each text's word vectors (zero for a text without one).

        Without autograd (``model.encode`` runs under ``torch.inference_mode``) the mean is taken in numpy for
        one text and by a single-threaded ``embedding_bag`` for a batch (:mod:`st_static.model.row_sums`); training
        runs the ``EmbeddingBag`` as before.
        """
        input_ids, offsets = features["input_ids"], features["offsets"]
        if torch.is_grad_enabled() and self.num_vocabulary_words < self.num_words:  # training reads the words only
            not_words = (input_ids >= self.num_vocabulary_words) & (input_ids < self.num_words)
            features["input_ids"] = input_ids = input_ids.masked_fill(not_words, self.num_words)
        table = None if torch.is_grad_enabled() or input_ids.device.type != "cpu" else self.numpy_table()
        weight = self.embedding.weight
        if table is None and weight.dtype in (torch.float16, torch.bfloat16) and not torch.is_grad_enabled():
            # a .half() or bfloat16 model: the means in float32, over float32 fallback rows (model/half_precision.py)
            kept = self.__dict__.get("_float32_fallback_rows")
            features["sentence_embedding"] = float32_means(input_ids, offsets, weight, kept, self.num_words)
            return features
        if table is None:
            return super().forward(features, **kwargs)
        rows, starts = to_numpy(input_ids), to_numpy(offsets)
        if len(starts) == 1 and len(rows) <= SMALL_TEXT_ROWS:
            means = text_vector(table, rows, self.num_words, normalize=False)[None, :]
        else:
            means = sum_rows(self.embedding.weight.detach(), rows, starts, self.num_words)
            means /= np.maximum(known_counts(rows, starts, self.num_words), 1.0)[:, None]
        features["sentence_embedding"] = torch.from_numpy(means)
        return features

    def _apply(self, fn: Any, recurse: bool = True) -> StaticWordAverage:
        """Move or cast the module (``.to``, ``.half()``, ...), keeping float32 copies of the fallback rows while the
        table is in 16 bits, which a 16-bit forward pass reads and a cast back to float32 puts back (float16 rounds
        them to a few bits or to zero: :mod:`st_static.model.half_precision`)."""
        embedding = self._modules.get("embedding")  # (none yet while the module is constructed)
        if embedding is not None and self.__dict__.get("fallback") is not None:
            kept = keep_float32_rows(embedding.weight, self.token_rows, self.fallback_start, self.num_words)
            self._float32_fallback_rows = kept or self.__dict__.get("_float32_fallback_rows")
        super()._apply(fn, recurse)
        if "_float32_fallback_rows" in self.__dict__:
            self._float32_fallback_rows = after_cast(self.embedding.weight, self._float32_fallback_rows)
        return self

    def sync_token_rows(self) -> None:
        """Copy each word's row into the rows of its case variants and continuation forms.

        Training updates word rows only (inputs are mapped to them); this makes the full token table, which
        a bare ``StaticEmbedding`` reads, agree again. Runs on ``eval()`` and before saving.
        """
        with torch.no_grad():
            weight = self.embedding.weight
            extra = torch.arange(self.num_words, weight.shape[0], device=weight.device)
            weight[extra] = weight[self.token_rows[extra].to(weight.device)]
            weight[self.num_words] = 0.0

    def _get_name(self) -> str:
        return "StaticWordAverage"

    def __repr__(self) -> str:
        pieces = f", piece_rows={self.num_piece_rows}" if self.num_piece_rows else ""
        fallback = f", fallback_rows={self.num_fallback_rows}" if self.fallback is not None else ""
        return (
            f"StaticWordAverage(num_words={self.num_words}, embedding_dim={self.embedding_dim}, "
            f"lowercase={self.lowercase}{pieces}{fallback})"
        )

    def train(self, mode: bool = True) -> StaticWordAverage:
        if not mode and self.training:  # only when leaving training: encode() calls eval() on every call
            self.sync_token_rows()
        return super().train(mode)


# sentence-transformers records ``type(module).__module__`` and ``__name__`` in ``modules.json`` and, since
# v6, imports only classes from its own namespace without ``trust_remote_code``. StaticWordAverage writes
# exactly StaticEmbedding's files, so it is recorded as StaticEmbedding: every sentence-transformers install
# loads the folder, with or without st-static.
StaticWordAverage.__module__ = StaticEmbedding.__module__
StaticWordAverage.__name__ = StaticEmbedding.__name__
