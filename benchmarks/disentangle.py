"""The disentangler (issue 68) side by side, as its paper reports it: baseline / intra / inter / both.

For a cross-lingual static model (its table) or a teacher (any Sentence Transformer, ``--teacher``, with its
``--prompt``), the translation pairs are embedded once (a teacher's vectors cached in ``--work``, so a rerun encodes
nothing), a meaning map is trained per variant on those vectors (``st_static.training.train_meaning_map``: the
paper's settings, 10% of the pairs validate) and the variants are scored:

- cross-lingual STS (``stsb-en-de/en-ja/en-zh-test``) and monolingual STS (``stsb-en/de/ja/zh-test``): reported only;
- STS-B English dev, Tatoeba dev halves and Tux Paint bitext (``xling/tuxpaint/XXX-eng.tsv``, dev halves), both
  directions, and with ``--tasks`` the English task files' dev halves: the dev mean that chooses ``--language-weights``;
- for a static model, the folded table (``fold_meaning_map``) is what is scored, and its largest distance to the
  unfolded model (table, ``Normalize``, map) on every evaluation text is reported.

Settings are chosen on the validation pairs and dev sets only; ``*-test`` is never used to choose. Writes a markdown
table, JSON and a plot (``--output``)::

    python -m benchmarks.disentangle MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra \\
        --parallel de=../shared/data/parallel/en-de.tsv --parallel ja=../shared/data/parallel/en-ja.tsv \\
        --parallel zh=../shared/data/parallel/en-zh.tsv --work runs/disentangle --language-weights 1,0.5 \\
        --output benchmarks/results/DATE-disentangle-e5-table.md
    python -m benchmarks.disentangle MODELS/multilingual-e5-small --teacher --prompt 'query: ' \\
        --languages en,de,ja,zh --parallel de=... --parallel ja=... --parallel zh=... --work runs/disentangle \\
        --output ...
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    ISO_639_3,
    command_line,
    default_data_dir,
    evaluate_sts,
    evaluate_translation_retrieval,
    fold_meaning_map,
    load_model,
    log,
    model_encoder,
    read_disentangle_pairs,
    task_scores,
    task_texts,
    to_numpy,
    train_meaning_map,
    write_report,
)
from benchmarks.text_vectors import TextVectors

VARIANTS = ("baseline", "intra", "inter", "both")


def tasks_for(data: Path, languages: list[str]) -> dict[str, tuple[str, str, Path]]:
    """``name -> (kind, split, path)`` of the tasks the model's languages have files for (``split``: dev or test)."""
    tasks: dict[str, tuple[str, str, Path]] = {"stsb-en-dev": ("sts", "dev", data / "sts" / "stsb-en-dev.tsv")}
    for language in languages:
        tasks[f"stsb-{language}-test"] = ("sts", "test", data / "sts" / f"stsb-{language}-test.tsv")
    for language in languages[1:]:
        tasks[f"stsb-en-{language}-test"] = ("sts", "test", data / "sts" / f"stsb-en-{language}-test.tsv")
        code = ISO_639_3.get(language, language)
        tasks[f"tatoeba-{language}"] = ("translation", "dev", data / "tatoeba" / f"{code}-eng.tsv")
        tasks[f"tuxpaint-{language}"] = ("translation", "dev", data / "xling" / "tuxpaint" / f"{code}-eng.tsv")
    missing = [name for name, (_, _, path) in tasks.items() if not path.exists()]
    if missing:
        log(f"no file for {', '.join(missing)}: left out")
    return {name: task for name, task in tasks.items() if name not in missing}


def score(encoder: Any, tasks: dict[str, tuple[str, str, Path]]) -> dict[str, float]:
    """Every task's score x100; translation tasks also each direction (``... en->x``, ``... x->en``)."""
    scores: dict[str, float] = {}
    for name, (kind, _, path) in tasks.items():
        if kind == "sts":
            scores[name] = evaluate_sts(encoder, path)["score"]
            continue
        result = evaluate_translation_retrieval(encoder, path, diagnostics=False)
        scores[f"{name} en->x"], scores[f"{name} x->en"] = result["accuracy_1_to_2"], result["accuracy_2_to_1"]
        scores[name] = result["score"]
    return scores


def summary(scores: dict[str, float], languages: list[str]) -> dict[str, float]:
    """The means the table shows: cross-lingual and monolingual STS (test), Tatoeba and Tux Paint (dev), dev mean."""

    def mean(names: list[str]) -> float:
        found = [scores[name] for name in names if name in scores]
        return float(np.mean(found)) if found else float("nan")

    others = languages[1:]
    means = {
        "cross-lingual STS": mean([f"stsb-en-{language}-test" for language in others]),
        "monolingual STS": mean([f"stsb-{language}-test" for language in languages]),
        "Tatoeba (dev)": mean([f"tatoeba-{language}" for language in others]),
        "Tux Paint (dev)": mean([f"tuxpaint-{language}" for language in others]),
    }
    dev = [scores.get("stsb-en-dev", float("nan")), means["Tatoeba (dev)"], means["Tux Paint (dev)"]]
    if "English tasks (dev)" in scores:
        means["English tasks (test)"] = scores["English tasks (test)"]
        dev.append(scores["English tasks (dev)"])
    means["dev mean"] = float(np.nanmean(dev))
    return means


