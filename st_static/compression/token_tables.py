"""Static models that are not st-static tables, as ensemble members: :class:`TokenTable` (their own tokenizer and
one row per token) and its readers (:func:`read_token_table`: a model2vec folder, a ``StaticEmbedding`` folder,
``wordllama:CONFIG:DIM`` from the ``wordllama`` package's own files, a Hub repo id through the cache); the kinds of
keys an ensemble's union table has (:func:`is_word_key`, :func:`is_symbol_key`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import SafetensorError, safe_open
from tokenizers import Tokenizer

from st_static.compression.peer_packages import registry_copy, registry_folder
from st_static.errors import MissingExtraError, ModelFolderError
from st_static.model.tokenization import CONTINUATION_PREFIX, split_words

WORDLLAMA_PREFIX = "wordllama:"
METASPACE = "\u2581"
MODEL2VEC_TYPE = "model2vec"
PEER_LICENSES = {"model2vec": None, "wordllama": "mit"}
WORDLLAMA_CONFIG = re.compile(r"[A-Za-z0-9_-]+")
"""A WordLlama config name: a file name stem of the package, never a path."""


def is_word_key(key: str) -> bool:
    """Whether ``key`` can be a word of the ensemble's vocabulary (one word as the tokenizer splits it, NFKC-stable)."""
    return bool(key) and split_words(key) == [key] and unicodedata.normalize("NFKC", key) == key


def is_symbol_key(key: str) -> bool:
    """Whether ``key`` is a single symbol (punctuation or a symbol character) that may read a fallback row."""
    return len(key) == 1 and unicodedata.category(key)[0] in "PS"


