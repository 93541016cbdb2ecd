"""Words the table lacks: subword pieces against the prefix rule, on a smaller vocabulary, under typos, and in full.

Three tables in one report (scores x100; STS: Spearman of cosines; the five English task files through mteb, their
mean is the "task mean"):

* **Vocabulary ablation**: the table keeping only its K most frequent words (``prune_vocabulary``), read with
  today's prefix rule, with subword pieces fitted on the kept words, and (``--extend``) extended from each task's
  own unlabelled texts before the pieces; the full table for reference. Share recovered = (variant - prefix rule)
  / (full - prefix rule) on the task mean.
* **Typo noise**: every alphabetic word of 2+ letters gets, with probability p, one seeded one-character edit
  (deletion, insertion, substitution or transposition; the same edit for the same text in every row), in the
  texts of every set; the loss is the clean score minus the noisy one.
* **The full table**: scores, rows, folder bytes and texts/s (``st_static.encode`` and a bare
  ``SentenceTransformer(folder).encode(batch_size=1024)``) of each variant folder.

    python -m benchmarks.unknown_words --model MODELS/swe-minilm-256 [--potion TEACHERS/potion-base-8M] \\
        [--teacher sentence-transformers/all-MiniLM-L6-v2] [--vocab-sizes 20000,50000] [--noise 0.1,0.2] \\
        [--output benchmarks/results/DATE-unknown-words.md]
"""

from __future__ import annotations

import argparse
import random
import re
import string
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from benchmarks.common import (
    command_line,
    default_corpus,
    default_data_dir,
    evaluate_tasks,
    find_tasks,
    folder_size,
    load_average,
    load_model,
    load_teacher,
    load_teacher_tokenizer,
    log,
    machine,
    model_encoder,
    prune_vocabulary,
    save_model,
    task_texts,
    write_report,
)

SETS = "stsb-en-dev,sick-dev,bbc-news-classification,bbc-news-title-clustering,bbc-news-title-to-article," + (
    "chatterbot-qa-en,rotten-tomatoes-sentiment"
)
STS_SETS = ("stsb-en-dev", "sick-dev")
TASK_SETS = (
    "bbc-news-classification",
    "bbc-news-title-clustering",
    "bbc-news-title-to-article",
    "chatterbot-qa-en",
    "rotten-tomatoes-sentiment",
)
_WORD = re.compile(r"[A-Za-z]{2,}")

Encoder = Callable[[Sequence[str]], np.ndarray]


def with_typos(text: str, rate: float, seed: int = 0) -> str:
    """``text`` with one seeded one-character edit in each alphabetic word of 2+ letters, with probability ``rate``."""
    if rate <= 0:
        return text
    generator = random.Random(f"{seed}:{rate}:{text}")

    def edit(match: re.Match[str]) -> str:
        word = match.group(0)
        if generator.random() >= rate:
            return word
        operation, where = generator.randrange(4), generator.randrange(len(word))
        letter = generator.choice(string.ascii_lowercase)
        if operation == 0:
            return word[:where] + word[where + 1 :]
        if operation == 1:
            return word[:where] + letter + word[where:]
        if operation == 2:
            return word[:where] + letter + word[where + 1 :]
        where = min(where, len(word) - 2)
        return word[:where] + word[where + 1] + word[where] + word[where + 2 :]

    return _WORD.sub(edit, text)


def noisy(encoder: Encoder, rate: float) -> Encoder:
    """``encoder`` reading every text with typos (:func:`with_typos`)."""
    if rate <= 0:
        return encoder
    return lambda texts: encoder([with_typos(text, rate) for text in texts])


def shown_arguments(argv: list[str] | None) -> list[str]:
    """The command's arguments as a results file shows them: a path outside the repository as ``TEACHERS/<name>``
    (no path of this machine in a committed file)."""
    shown = []
    for argument in sys.argv[1:] if argv is None else argv:
        path = Path(argument)
        outside = path.is_absolute() and not path.resolve().is_relative_to(Path(__file__).resolve().parents[1])
        shown.append(f"TEACHERS/{path.name}" if outside else argument)
    return shown