def sample_pairs(pairs: dict, max_pairs: int, seed: int = 0) -> dict:
    """At most ``max_pairs`` pairs in all, each language pair keeping its share (a seeded sample), so that only the
    pairs the maps train on are encoded (a teacher reads ~100 texts/s on the 2-core CPU)."""
    total = sum(len(language_pairs) for language_pairs in pairs.values())
    if total <= max_pairs:
        return pairs
    generator = np.random.default_rng(seed)
    sampled = {}
    for key, language_pairs in pairs.items():
        keep = max(1, round(max_pairs * len(language_pairs) / total))
        chosen = np.sort(generator.permutation(len(language_pairs))[:keep])
        sampled[key] = [language_pairs[index] for index in chosen]
    return sampled


class MappedEncoder:
    """``encode`` of the frozen vectors through a meaning map (``weight=None``: the vectors themselves), unit rows."""

    def __init__(self, vectors: TextVectors, weight: np.ndarray | None) -> None:
        self.vectors, self.weight = vectors, weight

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        embeddings = self.vectors(list(texts))
        if self.weight is not None:
            embeddings = embeddings @ self.weight.T
        return embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)


def english_tasks(model: Any, data: Path) -> dict[str, float]:
    """The English task files' dev and test halves, their means (``task_scores``)."""
    scores = task_scores(model, data / "tasks")
    return {
        "English tasks (dev)": float(np.mean([dev for dev, _ in scores.values()])),
        "English tasks (test)": float(np.mean([test for _, test in scores.values()])),
    }


def plot(rows: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = ["cross-lingual STS", "monolingual STS", "Tatoeba (dev)", "Tux Paint (dev)"]
    figure, (bars, curves) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(rows)
    for index, (label, row) in enumerate(rows.items()):
        positions = np.arange(len(groups)) + index * width
        bars.bar(positions, [row["summary"].get(group, np.nan) for group in groups], width, label=label)
        history = row.get("history") or []
        if history:
            first = history[0][1]
            curves.plot([epoch for epoch, _ in history], [loss / first for _, loss in history], marker=".", label=label)
    bars.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups)
    bars.set_ylabel("score x100")
    bars.legend(fontsize=8)
    lowest = np.nanmin([[row["summary"].get(group, np.nan) for group in groups] for row in rows.values()])
    bars.set_ylim(bottom=max(0.0, float(lowest) - 10) if lowest > 0 else float(lowest) - 5)
    curves.set_xlabel("epoch")
    curves.set_ylabel("validation loss / before training")
    curves.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a cross-lingual static model folder, or with --teacher any Sentence Transformer")
    parser.add_argument("--teacher", action="store_true", help="MODEL is a teacher: the map trains on its embeddings")
    parser.add_argument("--prompt", default=None, help="the teacher's prompt, e.g. 'query: ' for e5")
    parser.add_argument("--languages", default=None, help="comma-separated, English first (default: the table's)")
    parser.add_argument("--parallel", action="append", required=True, metavar="LANG=FILE", help="pair files (repeat)")
    parser.add_argument("--work", type=Path, required=True, help="work folder (the teacher's vectors are cached here)")
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--variants", default=",".join(VARIANTS), help="of " + ", ".join(VARIANTS))
    parser.add_argument("--language-weights", default="1", help="weights of L_lang to try (intra, both); dev chooses")
    parser.add_argument("--max-pairs", type=int, default=100_000)
    parser.add_argument("--max-epochs", type=int, default=50)
    parser.add_argument("--min-pairs", type=int, default=300, help="fewest pairs per language (smoke tests: fewer)")
    parser.add_argument("--tasks", action="store_true", help="add the English task files (dev and test halves)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--output", type=Path, default=None, help="write the table here (+ .json, .png)")
    args = parser.parse_args()

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(args.model, device=args.device) if args.teacher else load_model(args.model)
    languages = args.languages.split(",") if args.languages else list(model[0].metadata.languages or [])
    if len(languages) < 2:
        raise SystemExit("error: give --languages (English first): the model records fewer than two")
    files: dict[str, list[str]] = {}
    for entry in args.parallel:
        language, _, path = entry.partition("=")
        files.setdefault(language, []).append(path)
    pairs = sample_pairs(read_disentangle_pairs(files, languages[0], min_pairs=args.min_pairs), args.max_pairs)
    label = str(Path(args.model).resolve())
    vectors = TextVectors(  # a teacher's vectors cached in the work folder, a table's encoded at once
        model,
        prompt=args.prompt if args.teacher else None,
        batch_size=64 if args.teacher else 1024,
        work=args.work if args.teacher else None,
        label=label,
    )
    tasks = tasks_for(args.data, languages)
    vectors.add([text for language_pairs in pairs.values() for pair in language_pairs for text in pair])
    vectors.add(task_texts({name: (kind, path) for name, (kind, _, path) in tasks.items()}))

    runs = [("baseline", None)] if "baseline" in args.variants.split(",") else []
    weights = [float(weight) for weight in args.language_weights.split(",")]
    for constraints in ("intra", "inter", "both"):
        if constraints in args.variants.split(","):
            runs += [(constraints, weight) for weight in (weights if constraints != "inter" else [1.0])]
    rows: dict[str, dict[str, Any]] = {}
    for constraints, weight in runs:
        several = len(weights) > 1 and constraints in ("intra", "both")
        label = f"{constraints} w={weight:g}" if several else constraints
        row: dict[str, Any] = {"constraints": constraints, "language_weight": weight}
        meaning_map = None
        if weight is not None:
            result = train_meaning_map(
                vectors,
                pairs,
                constraints=constraints,
                language_weight=weight,
                max_pairs=args.max_pairs,
                max_epochs=args.max_epochs,
                min_pairs=args.min_pairs,
                device=args.device,
            )
            meaning_map = result.meaning_map
            row.update(
                best_epoch=result.best_epoch,
                epochs=result.epochs,
                train_seconds=result.train_seconds,
                train_pairs=result.train_pairs,
                history=result.history,
            )
        mapped = MappedEncoder(vectors, None if meaning_map is None else to_numpy(meaning_map.weight))
        evaluated: Any = mapped
        if not args.teacher:  # the folded table is what a user gets: score it, and check it against the map
            evaluated = model if meaning_map is None else fold_meaning_map(model, meaning_map)
            texts = task_texts({name: (kind, path) for name, (kind, _, path) in tasks.items()})
            folded = evaluated.encode(texts, batch_size=1024, normalize_embeddings=True)
            row["folded_vs_unfolded_min_cosine"] = float(np.min(np.sum(folded * mapped.encode(texts), axis=1)))
        row["scores"] = score(mapped.encode if args.teacher else model_encoder(evaluated), tasks)
        if args.tasks:
            row["scores"].update(english_tasks(evaluated, args.data))
        row["summary"] = summary(row["scores"], languages)
        rows[label] = row
        log(f"{label}: " + ", ".join(f"{key} {value:.2f}" for key, value in row["summary"].items()))

    chosen = {}
    for constraints in ("intra", "inter", "both"):
        candidates = [label for label, row in rows.items() if row["constraints"] == constraints]
        if candidates:
            chosen[constraints] = max(candidates, key=lambda label: rows[label]["summary"]["dev mean"])
    write_report(args.output, report_lines(args, languages, rows, chosen, tasks), {"rows": rows, "chosen": chosen})
    if args.output is not None:
        shown = {label: row for label, row in rows.items() if label in chosen.values() or label == "baseline"}
        plot(shown, args.output.with_suffix(".png"))