@dataclass
class TokenTable:
    """A static model that is not a st-static table: its own tokenizer and one row per token.

    A text's embedding is the mean of the rows of its tokens, ``dropped_ids`` left out (model2vec drops ``[UNK]``).
    Words are read alone through the full tokenizer, as the member reads a word between spaces or symbols: a
    WordPiece tokenizer (model2vec, ``StaticEmbedding``) cuts a text at spaces and punctuation first, so it reads a
    word alone exactly as in a text; a SentencePiece-style one (WordLlama: ``▁`` before every word) reads a word after
    a space alone as in a text, and a word after a symbol (``(word``) slightly otherwise.

    Args:
        name: Where it came from (a folder, a repo id or ``wordllama:CONFIG:DIM``).
        kind: ``"model2vec"``, ``"static-embedding"`` or ``"wordllama"``.
        tokenizer: The member's own tokenizer (special tokens, padding and truncation are not used).
        token_vectors: ``(num_tokens, dim)`` float32, one row per token id.
        dropped_ids: Token ids the member leaves out of the mean.
        license: The member's licence id, when known (recorded on the card).
    """

    name: str
    kind: str
    tokenizer: Tokenizer
    token_vectors: np.ndarray
    dropped_ids: frozenset[int] = frozenset()
    license: str | None = None

    def __post_init__(self) -> None:
        self.tokenizer = Tokenizer.from_str(self.tokenizer.to_str())  # a private copy: padding, truncation off
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.token_vectors = np.ascontiguousarray(self.token_vectors, dtype=np.float32)
        if self.token_vectors.ndim != 2 or not len(self.token_vectors):
            raise ModelFolderError(f"{self.name}: the token table must be a non-empty 2-D matrix.")
        not_finite = int(np.count_nonzero(~np.isfinite(self.token_vectors)))
        if not_finite:
            raise ModelFolderError(f"{self.name}: the token table holds {not_finite} NaN or infinite value(s).")
        if self.tokenizer.get_vocab_size(with_added_tokens=True) > len(self.token_vectors):
            raise ModelFolderError(
                f"{self.name}: the tokenizer has {self.tokenizer.get_vocab_size(with_added_tokens=True)} tokens but "
                f"the table only {len(self.token_vectors)} rows."
            )
        self._vocab = self.tokenizer.get_vocab(with_added_tokens=False)
        self._model_type = json.loads(self.tokenizer.to_str())["model"]["type"]
        self._metaspace = self._model_type in ("BPE", "Unigram") and self._prepends_metaspace()

    def _prepends_metaspace(self) -> bool:
        return self.tokenizer.encode("a", add_special_tokens=False).tokens[:1] in ([METASPACE], [f"{METASPACE}a"])

    @property
    def embedding_dim(self) -> int:
        return int(self.token_vectors.shape[1])

    def _special(self) -> set[str]:
        state = json.loads(self.tokenizer.to_str())
        return {token["content"] for token in state.get("added_tokens", []) if token.get("special")}

    @property
    def words(self) -> list[str]:
        """A WordPiece member's whole-word tokens; none for a SentencePiece-style member, whose ``▁`` tokens are word
        beginnings more than words (``▁Asi``): as keys they would cut unknown words where no member does."""
        if self._metaspace:
            return []
        special = self._special()
        return [
            token
            for token, token_id in sorted(self._vocab.items(), key=lambda item: item[1])
            if token not in special
            and token_id not in self.dropped_ids
            and not token.startswith(CONTINUATION_PREFIX)
            and is_word_key(token)
        ]

    @property
    def letters(self) -> set[str]:
        """The single letters and marks the member has tokens for (unknown words made of them are cut, not dropped)."""
        cut = len(CONTINUATION_PREFIX)
        keys = (
            token[cut:] if token.startswith(CONTINUATION_PREFIX) else token.lstrip(METASPACE) for token in self._vocab
        )
        return {key for key in keys if len(key) == 1 and unicodedata.category(key)[0] in "LMN"}

    @property
    def pieces(self) -> list[str]:
        if self._model_type != "WordPiece":
            return []
        cut = len(CONTINUATION_PREFIX)
        return [
            token[cut:]
            for token, _ in sorted(self._vocab.items(), key=lambda item: item[1])
            if token.startswith(CONTINUATION_PREFIX) and is_word_key(token[cut:])
        ]

    @property
    def characters(self) -> list[str]:
        cut = len(METASPACE)
        keys = (token[cut:] if self._metaspace and token.startswith(METASPACE) else token for token in self._vocab)
        return sorted({key for key in keys if is_symbol_key(key)})

    def _sum_rows(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        rows = np.zeros((len(token_ids), self.embedding_dim), dtype=np.float32)
        for index, ids in enumerate(token_ids):
            kept = [token_id for token_id in ids if token_id not in self.dropped_ids]
            if kept:
                rows[index] = self.token_vectors[kept].sum(axis=0)
        return rows

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def word_rows(self, words: Sequence[str]) -> np.ndarray:
        return self._sum_rows(self._ids(words))

    def _continuation_ids(self, piece: str) -> list[int]:
        """The token ids of ``piece`` read as the rest of a word (after its first token)."""
        normalizer = self.tokenizer.normalizer
        if self._model_type == "WordPiece":
            text = normalizer.normalize_str(piece) if normalizer is not None else piece
            ids, start = [], 0
            while start < len(text):  # WordPiece's greedy longest match, on continuations
                for end in range(len(text), start, -1):
                    token_id = self._vocab.get(CONTINUATION_PREFIX + text[start:end])
                    if token_id is not None:
                        ids.append(token_id)
                        start = end
                        break
                else:
                    return []  # WordPiece reads the whole word as [UNK]
            return ids
        if self._metaspace:  # the word's pieces without the ▁ that starts a word
            return [token.id for token in self.tokenizer.model.tokenize(piece)]
        return self._ids([piece])[0]

    def piece_rows(self, pieces: Sequence[str]) -> np.ndarray:
        return self._sum_rows([self._continuation_ids(piece) for piece in pieces])

    def character_rows(self, characters: Sequence[str]) -> np.ndarray:
        if self._metaspace:  # a symbol mostly follows a word without a space: no ▁
            return self._sum_rows([[token.id for token in self.tokenizer.model.tokenize(c)] for c in characters])
        return self._sum_rows(self._ids(characters))

    def empty_text_row(self) -> np.ndarray:
        return np.zeros(self.embedding_dim, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        ids = self._ids(texts)
        sums = self._sum_rows(ids)
        counts = np.array([sum(token_id not in self.dropped_ids for token_id in row) for row in ids], dtype=np.float32)
        return sums / np.maximum(counts, 1.0)[:, None]


def _require_wordllama() -> object:
    try:
        import wordllama
    except ImportError as error:
        raise MissingExtraError(
            "WordLlama members need the wordllama package: pip install 'st-static[peers]'."
        ) from error
    return wordllama


def read_wordllama(spec: str) -> TokenTable:
    """A WordLlama table packaged with the ``wordllama`` library, named ``wordllama:CONFIG:DIM``.

    Raises:
        ValueError: If ``spec`` is not of that form.
        MissingExtraError: Without the ``wordllama`` package.
        ModelFolderError: If the package has no such table (WordLlama downloads other sizes; here none is fetched).
    """
    weights, tokenizer_file = wordllama_files(spec)
    embedding = _read_tensor(weights, ["embedding.weight"])
    return TokenTable(spec, "wordllama", _read_tokenizer(tokenizer_file), embedding, license="mit")


def wordllama_files(spec: str) -> tuple[Path, Path]:
    """The weights and tokenizer files of ``wordllama:CONFIG:DIM`` in the ``wordllama`` package, nothing read (the
    checks ``st-static compress`` makes before it reads any member).

    Raises:
        ValueError, MissingExtraError, ModelFolderError: As :func:`read_wordllama`.
    """
    parts = spec.split(":")
    if (
        len(parts) != 3
        or parts[0] != WORDLLAMA_PREFIX[:-1]
        or not WORDLLAMA_CONFIG.fullmatch(parts[1])
        or not (parts[2].isascii() and parts[2].isdigit())
    ):
        raise ValueError(
            f"{spec!r}: a WordLlama member is written wordllama:CONFIG:DIM, e.g. wordllama:l2_supercat:256."
        )
    wordllama = _require_wordllama()
    # The package's own files (wordllama.WordLlama.load looks for tokenizers in a folder the wheel lacks, then
    # downloads): weights/CONFIG_DIM.safetensors and tokenizers/CONFIG_tokenizer_config.json.
    package = Path(wordllama.__file__).parent
    weights = package / "weights" / wordllama.WordLlama.get_filename(parts[1], int(parts[2]))
    tokenizer_file = package / "tokenizers" / f"{parts[1]}_tokenizer_config.json"
    if not weights.is_file() or not tokenizer_file.is_file():
        shipped = sorted(path.stem for path in (package / "weights").glob("*.safetensors"))
        raise ModelFolderError(
            f"{spec}: the wordllama package holds no such table (it ships {', '.join(shipped) or 'none'}; other "
            "sizes are downloads, which st-static does not make)."
        )
    return weights, tokenizer_file


def local_folder(name: str) -> Path:
    path = Path(name)
    if path.is_dir():
        return path
    if path.exists():
        raise ModelFolderError(f"{name}: a model member must be a folder, not a file.")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name))
    except Exception as error:  # the Hub client's errors (offline, not found, bad id)
        if (copy := registry_copy(name)) is not None:
            return registry_folder(copy)
        raise ModelFolderError(f"{name}: no such folder, and the Hub repo cannot be read ({error}).") from None