def score(encoder: Encoder, tasks: list) -> dict[str, float]:
    """Each set's main score and the STS and task means."""
    results = evaluate_tasks(encoder, tasks)
    scores = {name: float(result["score"]) for name, result in results.items()}
    scores["sts mean"] = float(np.mean([scores[name] for name in STS_SETS]))
    scores["task mean"] = float(np.mean([scores[name] for name in TASK_SETS]))
    return scores


def extended(
    model: SentenceTransformer, tasks: list, teacher_tokenizer: object, teacher: str | None
) -> dict[str, float]:
    """Each set scored by ``model`` extended from that set's own texts (``st_static.extend``: the documents a user
    would index, labels unread), then given piece rows; a set with no new word is scored with pieces alone."""
    import st_static
    from st_static.errors import StStaticError

    loaded = load_teacher(teacher or model[0].metadata.teacher)
    scores: dict[str, float] = {}
    for task in tasks:
        texts = task_texts({task.name: (task.kind, task.path)})
        try:
            grown = st_static.extend(model, texts, teacher=loaded)
            log(f"extend {task.name}: {grown[0].num_vocabulary_words - model[0].num_vocabulary_words} words")
        except StStaticError as error:
            log(f"extend {task.name}: {error}")
            grown = model
        with_pieces, _ = st_static.add_piece_rows(grown, teacher_tokenizer)
        result = evaluate_tasks(model_encoder(with_pieces), [task])
        scores.update({name: float(value["score"]) for name, value in result.items()})
    scores["sts mean"] = float(np.mean([scores[name] for name in STS_SETS]))
    scores["task mean"] = float(np.mean([scores[name] for name in TASK_SETS]))
    return scores