def report_lines(
    args: argparse.Namespace,
    languages: list[str],
    rows: dict[str, dict[str, Any]],
    chosen: dict[str, str],
    tasks: dict[str, tuple[str, str, Path]],
) -> list[str]:
    kind = "teacher" if args.teacher else "static table"
    means = list(next(iter(rows.values()))["summary"])
    columns = [name for name in tasks if name != "stsb-en-dev" and not name.startswith(("tatoeba", "tuxpaint"))]
    lines = [
        f"# Disentangler on {Path(args.model).name} ({kind}, {'-'.join(languages)})",
        "",
        f"Command: `{command_line('benchmarks.disentangle')}`",
        "",
        "Scores x100: STS Spearman; Tatoeba and Tux Paint retrieval accuracy, mean of both directions (the JSON has "
        "each). `*-test` is reported only; the language weight of each family is chosen by the dev mean (STS-B en "
        "dev, Tatoeba and Tux Paint dev halves"
        + (", English task dev halves" if args.tasks else "")
        + "): "
        + ", ".join(f"{family} -> {label}" for family, label in chosen.items())
        + ".",
        "",
        "| variant | " + " | ".join([*means, "stsb-en-dev", *columns]) + " | best epoch | train s |",
        "|---" * (len(means) + len(columns) + 4) + "|",
    ]
    for label, row in rows.items():
        marker = " *" if label in chosen.values() else ""
        cells = [f"{row['summary'][name]:.2f}" for name in means]
        cells += [f"{row['scores'].get(name, float('nan')):.2f}" for name in ["stsb-en-dev", *columns]]
        cells += [str(row.get("best_epoch", "-")), f"{row['train_seconds']:.0f}" if "train_seconds" in row else "-"]
        lines.append(f"| {label}{marker} | " + " | ".join(cells) + " |")
    checks = [row["folded_vs_unfolded_min_cosine"] for row in rows.values() if "best_epoch" in row and not args.teacher]
    if checks:
        lines.append("")
        lines.append(
            f"Folded table vs unfolded model (table, Normalize, map): smallest cosine {min(checks):.6f} over every "
            "evaluation text of every variant."
        )
    return lines


if __name__ == "__main__":
    main()
