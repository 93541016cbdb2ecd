"""Round trip and tokenisation fidelity of a saved static model (issue: core module).

1. Round trip: the in-memory model vs a bare ``SentenceTransformer`` (in a process that cannot import st_static),
   loaded from the folder and by repo id from an offline Hugging Face cache, on corpus lines + adversarial texts.
2. Fidelity: the ids the saved ``tokenizers`` pipeline gives every word vs a straightforward Python implementation
   of the method note's rules (split on non-letters, exact then lowercase look-up, longest known prefix along the
   teacher's sub-word pieces), with the classes of disagreement.

    python -m benchmarks.roundtrip_fidelity MODEL_DIR [--teacher T] [--corpus FILE] [--lines 20000]
"""

from __future__ import annotations

import argparse
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
from transformers import AutoTokenizer

from benchmarks.common import (
    StaticWordAverage,
    bare_encode,
    default_corpus,
    load_model,
    place_in_hf_cache,
    resolve_teacher,
    to_numpy,
)

ADVERSARIAL = [
    "",
    " ",
    "\t\n",
    "!!!",
    "😀😀",
    "hello😀world",
    "\x00\x01 control \x7f",
    "Mixed hello мир 世界 こんにちは مرحبا",
    "THE Cat; tHe cAt!",
    "tokeniser tokenisers",
    "naïve café résumé",
    "e\u0301 accent",
    "a" * 500,
    "qqqzzz xkcdq",
    "word " * 20000,
    "12,345.67 1990s",
    "don't won't",
    "\u200bzero\u200bwidth",
    "\ufeffbom",
    "\uff26\uff35\uff2c\uff2c width",
]


def reference_rows(text: str, vocabulary: dict[str, int], lowercase: bool, teacher: object) -> list[int | None]:
    """The method note's rules in plain Python: one row (or None) per word."""
    normalized = unicodedata.normalize("NFC", text)
    words, current = [], []
    for char in normalized:
        if unicodedata.category(char)[0] in "LMN":
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    rows: list[int | None] = []
    for word in words:
        rows.append(_look_up(word, vocabulary, lowercase, teacher))
    return rows


def _look_up(word: str, vocabulary: dict[str, int], lowercase: bool, teacher: object) -> int | None:
    for form in (word.lower(),) if lowercase else (word, word.lower()):
        if form in vocabulary:
            return vocabulary[form]
    pieces = teacher.tokenize(word)  # type: ignore[attr-defined]
    for end in range(len(pieces) - 1, 0, -1):
        prefix = "".join(piece.removeprefix("##").replace("\u2581", "") for piece in pieces[:end])
        for form in (prefix.lower(),) if lowercase else (prefix, prefix.lower()):
            if form in vocabulary:
                return vocabulary[form]
    return None


def pipeline_rows(module: StaticWordAverage, text: str) -> list[int | None]:
    """The saved pipeline's row (or None) per word: the first token of each word if it reads a word row."""
    encoding = module.tokenizer.encode(text, add_special_tokens=False)
    rows: dict[int, int | None] = {}
    targets = to_numpy(module.token_rows)
    for token_id, word_id in zip(encoding.ids, encoding.word_ids, strict=True):
        if word_id not in rows:
            row = int(targets[token_id])
            rows[word_id] = row if row < module.num_words else None
    return [rows[index] for index in sorted(rows)]


def classify(word: str, ours: int | None, reference: int | None, vocabulary_words: list[str], teacher: object) -> str:
    if ours is not None and reference is not None:
        return "different prefix (longest known prefix is not on a teacher piece boundary)"
    if ours is None:
        if len(word) > 100:
            return "word longer than 100 characters (dropped by the pipeline)"
        return "pipeline drops the word (a character outside the continuation set)"
    if unicodedata.normalize("NFKD", word) != word or any(ord(char) > 0x24F for char in word):
        return "teacher normalises the word (accents/width) so its pieces spell another prefix"
    return "pipeline finds a prefix off the teacher's piece boundaries"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--corpus", default=str(default_corpus()))
    parser.add_argument("--lines", type=int, default=20_000)
    arguments = parser.parse_args()

    with open(arguments.corpus, encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for _, line in zip(range(arguments.lines), handle, strict=False)]
    texts = lines + ADVERSARIAL
    model = load_model(arguments.model)
    module: StaticWordAverage = model[0]
    in_memory = model.encode(texts, batch_size=1024)

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "saved"
        model.save_pretrained(str(folder))
        from_folder = bare_encode(folder, texts).embeddings
        cache = Path(scratch) / "hub-cache"
        place_in_hf_cache(folder, "org/swe-roundtrip", cache)
        offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(Path(scratch) / "home")}
        from_cache = bare_encode("org/swe-roundtrip", texts, env=offline).embeddings
    print("## Round trip")
    print(f"texts: {len(lines)} corpus lines + {len(ADVERSARIAL)} adversarial")
    print("| loaded from | max abs difference to the in-memory model |\n|---|---|")
    print(
        f"| local folder (bare SentenceTransformer, st_static blocked) | {np.abs(from_folder - in_memory).max():.2e} |"
    )
    print(f"| offline HF cache by repo id (HF_HUB_OFFLINE=1) | {np.abs(from_cache - in_memory).max():.2e} |")

    teacher = AutoTokenizer.from_pretrained(resolve_teacher(arguments.teacher))
    vocabulary_words = module.vocabulary
    vocabulary = {word: row for row, word in enumerate(vocabulary_words)}
    total = agree = 0
    classes: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for text in texts:
        ours = pipeline_rows(module, text)
        reference = reference_rows(text, vocabulary, module.lowercase, teacher)
        if len(ours) != len(reference):
            classes["different word split"] += 1
            examples.setdefault("different word split", []).append(text[:60])
            total += max(len(ours), len(reference))
            continue
        words = [
            word
            for word, _ in module.tokenizer.pre_tokenizer.pre_tokenize_str(
                module.tokenizer.normalizer.normalize_str(text)
            )
        ]
        for word, mine, theirs in zip(words, ours, reference, strict=True):
            total += 1
            if mine == theirs:
                agree += 1
                continue
            label = classify(word, mine, theirs, vocabulary_words, teacher)
            classes[label] += 1
            shown = (
                f"{word!r}: pipeline={vocabulary_words[mine] if mine is not None else None}, "
                f"reference={vocabulary_words[theirs] if theirs is not None else None}"
            )
            if len(examples.setdefault(label, [])) < 5:
                examples[label].append(shown)
    print("\n## Tokenisation fidelity")
    print(f"words: {total}, identical rows: {agree} ({100 * agree / max(total, 1):.3f}%)")
    print("| class of disagreement | words | examples |\n|---|---|---|")
    for label, count in classes.most_common():
        print(f"| {label} | {count} | {'; '.join(examples.get(label, []))} |")


if __name__ == "__main__":
    main()