def texts_per_second(encode: Callable[[list[str]], object], texts: list[str], repeats: int = 3) -> float:
    """The best of ``repeats`` timed calls (after a warm-up) on ``texts``."""
    encode(texts[:1000])
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        encode(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def main(argv: list[str] | None = None) -> None:
    import st_static

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="A built table without piece rows (the README table).")
    parser.add_argument("--teacher", default=None, help="Its teacher (default: the one its metadata records).")
    parser.add_argument("--potion", default=None, help="potion-base-8M's folder, for the typo-noise rows.")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--vocab-sizes", default="20000,50000")
    parser.add_argument("--noise", default="0.1,0.2")
    parser.add_argument("--speed-texts", type=int, default=50_000)
    parser.add_argument("--extend", action="store_true", help="Also the ablation with st-static extend per set.")
    parser.add_argument("--skip", default="", help="Comma-separated sections to skip: ablation,typos,full.")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    data = args.data or default_data_dir()
    tasks = find_tasks(data, include=SETS)
    skip = set(filter(None, args.skip.split(",")))
    base = load_model(args.model)
    if base[0].num_piece_rows:
        sys.exit(f"{args.model} already has piece rows; give the table without them (the prefix rule).")
    teacher_tokenizer = load_teacher_tokenizer(args.teacher or base[0].metadata.teacher)
    started = time.perf_counter()
    with_pieces, report = st_static.add_piece_rows(base, teacher_tokenizer)
    fit_seconds = time.perf_counter() - started
    log(f"pieces: {report} in {fit_seconds:.1f} s")
    columns = [*STS_SETS, *TASK_SETS, "sts mean", "task mean"]
    lines = [
        "# Words the table lacks: subword pieces against the prefix rule",
        "",
        f"Command: `{command_line('benchmarks.unknown_words', shown_arguments(argv))}`",
        f"Machine: {machine()[0]}; load average at the start {load_average()}.",
        f"Model: `{Path(args.model).name}`; pieces fitted in {fit_seconds:.1f} s: {report['pieces']} pieces "
        f"(of {report['candidates']} candidates), on {report['fitted_on']} words; held-out words' cosine to their rows "
        f"{report['held_out_cosine_prefix']:.3f} (prefix alone) -> {report['held_out_cosine']:.3f} (with pieces).",
        "",
    ]
    rows: dict[str, dict[str, float]] = {}

    def table(title: str, variants: dict[str, dict[str, float]], extra: str = "") -> None:
        lines.extend([f"## {title}", "", extra, ""] if extra else [f"## {title}", ""])
        lines.append("| variant | " + " | ".join(columns) + " |")
        lines.append("| --- | " + " | ".join("---:" for _ in columns) + " |")
        for name, scores in variants.items():
            lines.append(f"| {name} | " + " | ".join(f"{scores[column]:.2f}" for column in columns) + " |")
        lines.append("")

    full = score(model_encoder(base), tasks)
    full_pieces = score(model_encoder(with_pieces), tasks)
    rows["full, prefix rule"], rows["full, pieces"] = full, full_pieces
    log(f"full: {full['task mean']:.2f} -> {full_pieces['task mean']:.2f}")

    if "ablation" not in skip:
        ablation = {"full table, prefix rule": full, "full table, pieces": full_pieces}
        notes = []
        for size in [int(value) for value in args.vocab_sizes.split(",") if value]:
            pruned = prune_vocabulary(base, size)
            pruned_pieces, _ = st_static.add_piece_rows(pruned, teacher_tokenizer)
            prefix_scores = score(model_encoder(pruned), tasks)
            piece_scores = score(model_encoder(pruned_pieces), tasks)
            ablation[f"{size:,} words, prefix rule"] = prefix_scores
            ablation[f"{size:,} words, pieces"] = piece_scores
            lost = full["task mean"] - prefix_scores["task mean"]
            if args.extend:
                extended_scores = extended(pruned, tasks, teacher_tokenizer, args.teacher)
                ablation[f"{size:,} words, extend from each set's texts + pieces"] = extended_scores
                gained = extended_scores["task mean"] - prefix_scores["task mean"]
                notes.append(
                    f"{size:,} words: extend from each set's own texts, then pieces, recover {gained:.2f} "
                    f"({gained / lost:.0%} of the loss)"
                    if lost > 0
                    else f"{size:,} words: extend gains {gained:.2f}"
                )
            recovered = piece_scores["task mean"] - prefix_scores["task mean"]
            notes.append(
                f"{size:,} words: the prefix rule loses {lost:.2f} of the task mean; pieces recover {recovered:.2f} "
                f"({recovered / lost:.0%} of the loss)"
                if lost > 0
                else f"{size:,} words: no loss to recover"
            )
            log(notes[-1])
        rows.update({f"ablation: {name}": value for name, value in ablation.items()})
        table("Vocabulary ablation (the K most frequent words kept)", ablation)
        lines.extend([f"- {note}." for note in notes] + [""])

    if "typos" not in skip:
        readers: dict[str, Encoder] = {
            "prefix rule": model_encoder(base),
            "pieces": model_encoder(with_pieces),
        }
        if args.potion:
            readers["potion-base-8M"] = model_encoder(SentenceTransformer(args.potion, device="cpu"))
        clean = {"prefix rule": full, "pieces": full_pieces}
        typos: dict[str, dict[str, float]] = {}
        losses = []
        for name, encoder in readers.items():
            clean_scores = clean.get(name) or score(encoder, tasks)
            typos[f"{name}, clean"] = clean_scores
            for rate in [float(value) for value in args.noise.split(",") if value]:
                noisy_scores = score(noisy(encoder, rate), tasks)
                typos[f"{name}, {rate:.0%} typos"] = noisy_scores
                task_loss = clean_scores["task mean"] - noisy_scores["task mean"]
                sts_loss = clean_scores["sts mean"] - noisy_scores["sts mean"]
                losses.append(f"{name} at {rate:.0%}: task mean loss {task_loss:.2f}, STS mean loss {sts_loss:.2f}")
                log(losses[-1])
        rows.update({f"typos: {name}": value for name, value in typos.items()})
        table("Typo noise (one seeded edit in p of the words)", typos)
        lines.extend([f"- {loss}." for loss in losses] + [""])

    if "full" not in skip:
        corpus = [line.strip() for line in default_corpus().open(encoding="utf-8") if line.strip()]
        texts = corpus[: args.speed_texts]
        lines.extend(
            [
                "## The full table: size and speed",
                "",
                "| table | rows | folder MB | weights MB | `load_model` s | bare load s | STS-B dev | SICK dev | "
                "task mean | `st_static.encode` texts/s | bare `encode(batch_size=1024)` texts/s |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
        )
        with tempfile.TemporaryDirectory() as folder:
            from st_static.compression.quantization import quantize

            for name, model, scores in (
                ("float32, prefix rule (before)", base, full),
                ("float32, pieces", with_pieces, full_pieces),
                ("float16, pieces (the new default)", quantize(with_pieces, "float16"), None),
            ):
                path = Path(folder) / name.split(",")[0].replace(" ", "-") / str(len(lines))
                save_model(model, path)
                load_model(path)  # warm the file cache: the timed loads read from memory
                started = time.perf_counter()
                loaded = load_model(path)
                load_seconds = time.perf_counter() - started
                scores = scores or score(model_encoder(loaded), tasks)
                started = time.perf_counter()
                bare = SentenceTransformer(str(path), device="cpu")
                bare_seconds = time.perf_counter() - started
                fast = texts_per_second(lambda batch, model=loaded: st_static.encode(model, batch), texts)
                slow = texts_per_second(lambda batch, model=bare: model.encode(batch, batch_size=1024), texts)
                weights = path / "0_StaticEmbedding" / "model.safetensors"
                weights = weights if weights.is_file() else path / "model.safetensors"
                rows[f"storage: {name}"] = {
                    **scores,
                    "fast": fast,
                    "bare": slow,
                    "bytes": folder_size(path),
                    "load_seconds": load_seconds,
                    "bare_load_seconds": bare_seconds,
                }
                lines.append(
                    f"| {name} | {loaded[0].num_words:,} | {folder_size(path) / 1e6:.1f} | "
                    f"{weights.stat().st_size / 1e6:.1f} | {load_seconds:.2f} | {bare_seconds:.2f} | "
                    f"{scores['stsb-en-dev']:.2f} | {scores['sick-dev']:.2f} | {scores['task mean']:.2f} | "
                    f"{fast:,.0f} | {slow:,.0f} |"
                )
        lines.append("")
    if args.output is not None:
        figure = args.output.with_suffix(".png")
        plot(rows, figure)
        lines.append(f"Plot: `{figure.name}` (task mean per variant).")
    write_report(args.output, lines, rows)


def plot(rows: dict[str, dict[str, float]], path: Path) -> None:
    """Bars of the task mean: the ablation's variants, and each reader clean and under typos."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("Vocabulary ablation", {name[10:]: row for name, row in rows.items() if name.startswith("ablation: ")}),
        ("Typo noise", {name[7:]: row for name, row in rows.items() if name.startswith("typos: ")}),
    ]
    panels = [(title, values) for title, values in panels if values]
    if not panels:
        return
    figure, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for axis, (title, values) in zip(axes[0], panels, strict=True):
        names = list(values)
        means = [values[name]["task mean"] for name in names]
        axis.barh(names, means, color=["tab:gray" if "prefix" in name else "tab:blue" for name in names])
        axis.set_xlim(min(means) - 2, max(means) + 1)
        axis.invert_yaxis()
        axis.set_title(f"{title}: English task mean")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    main()