def _read_json_value(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ModelFolderError(f"{path}: not a readable JSON file ({error}).") from None


def _read_json(path: Path) -> dict:
    value = _read_json_value(path)
    if not isinstance(value, dict):
        raise ModelFolderError(f"{path}: expected a JSON object.")
    return value


def _read_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, by name; a bfloat16 one (which numpy cannot hold) as float32."""
    try:
        with safe_open(str(path), framework="np") as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118 (no __iter__)
    except TypeError:  # numpy has no bfloat16: read through torch, floats as float32
        return _read_tensors_through_torch(path)
    except (OSError, ValueError, SafetensorError) as error:  # a corrupt header is a SafetensorError (an Exception)
        raise ModelFolderError(f"{path}: not a readable safetensors file ({error}).") from None


def _read_tensors_through_torch(path: Path) -> dict[str, np.ndarray]:
    import torch

    from st_static.tensors import to_numpy

    try:
        with safe_open(str(path), framework="pt") as handle:
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118 (no __iter__)
    except (OSError, ValueError, TypeError, SafetensorError) as error:
        raise ModelFolderError(f"{path}: not a readable safetensors file ({error}).") from None
    return {
        key: to_numpy(tensor, torch.float32 if tensor.is_floating_point() else None) for key, tensor in tensors.items()
    }


def _read_tensor(path: Path, keys: Sequence[str], tensors: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The first of ``keys`` that the safetensors file ``path`` holds (from ``tensors`` when already read)."""
    tensors = _read_tensors(path) if tensors is None else tensors
    for key in keys:
        if key in tensors:
            return tensors[key]
    raise ModelFolderError(f"{path}: holds none of the tensors {', '.join(keys)}.")


def _read_tokenizer(path: Path) -> Tokenizer:
    if not path.is_file():
        raise ModelFolderError(f"{path.parent}: no tokenizer.json.")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:  # the Rust side raises a bare Exception
        raise ModelFolderError(f"{path}: not a tokenizer.json ({error}).") from None


def _model2vec_table(folder: Path, name: str) -> TokenTable:
    path = folder / "model.safetensors"
    tensors = _read_tensors(path)
    embeddings = _read_tensor(path, ["embeddings", "embedding.weight"], tensors)
    weights, mapping = tensors.get("weights"), tensors.get("mapping")
    tokenizer = _read_tokenizer(folder / "tokenizer.json")
    table = np.asarray(embeddings, dtype=np.float32)
    if table.ndim != 2:
        raise ModelFolderError(f"{path}: the embeddings must be a 2-D matrix, got shape {list(table.shape)}.")
    if mapping is not None:
        if mapping.ndim != 1 or mapping.dtype.kind not in "iu":
            raise ModelFolderError(f"{path}: the mapping must be a list of row numbers.")
        outside = mapping[(mapping < 0) | (mapping >= len(table))]
        if len(outside):
            raise ModelFolderError(
                f"{path}: the mapping points at row {int(outside[0])}, but the embeddings have {len(table)} rows."
            )
        table = table[np.asarray(mapping, dtype=np.int64)]
    if weights is not None:
        if weights.shape != (len(table),):
            raise ModelFolderError(
                f"{path}: the weights have shape {list(weights.shape)}, not one value per token ({len(table)})."
            )
        table = table * np.asarray(weights, dtype=np.float32)[:, None]
    unknown = _unknown_id(tokenizer)
    dropped = frozenset() if unknown is None else frozenset({unknown})
    readme = folder / "README.md"
    license_id = _card_license(readme) if readme.is_file() else None
    return TokenTable(name, "model2vec", tokenizer, table, dropped_ids=dropped, license=license_id)


def _holds_model2vec_table(folder: Path) -> bool:
    """Whether ``folder/model.safetensors`` holds model2vec's ``embeddings`` tensor (its own layout, any version)."""
    path = folder / "model.safetensors"
    if not path.is_file():
        return False
    try:
        with safe_open(str(path), framework="np") as handle:
            return "embeddings" in handle.keys()  # noqa: SIM118 (safe_open has no __contains__)
    except (OSError, ValueError, SafetensorError):
        return False


def _unknown_id(tokenizer: Tokenizer) -> int | None:
    """model2vec's unknown token: the tokenizer model's ``unk_token``, if it has a row."""
    unknown = json.loads(tokenizer.to_str())["model"].get("unk_token")
    return tokenizer.token_to_id(unknown) if isinstance(unknown, str) else None


def _card_license(readme: Path) -> str | None:
    try:
        lines = readme.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines[:40]:
        if line.startswith("license:"):
            return line.split(":", 1)[1].strip() or None
    return None


def _static_embedding_table(folder: Path, module_path: str, name: str) -> TokenTable:
    module_folder = folder / module_path
    embeddings = _read_tensor(module_folder / "model.safetensors", ["embedding.weight", "embeddings"])
    tokenizer = _read_tokenizer(module_folder / "tokenizer.json")
    readme = folder / "README.md"
    license_id = _card_license(readme) if readme.is_file() else None
    return TokenTable(name, "static-embedding", tokenizer, np.asarray(embeddings, np.float32), license=license_id)


def is_st_static_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a st-static table (``st_static_config.json`` at the root or in the first module)."""
    from st_static.model.saved_files import CONFIG_FILE_NAME

    return (folder / CONFIG_FILE_NAME).is_file() or any(folder.glob(f"0_*/{CONFIG_FILE_NAME}"))


def read_token_table(name: str) -> TokenTable:
    """A foreign static model as a :class:`TokenTable`: ``wordllama:CONFIG:DIM``, a model2vec folder (``config.json``
    with ``model_type: model2vec``, or no ``modules.json``) or a sentence-transformers folder whose first module is a
    ``StaticEmbedding``; a Hub repo id is read through the Hugging Face cache.

    Raises:
        ModelFolderError: If the folder is none of these, or its files are unreadable.
    """
    if name.startswith(WORDLLAMA_PREFIX):
        return read_wordllama(name)
    folder = local_folder(name)
    config = folder / "config.json"
    modules = folder / "modules.json"
    if (config.is_file() and _read_json(config).get("model_type") == MODEL2VEC_TYPE) or _holds_model2vec_table(folder):
        return _model2vec_table(folder, name)
    if modules.is_file():
        entries = _read_json_value(modules)
        first = entries[0] if isinstance(entries, list) and entries and isinstance(entries[0], dict) else {}
        if str(first.get("type", "")).endswith("StaticEmbedding"):
            return _static_embedding_table(folder, str(first.get("path", "")), name)
        raise ModelFolderError(
            f"{name}: its first module is {first.get('type', 'unknown')}, not a static table; an ensemble member "
            "must be a static model (st-static, model2vec, a StaticEmbedding, or wordllama:CONFIG:DIM)."
        )
    if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
        return _model2vec_table(folder, name)
    raise ModelFolderError(
        f"{name}: not a static model folder (no st_static_config.json, model2vec config.json or StaticEmbedding "
        "modules.json)."
    )
