"""Where the teacher pass spends its time, and how fast (and how faithful) each teacher runtime is.

    python -m benchmarks.teacher_pass_profile --corpus ../shared/data/corpus/en.txt [--teacher minilm] \
        [--prompt 'query: '] [--sentences 4000] [--threads 2] [--runtimes float32,int8] \
        --output benchmarks/results/DATE-teacher-pass-profile.md

Takes the sentences a default build's selection reads (``--sentences-per-word``, shortest first), keeps an evenly
spaced sample of ``--sentences`` of them (so the length mix is the build's), and times each phase of the
extraction loop on it: tokenisation and padding (``teacher.preprocess``), the forward pass, the word alignment
(character offsets -> word occurrences) and the accumulation of token vectors. Then the forward pass with each
runtime: float32, bfloat16 weights (the build's ``--teacher-precision bfloat16``), bfloat16 autocast, torch's
dynamic int8 quantisation per tensor, and per output channel (the build's ``--teacher-precision int8``), each with the
cosine of its word vectors to float32's (``--runtimes`` picks some: bfloat16 is slow where it is not native).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import (
    ExtractionSettings,
    TokenAligner,
    build_vocabulary,
    build_word_tokenizer,
    count_word_sentences,
    extract_word_vectors,
    iter_sentences,
    load_teacher,
    load_teacher_tokenizer,
    plan_batches,
    select_sentences,
    teacher_token_counts,
)


def sample_sentences(teacher: str, corpus: Path, sentences_per_word: int, count: int) -> tuple[list[str], object]:
    """The build's selected sentences (evenly spaced sample) and its word tokenizer."""
    sentences = list(iter_sentences(corpus))
    defaults = ExtractionSettings()
    vocabulary = build_vocabulary(
        count_word_sentences(sentences), size=defaults.vocab_size, min_sentences=defaults.min_sentences
    )
    tokenizer = build_word_tokenizer(
        vocabulary.words, teacher_tokenizer=load_teacher_tokenizer(teacher), lowercase=vocabulary.lowercase
    )
    selection = select_sentences(
        iter(sentences), tokenizer, sentences_per_word=sentences_per_word, max_words=defaults.max_words
    )
    picked = np.linspace(0, len(selection.sentences) - 1, count).astype(int)
    return [selection.sentences[index] for index in picked], tokenizer


def profile_phases(teacher, sentences: list[str], word_tokenizer, batch_tokens: int) -> dict[str, float]:
    """Seconds of each phase of the extraction loop over ``sentences`` (one pass, as extract_word_vectors does)."""
    aligner = TokenAligner(teacher[0].tokenizer, word_tokenizer, teacher.max_seq_length or 512)
    seconds = dict.fromkeys(("plan", "tokenise + pad", "forward", "align", "accumulate"), 0.0)
    padded = real = 0
    started = time.perf_counter()
    token_counts = teacher_token_counts(teacher, sentences)
    batches = plan_batches(sentences, batch_tokens, 128, token_counts)
    seconds["plan"] = time.perf_counter() - started
    # The same sentences planned by characters (the build's plan before 2026-11-23), for the padding it cost.
    by_characters = plan_batches(sentences, batch_tokens, 128)
    character_slots = sum(len(batch.indices) * int(token_counts[batch.indices].max()) for batch in by_characters)
    sums = torch.zeros(word_tokenizer.get_vocab_size(), teacher.get_embedding_dimension(), dtype=torch.float64)
    with torch.inference_mode():
        for batch in batches:
            started = time.perf_counter()
            features = teacher.preprocess(batch.texts)
            seconds["tokenise + pad"] += time.perf_counter() - started
            padded += features["attention_mask"].numel()
            real += int(features["attention_mask"].sum())
            started = time.perf_counter()
            hidden = teacher.forward(features)["token_embeddings"].float()
            seconds["forward"] += time.perf_counter() - started
            started = time.perf_counter()
            positions, occurrence, rows = aligner.align(batch.texts, "", features["input_ids"])
            seconds["align"] += time.perf_counter() - started
            started = time.perf_counter()
            if rows.size:
                flat = hidden.reshape(-1, hidden.shape[-1])
                occurrence_sums = torch.zeros(rows.size, flat.shape[1])
                occurrence_sums.index_add_(0, torch.from_numpy(occurrence), flat[torch.from_numpy(positions)])
                sums.index_add_(0, torch.from_numpy(rows).clamp(max=sums.shape[0] - 1), occurrence_sums.double())
            seconds["accumulate"] += time.perf_counter() - started
    seconds["padding share"] = 1 - real / padded
    seconds["padding share by characters"] = 1 - int(token_counts.sum()) / character_slots
    seconds["tokens"] = real
    return seconds


RUNTIMES = {
    "float32": "float32",
    "bfloat16": "bfloat16 weights (--teacher-precision bfloat16)",
    "autocast": "bfloat16 autocast",
    "int8-tensor": "int8 dynamic, per tensor (torch.ao quantize_dynamic)",
    "int8": "int8 dynamic, per output channel (--teacher-precision int8)",
}


