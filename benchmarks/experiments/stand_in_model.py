"""Build a stand-in static model from a teacher's *input* word-piece embeddings (no extraction, seconds to run).

Not an st-static model of any quality: each whole-word entry of the teacher's vocabulary (no ``##`` pieces,
no special tokens) gets the teacher's input embedding row, ordered most frequent first by ``wordfreq``. It is
only meant for checking sizes and the *relative* effect of compression before real models exist.

    python -m benchmarks.experiments.stand_in_model sentence-transformers/all-MiniLM-L6-v2 OUT/minilm-input
"""

from __future__ import annotations

import argparse
from pathlib import Path

from safetensors import safe_open
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from tokenizers import Tokenizer
from wordfreq import word_frequency

from benchmarks.common import StaticWordAverage, is_spaceless_token, resolve_teacher, save_model, split_words

EMBEDDING_KEY = "embeddings.word_embeddings.weight"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("teacher", help="Teacher name or ST folder with a BERT-style model.safetensors.")
    parser.add_argument("output", type=Path)
    parser.add_argument("--vocab-size", type=int, default=None, help="Keep only the most frequent words.")
    args = parser.parse_args()

    folder = Path(resolve_teacher(args.teacher))
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        matrix = weights.get_tensor(EMBEDDING_KEY).float()
    words, rows = [], []
    for piece, index in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1]):
        if piece.startswith(("##", "[", "<")) or split_words(piece) != [piece] or piece != piece.lower():
            continue
        if is_spaceless_token(piece):  # an English stand-in: no Chinese/Japanese characters
            continue
        words.append(piece)
        rows.append(index)
    order = sorted(range(len(words)), key=lambda i: -word_frequency(words[i], "en"))
    order = order[: args.vocab_size]
    words = [words[i] for i in order]
    vectors = matrix[[rows[i] for i in order]]
    module = StaticWordAverage.from_word_vectors(
        words,
        vectors,
        teacher_tokenizer=tokenizer,
        metadata={"teacher": args.teacher, "stand_in": "teacher input word-piece embeddings", "vocab_size": len(words)},
    )
    save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), args.output)
    print(f"wrote {args.output}: {len(words)} words x {vectors.shape[1]} dimensions")


if __name__ == "__main__":
    main()
