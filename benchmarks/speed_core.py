"""Speed of the core encoding paths of one static model, against its ceiling and its alternatives.

    python benchmarks/speed_core.py MODEL_DIR [--corpus ../shared/data/corpus/en.txt] [--teacher-sentences 2048]

Sentences/s on the first 20,000 corpus lines, batch 1024, best of 3 after a warm-up, for:
1. our model through ``SentenceTransformer.encode``;
2. ``st_static.encode`` (the fast path);
3. the raw ``tokenizers`` ``Tokenizer.encode_batch`` of the same texts with our model's tokenizer (the ceiling
   of any path that tokenises with it), and ``encode_batch_fast`` (no offsets, what the fast path calls);
4. sentence-transformers' own ``StaticEmbedding`` with the same vocabulary size and dimension: random vectors over
   a BERT-style WordLevel tokenizer of our words (lowercase, split on whitespace and punctuation), through
   ``SentenceTransformer.encode``;
5. the teacher (default all-MiniLM-L6-v2) through ``SentenceTransformer.encode``, on fewer sentences.
The machine may be shared: numbers are noisy, compare ratios rather than absolute values.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.base.modules import Normalize  # noqa: E402
from sentence_transformers.sentence_transformer.modules import StaticEmbedding  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402

import st_static  # noqa: E402
from st_static.model.inference import static_module  # noqa: E402
from st_static.teachers import DEFAULT_TEACHER, resolve_teacher  # noqa: E402


def best_rate(encode: Callable[[list[str]], object], texts: list[str], batch_size: int, repeats: int) -> float:
    """Sentences/s of ``encode(texts)``, best of ``repeats`` after one warm-up batch."""
    encode(texts[:batch_size])
    timings = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        encode(texts)
        timings.append(time.perf_counter() - start)
    return len(texts) / min(timings)


def batched(function: Callable[[list[str]], object], batch_size: int) -> Callable[[list[str]], None]:
    def run(texts: list[str]) -> None:
        for start in range(0, len(texts), batch_size):
            function(texts[start : start + batch_size])

    return run


def wordlevel_static_embedding(words: list[str], dim: int, seed: int = 0) -> SentenceTransformer:
    """ST's ``StaticEmbedding`` with random vectors over a BERT-style WordLevel tokenizer of ``words``."""
    vocab = {word: index for index, word in enumerate(words)}
    vocab["[UNK]"] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    weights = np.random.default_rng(seed).standard_normal((len(vocab), dim)).astype(np.float32)
    return SentenceTransformer(
        modules=[StaticEmbedding(tokenizer, embedding_weights=weights), Normalize()], device="cpu"
    )


def default_corpus() -> Path:
    for candidate in (Path.cwd() / ".." / "shared" / "data", REPO.parent / "shared" / "data"):
        if (candidate / "corpus" / "en.txt").is_file():
            return (candidate / "corpus" / "en.txt").resolve()
    return Path("../shared/data/corpus/en.txt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a static model folder (st-static)")
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--teacher", default=DEFAULT_TEACHER)
    parser.add_argument("--teacher-sentences", type=int, default=2048)
    args = parser.parse_args()
    if not os.path.isdir(args.model):
        raise SystemExit(f"error: {args.model}: no such model folder.")
    if not args.corpus.is_file():
        raise SystemExit(f"error: {args.corpus}: no such corpus file; pass --corpus.")
    with args.corpus.open(encoding="utf-8") as handle:
        texts = [line.strip() for _, line in zip(range(args.sentences), handle, strict=False)]
    batch_size, repeats = args.batch_size, args.repeats

    model = SentenceTransformer(args.model, device="cpu")
    module = static_module(model)
    tokenizer = module.tokenizer
    np.testing.assert_allclose(st_static.encode(model, texts[:2000]), model.encode(texts[:2000]), atol=1e-5)

    def st_encode(target: SentenceTransformer) -> Callable[[list[str]], object]:
        return lambda batch: target.encode(batch, batch_size=batch_size, show_progress_bar=False)

    rates: dict[str, float] = {}
    print(f"measuring on {len(texts):,} sentences, batch {batch_size}, best of {repeats} ...", file=sys.stderr)
    rates["ours: SentenceTransformer.encode"] = best_rate(st_encode(model), texts, batch_size, repeats)
    rates["ours: st_static.encode (fast path)"] = best_rate(
        lambda batch: st_static.encode(model, batch, batch_size=batch_size), texts, batch_size, repeats
    )
    rates["raw tokenizer: encode_batch"] = best_rate(
        batched(lambda batch: tokenizer.encode_batch(batch, add_special_tokens=False), batch_size),
        texts,
        batch_size,
        repeats,
    )
    rates["raw tokenizer: encode_batch_fast"] = best_rate(
        batched(lambda batch: tokenizer.encode_batch_fast(batch, add_special_tokens=False), batch_size),
        texts,
        batch_size,
        repeats,
    )
    baseline = wordlevel_static_embedding(module.vocabulary, module.embedding_dim)
    rates["ST StaticEmbedding (WordLevel, same size): encode"] = best_rate(
        st_encode(baseline), texts, batch_size, repeats
    )
    teacher = SentenceTransformer(resolve_teacher(args.teacher), device="cpu")
    teacher_texts = texts[: args.teacher_sentences]
    rates[f"teacher {Path(args.teacher).name}: encode ({len(teacher_texts):,} sentences)"] = best_rate(
        st_encode(teacher), teacher_texts, min(batch_size, len(teacher_texts)), repeats
    )

    fast = rates["ours: st_static.encode (fast path)"]
    teacher_rate = rates[next(name for name in rates if name.startswith("teacher"))]
    print(f"\nModel: {args.model} ({module.num_words:,} words x {module.embedding_dim}); {os.cpu_count()} CPUs\n")
    print("| path | sentences/s |\n| --- | ---: |")
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} |")
    print("\n| ratio | value |\n| --- | ---: |")
    print(f"| fast path / raw tokenizer encode_batch | {fast / rates['raw tokenizer: encode_batch']:.2f} |")
    print(f"| fast path / raw tokenizer encode_batch_fast | {fast / rates['raw tokenizer: encode_batch_fast']:.2f} |")
    print(f"| fast path / teacher | {fast / teacher_rate:,.0f} |")
    ours_st = rates["ours: SentenceTransformer.encode"]
    print(
        f"| ST-encode ours / ST-encode StaticEmbedding | "
        f"{ours_st / rates['ST StaticEmbedding (WordLevel, same size): encode']:.2f} |"
    )
    print(f"| fast path / ST-encode ours | {fast / ours_st:.2f} |")


if __name__ == "__main__":
    main()