def _runtime(name: str, key: str) -> tuple[object, torch.dtype | None]:
    """The teacher of one runtime and the autocast type it runs under (``None``: no autocast)."""
    if key == "int8-tensor":
        teacher = load_teacher(name, "cpu", precision="float32")
        return torch.ao.quantization.quantize_dynamic(teacher, {torch.nn.Linear}, dtype=torch.qint8), None
    if key == "autocast":
        return load_teacher(name, "cpu", precision="float32"), torch.bfloat16
    return load_teacher(name, "cpu", precision=key), None


def runtime_rows(
    name: str, sentences: list[str], word_tokenizer, batch_tokens: int, runtimes: list[str], prompt: str = ""
) -> list[dict]:
    """Forward-pass speed and word-vector fidelity of each runtime (the first one is the reference)."""
    rows = []
    reference = None
    for key in runtimes:
        teacher, autocast = _runtime(name, key)
        label = RUNTIMES[key]
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            result = extract_word_vectors(teacher, sentences, word_tokenizer, prompt=prompt, batch_tokens=batch_tokens)
        seconds = time.perf_counter() - started
        vectors = result.word_vectors[result.occurrences > 0]
        if reference is None:
            reference = vectors
        cosines = (vectors * reference).sum(1) / (
            np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1) + 1e-12
        )
        rows.append(
            {
                "runtime": label,
                "tokens_per_second": result.stats["teacher_tokens"] / seconds,
                "forward_tokens_per_second": result.stats["forward_tokens_per_second"],
                "cosine_mean": float(cosines.mean()),
                "cosine_min": float(cosines.min()),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--teacher", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--prompt", default="", help="Text put before every sentence (e5: 'query: ').")
    parser.add_argument(
        "--runtimes",
        default=",".join(RUNTIMES),
        help=f"Comma-separated, the first the reference (default: all): {', '.join(RUNTIMES)}.",
    )
    parser.add_argument("--sentences-per-word", type=int, default=ExtractionSettings.sentences_per_word)
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--batch-tokens", type=int, default=ExtractionSettings.batch_tokens)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, required=True)
    arguments = parser.parse_args()
    runtimes_asked = arguments.runtimes.split(",")
    if unknown := [key for key in runtimes_asked if key not in RUNTIMES]:
        parser.error(f"unknown runtime(s) {', '.join(unknown)}; choose from {', '.join(RUNTIMES)}.")
    torch.set_num_threads(arguments.threads)

    sentences, word_tokenizer = sample_sentences(
        arguments.teacher, arguments.corpus, arguments.sentences_per_word, arguments.sentences
    )
    teacher = load_teacher(arguments.teacher, "cpu", precision="float32")
    profile_phases(teacher, sentences[:200], word_tokenizer, arguments.batch_tokens)  # warm-up
    phases = profile_phases(teacher, sentences, word_tokenizer, arguments.batch_tokens)
    runtimes = runtime_rows(
        arguments.teacher, sentences, word_tokenizer, arguments.batch_tokens, runtimes_asked, arguments.prompt
    )

    timed = {
        key: value
        for key, value in phases.items()
        if key not in ("padding share", "padding share by characters", "tokens")
    }
    total = sum(timed.values())
    lines = [
        f"# Teacher pass profile ({arguments.teacher}, {arguments.corpus.name})",
        "",
        f"Command: `python -m benchmarks.teacher_pass_profile --corpus {arguments.corpus.name} --teacher "
        f"{arguments.teacher} --sentences-per-word {arguments.sentences_per_word} --sentences {arguments.sentences} "
        f"--batch-tokens {arguments.batch_tokens} --threads {arguments.threads} --prompt {arguments.prompt!r} "
        f"--runtimes {arguments.runtimes}`; {torch.get_num_threads()} torch "
        f"thread(s), CPU: {torch.backends.cpu.get_cpu_capability()}. {len(sentences):,} of the build's selected "
        f"sentences (evenly spaced, {int(phases['tokens']):,} teacher tokens).",
        "",
        "## Phases of the extraction loop (float32 teacher)",
        "",
        "| phase | seconds | share |",
        "| --- | ---: | ---: |",
        *(f"| {key} | {value:.2f} | {100 * value / total:.1f}% |" for key, value in timed.items()),
        f"| total | {total:.2f} | 100% |",
        "",
        f"Padding: {100 * phases['padding share']:.1f}% of the token slots of the batches (sorted by teacher token "
        "count) are padding; planned by characters, as builds did before, "
        f"{100 * phases['padding share by characters']:.1f}%.",
        "I/O (checkpoints of the sums every 120 s, the memory-mapped targets) is not in the loop's measured phases; "
        "a build's `stats.json` gives `encode_seconds` (the whole loop) next to `forward_seconds`.",
        "",
        "## Teacher runtimes (whole extraction loop)",
        "",
        "| runtime | tokens/s (loop) | tokens/s (forward) | word-vector cosine to float32: mean | min |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {row['runtime']} | {row['tokens_per_second']:,.0f} | {row['forward_tokens_per_second']:,.0f} | "
            f"{row['cosine_mean']:.5f} | {row['cosine_min']:.5f} |"
            for row in runtimes
        ),
    ]
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
