"""Tiny randomly initialised BERT-style teachers with WordPiece or SentencePiece (Unigram) tokenizers, offline."""

from __future__ import annotations

from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

TINY_CORPUS = [
    "the cat sat on the mat",
    "a dog sat on the log",
    "the cat chased the dog",
    "tokenisation splits words into pieces",
    "the mat was red",
    "dogs and cats are friends",
    "a red cat",
    "the log was old and the dog was young",
    "cats sat",
    "pieces of the old mat",
    "the friends sat on a log",
    "unbelievable tokenisation",
]


SYMBOL_PIECES = [
    "?",
    "!",
    "#",
    ".",
    ",",
    "東",
    "京",
    *"\u043f\u0440\u0438\u0432\u0435\u0442",
    "😀",
]  # Cyrillic: the letters of Privet
"""Single characters of the ``symbols`` teacher beyond ASCII letters: punctuation, Han, Cyrillic, an emoji."""


def _wordpiece_tokenizer(symbols: bool = False) -> Tokenizer:
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", "a", "dog", "log", "was", "red"]
    pieces += ["old", "and", "token", "##isation", "##s", "un", "##believ", "##able", "piece", "friend", "young"]
    pieces += ["chase", "##d", "split", "word", "into", "of", "are"]
    pieces += [chr(code) for code in range(ord("a"), ord("z") + 1) if chr(code) not in pieces]
    pieces += ["##" + chr(code) for code in range(ord("a"), ord("z") + 1) if "##" + chr(code) not in pieces]
    if symbols:
        pieces += [*SYMBOL_PIECES, *("##" + piece for piece in SYMBOL_PIECES if piece.isalpha())]
    tokenizer = Tokenizer(models.WordPiece({piece: index for index, piece in enumerate(pieces)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


HAN_CHARACTERS = [chr(0x4E00 + index) for index in range(160)]
"""Single Han characters of the ``cjk`` teacher (as tokens after the Unigram pieces)."""
CJK_WORDS = ["一丁", "丂七", "万丈三", "上下", "不与", "丐丑", "专且", "丕世"]
"""Multi-character Chinese tokens of the ``cjk`` teacher."""
KANA_WORDS = ["です", "ます", "ひと"]
"""Japanese tokens of the ``cjk`` teacher."""


def _unigram_tokenizer(cjk: bool = False) -> Tokenizer:
    space = "\u2581"
    pieces = ["<pad>", "<unk>", "<s>", "</s>", space, f"{space}the", f"{space}cat", f"{space}sat", f"{space}on"]
    pieces += [f"{space}mat", f"{space}a", f"{space}dog", f"{space}log", f"{space}was", f"{space}red", "s", "ed"]
    pieces += [f"{space}token", "isation", f"{space}un", "believ", "able", f"{space}piece", f"{space}friend"]
    pieces += [f"{space}young", f"{space}old", f"{space}and", f"{space}chase", "d", f"{space}split"]
    pieces += [f"{space}word", f"{space}into", f"{space}of", f"{space}are"]
    pieces += [chr(code) for code in range(ord("a"), ord("z") + 1) if chr(code) not in pieces]
    if cjk:
        pieces += [*CJK_WORDS, *KANA_WORDS, *HAN_CHARACTERS, "\u3002", "x\u30fb"]
    vocab = [(piece, -1.0 - 0.01 * index) for index, piece in enumerate(pieces)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=1, byte_fallback=False))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 2), ("</s>", 3)]
    )
    tokenizer.decoder = decoders.Metaspace()
    return tokenizer


def make_tiny_teacher(folder: Path, kind: str = "wordpiece", hidden_size: int = 32, seed: int = 0) -> Path:
    """Save a tiny BERT teacher (2 layers) as a SentenceTransformer folder.

    ``kind``: ``"wordpiece"``, ``"unigram"``, ``"cjk"`` (Unigram with Chinese and Japanese tokens) or ``"symbols"``
    (WordPiece with the characters :data:`SYMBOL_PIECES`).
    """
    if kind in ("wordpiece", "symbols"):
        tokenizer = _wordpiece_tokenizer(symbols=kind == "symbols")
    else:
        tokenizer = _unigram_tokenizer(cjk=kind == "cjk")
    special = (
        {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
        if kind in ("wordpiece", "symbols")
        else {"unk_token": "<unk>", "pad_token": "<pad>", "cls_token": "<s>", "sep_token": "</s>"}
    )
    hf_tokenizer = PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=64, **special)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    transformer_folder = folder / "hf"
    BertModel(config).save_pretrained(transformer_folder)
    hf_tokenizer.save_pretrained(transformer_folder)
    transformer = Transformer(str(transformer_folder), max_seq_length=64)
    teacher = SentenceTransformer(
        modules=[transformer, Pooling(hidden_size, pooling_mode="mean"), Normalize()], device="cpu"
    )
    teacher.save_pretrained(str(folder / "teacher"))
    return folder / "teacher"
