"""Issue 68's change of design tried at small cost: the four-language table's training continued with a
sentence-level teacher's similarities over mixed-language batches, the teacher one without the language gap
(EmbeddingGemma-300m: cross-lingual STS 80.90, gap 0.57) against the table's own (multilingual-e5-small: 65.00,
gap 11.87; ``benchmarks/results/2026-11-29-teacher-language-gap.md``).

English sentences present in every language's pair files (``--parallel``) are sampled (``--sentences``) with their
translations. Each teacher (``--teacher NAME=FOLDER|PROMPT``) encodes them once, in chunks cached in ``--work``, so
an interrupted run resumes where it stopped. Every arm starts from the built table:

- ``table as built``: no training;
- ``contrastive``: the contrastive loss on the pairs alone for ``--steps`` more steps (the control: more training);
- ``+ NAME``: the contrastive loss in turn with the distillation loss on the sampled sentences and NAME's vectors
  (``refine_by_translation(..., distillation=...)``). A batch mixes languages, so the similarities the table learns
  cross them.

Scored as ``benchmarks.disentangle`` scores: cross-lingual and monolingual STS test (reported only), STS-B English dev,
Tatoeba and Tux Paint dev halves, the English task files' halves::

    python -m benchmarks.experiments.sentence_teacher MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra \\
        --parallel de=DATA/parallel/en-de.tsv --parallel ja=DATA/parallel/en-ja.tsv \\
        --parallel zh=DATA/parallel/en-zh.tsv \\
        --teacher 'e5=MODELS/multilingual-e5-small|query: ' \\
        --teacher 'gemma=MODELS/embeddinggemma-300m|task: sentence similarity | query: ' \\
        --sentences 5000 --work runs/sentence-teacher --data DATA --output benchmarks/results/DATE-sentence-teacher.md
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    command_line,
    default_data_dir,
    load_model,
    log,
    model_encoder,
    read_disentangle_pairs,
    refine_by_translation,
    save_model,
    write_report,
)
from benchmarks.disentangle import english_tasks, score, summary, tasks_for
from benchmarks.text_vectors import encode_in_chunks


def shared_sentences(
    pairs: dict[tuple[str, str], list[tuple[str, str]]], count: int, seed: int
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``count`` English sentences (a seeded sample) that every language pair translates, with one translation each."""
    first: list[dict[str, str]] = []
    for language_pairs in pairs.values():
        translations: dict[str, str] = {}
        for english, other in language_pairs:
            translations.setdefault(english, other)
        first.append(translations)
    common = sorted(set.intersection(*(set(translations) for translations in first)))
    if len(common) < count:
        raise SystemExit(f"error: only {len(common):,} English sentences are translated in every pair file")
    chosen = [common[index] for index in np.sort(np.random.default_rng(seed).permutation(len(common))[:count])]
    return {
        key: [(english, translations[english]) for english in chosen]
        for key, translations in zip(pairs, first, strict=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a cross-lingual static model folder")
    parser.add_argument("--parallel", action="append", required=True, metavar="LANG=FILE", help="pair files (repeat)")
    parser.add_argument("--teacher", action="append", default=[], metavar="NAME=FOLDER|PROMPT", help="repeat")
    parser.add_argument("--sentences", type=int, default=5000, help="English sentences the teachers read (x4 texts)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0, help="the training's seed (batch order, validation split)")
    parser.add_argument("--encode-only", action="store_true", help="encode the teachers' texts, then stop")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="leave out the built table's row")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--save", type=Path, default=None, help="save each trained arm's model in SAVE/ARM")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    files: dict[str, list[str]] = {}
    for entry in args.parallel:
        language, _, path = entry.partition("=")
        files.setdefault(language, []).append(path)
    pairs = read_disentangle_pairs(files, "en")
    texts: list[str] = []
    if args.teacher:
        sampled = shared_sentences(pairs, args.sentences, seed=0)
        texts = list(dict.fromkeys(text for pairs_ in sampled.values() for pair in pairs_ for text in pair))
        log(f"{args.sentences:,} English sentences and their translations: {len(texts):,} texts")
    targets = {}
    for entry in args.teacher:
        name, _, rest = entry.partition("=")
        folder, _, prompt = rest.partition("|")
        targets[name], _ = encode_in_chunks(folder, texts, args.work, str(Path(folder).resolve()), prompt=prompt)
    if args.encode_only:
        return

    model = load_model(args.model)
    languages = list(model[0].metadata.languages or [])
    tasks = tasks_for(args.data, languages)
    arms: list[tuple[str, np.ndarray | None, bool]] = [("table as built", None, False)] if args.baseline else []
    arms.append(("contrastive", None, True))
    arms += [(f"+ {name}", vectors, True) for name, vectors in targets.items()]
    rows: dict[str, dict[str, Any]] = {}
    for label, vectors, train in arms:
        model = load_model(args.model)
        row: dict[str, Any] = {}
        if train:
            result = refine_by_translation(
                model,
                pairs,
                distillation=None if vectors is None else (texts, vectors),
                steps=args.steps,
                batch_size=args.batch_size,
                learning_rate=args.learning_rate,
                patience=None,
                seed=args.seed,
            )
            row.update(best_step=result.best_step, train_seconds=result.train_seconds)
            if args.save is not None:
                save_model(model, args.save / label.strip("+ ").replace(" ", "-"))
        row["scores"] = score(model_encoder(model), tasks)
        row["scores"].update(english_tasks(model, args.data))
        row["summary"] = summary(row["scores"], languages)
        rows[label] = row
        log(f"{label}: " + ", ".join(f"{key} {value:.2f}" for key, value in row["summary"].items()))
    write_report(args.output, report_lines(args, len(texts), rows, tasks), rows)


def report_lines(
    args: argparse.Namespace, texts: int, rows: dict[str, dict[str, Any]], tasks: dict[str, tuple[str, str, Path]]
) -> list[str]:
    means = list(next(iter(rows.values()))["summary"])
    columns = [name for name in tasks if name.startswith("stsb-") and name != "stsb-en-dev"]
    lines = [
        f"# A sentence-level teacher's cross-lingual similarities distilled into {Path(args.model).name}",
        "",
        f"Command: `{command_line('benchmarks.experiments.sentence_teacher')}`",
        "",
        (
            f"Distillation texts: {args.sentences:,} English sentences translated in every pair file, with their "
            f"translations ({texts:,} texts). "
            if texts
            else "No teacher: the contrastive loss on the pairs alone. "
        )
        + f"Each arm trains {args.steps:,} steps from the built table (batch "
        f"{args.batch_size}, learning rate {args.learning_rate:g}"
        + (f", seed {args.seed}" if args.seed else "")
        + ", the best validation step kept). Scores x100; "
        "`*-test` reported only; Tatoeba and Tux Paint are dev halves, both directions.",
        "",
        "| arm | " + " | ".join([*means, "stsb-en-dev", *columns]) + " | best step | train s |",
        "|---" * (len(means) + len(columns) + 4) + "|",
    ]
    for label, row in rows.items():
        cells = [f"{row['summary'][name]:.2f}" for name in means]
        cells += [f"{row['scores'].get(name, float('nan')):.2f}" for name in ["stsb-en-dev", *columns]]
        cells += [str(row.get("best_step", "-")), f"{row['train_seconds']:.0f}" if "train_seconds" in row else "-"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    main()
