"""Ensembles of different static models (our table, potion, WordLlama): weights chosen on dev, exact against folded.

    python -m benchmarks.ensembles --member ours=MODELS/swe-minilm-256 \
        --member potion=MODELS/teachers/potion-base-8M --member wordllama=wordllama:l2_supercat:256 \
        --weights 1,0,0 --weights 0,1,0 --weights 0,0,1 --weights 1,1,0 --weights 1,1,1 --weights 2,1,1 \
        --data ../shared/data --fold-texts ../shared/data/corpus/en-modern.txt \
        --output benchmarks/results/DATE-ensembles.md

One table over the union of every member's keys is built once (``st_static.compression.ensemble``); each weight vector
is that table with another ``BlockNormalize`` (a weight of 0 leaves a member out, so a row with zeros is the
ensemble of the others over the same keys). Every row is scored on the dev data only (stsb-en-dev, sick-dev,
msrp-dev, and the dev halves of the five English task files, see ``benchmarks.common.task_scores``); the best dev
mean (STS dev mean and task dev mean averaged) is the choice, and its test columns (stsb-en-test, the task test halves)
are reported, never used. The chosen weights are then built as the shipped model would be: exact (``BlockNormalize``)
against folded (per-member scales from ``--fold-texts`` folded into the table, plain ``Normalize``), pruned to
``--vocab-size`` when given, with the agreement of each block with its member's own vectors on ``--agreement-lines``
lines of the fold texts.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import (
    DEV_TASKS,
    ENGLISH_TASKS,
    TEST_TASKS,
    command_line,
    log,
    machine,
    task_evaluator,
    task_scores,
    write_report,
)
from st_static.data_files import first_lines


def _with_weights(model: object, weights: list[float]) -> object:
    from sentence_transformers import SentenceTransformer

    from st_static.compression import BlockNormalize

    normalize = BlockNormalize(model[1].block_dims, weights)  # type: ignore[index]
    return SentenceTransformer(modules=[model[0], normalize], device="cpu")  # type: ignore[index]


def score(model: object, data: Path) -> dict:
    """STS dev/test and the English task halves of one model."""
    import numpy as np

    evaluate = task_evaluator(data, ",".join(DEV_TASKS + TEST_TASKS))
    sts = {task: result["score"] for task, result in evaluate(model).items()}
    tasks = task_scores(model, data / "tasks")
    sts_dev = float(np.mean([sts[task] for task in DEV_TASKS]))
    task_dev = float(np.mean([dev for dev, _ in tasks.values()]))
    return {
        "sts": sts,
        "tasks": tasks,
        "sts_dev_mean": sts_dev,
        "task_dev_mean": task_dev,
        "dev_mean": (sts_dev + task_dev) / 2,
        "task_test_mean": float(np.mean([test for _, test in tasks.values()])),
    }


def agreement(model: object, members: list[object], names: list[str], texts: list[str]) -> dict[str, dict]:
    """Per member: how close its block of the (un-normalised) ensemble is to its own vectors, over ``texts``."""
    from sentence_transformers import SentenceTransformer

    from st_static.compression.members import cosine_agreement, member_reader

    raw = SentenceTransformer(modules=[model[0]], device="cpu").encode(texts, batch_size=1024)  # type: ignore[index]
    result, start = {}, 0
    for member, name, dim in zip(members, names, model[1].block_dims, strict=True):  # type: ignore[index]
        cosines = cosine_agreement(raw[:, start : start + dim], member_reader(member, name).encode(texts))
        start += dim
        result[name] = {
            "mean": float(cosines.mean()),
            "min": float(cosines.min()),
            "share_0.9999": float((cosines >= 0.9999).mean()),
            "share_0.99": float((cosines >= 0.99).mean()),
        }
    return result


def cost(folder: Path, texts: list[str], calls: int = 2_000) -> dict:
    """Load time, texts/s of ``st_static.encode`` and of a bare load, one-query p50 and size on disk of a folder."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    import st_static
    from st_static.compression import folder_size

    started = time.perf_counter()
    bare = SentenceTransformer(str(folder), device="cpu")
    bare_load = time.perf_counter() - started
    started = time.perf_counter()
    checked = st_static.load_model(folder)
    checked_load = time.perf_counter() - started
    st_static.encode(checked, texts[:1000])  # warm-up
    started = time.perf_counter()
    st_static.encode(checked, texts)
    fast = len(texts) / (time.perf_counter() - started)
    bare.encode(texts[:1000], batch_size=1024)
    started = time.perf_counter()
    bare.encode(texts, batch_size=1024)
    bare_rate = len(texts) / (time.perf_counter() - started)
    query = ["how do I reset my password"]
    for _ in range(50):
        st_static.encode(checked, query)
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        st_static.encode(checked, query)
        timings.append(time.perf_counter() - started)
    return {
        "size_mb": folder_size(folder) / 1e6,
        "bare_load_s": bare_load,
        "load_model_s": checked_load,
        "fast_texts_per_s": fast,
        "bare_texts_per_s": bare_rate,
        "one_query_p50_ms": 1000 * float(np.median(timings)),
    }


def cost_table(rows: dict[str, dict]) -> list[str]:
    lines = [
        "| model | size on disk | bare load | `st_static.load_model` | `st_static.encode` texts/s | bare "
        "`model.encode` texts/s (batch 1024) | one query p50 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, row in rows.items():
        lines.append(
            f"| {label} | {row['size_mb']:.1f} MB | {row['bare_load_s']:.2f} s | {row['load_model_s']:.2f} s | "
            f"{row['fast_texts_per_s']:,.0f} | {row['bare_texts_per_s']:,.0f} | {row['one_query_p50_ms']:.3f} ms |"
        )
    return lines


def grid_table(rows: list[dict], names: list[str]) -> list[str]:
    """The weights grid: one row per weight vector (``score`` rows with their ``weights``)."""
    label = "weights (" + ", ".join(names) + ")"
    return score_table(rows, label, lambda row: ", ".join(f"{w:g}" for w in row["weights"]))


def score_table(rows: list[dict], first: str, label: Callable[[dict], str]) -> list[str]:
    """A Markdown table of :func:`score` rows: the STS dev sets and task dev halves, their means (the best dev mean
    in bold), and the test columns (reported only); ``first`` heads the column of ``label(row)``."""
    tasks = list(ENGLISH_TASKS)
    header = [first, *DEV_TASKS, *(f"{task} dev" for task in tasks)]
    header += ["STS dev mean", "task dev mean", "dev mean", "stsb-en-test", "task test mean"]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    best = max(row["dev_mean"] for row in rows)
    for row in rows:
        cells = [label(row)]
        cells += [f"{row['sts'][task]:.2f}" for task in DEV_TASKS]
        cells += [f"{row['tasks'][task][0]:.2f}" for task in tasks]
        dev = f"{row['dev_mean']:.2f}"
        cells += [f"{row['sts_dev_mean']:.2f}", f"{row['task_dev_mean']:.2f}"]
        cells += [f"**{dev}**" if row["dev_mean"] == best else dev]
        cells += [f"{row['sts']['stsb-en-test']:.2f}", f"{row['task_test_mean']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--member", action="append", default=[], help="NAME=SPEC: folder or wordllama:CONFIG:DIM")
    parser.add_argument("--weights", action="append", default=[], help="one weight per member, comma-separated")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--fold-texts", type=Path, default=None, help="text file: fold scales and agreement lines")
    parser.add_argument("--cost", action="append", default=[], help="LABEL=FOLDER: only measure the cost of folders")
    parser.add_argument("--cost-texts", type=Path, default=Path("../shared/data/corpus/en.txt"))
    parser.add_argument("--fold-lines", type=int, default=20_000)
    parser.add_argument("--agreement-lines", type=int, default=1_000)
    parser.add_argument("--vocab-size", type=int, action="append", default=[], help="also score the chosen pruned")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.cost:
        texts = first_lines(args.cost_texts, 20_000)
        rows = {}
        for item in args.cost:
            label, _, folder = item.partition("=")
            log(f"cost of {label} ...")
            rows[label] = cost(Path(folder), texts)
        lines = [
            "# Cost of an ensemble beside the single table",
            "",
            f"Command: `{command_line('benchmarks.ensembles', argv)}`",
            f"Machine: {machine()[0]}; {len(texts):,} lines of `{args.cost_texts.name}`; one query: 2,000 calls after "
            "50 warm-up calls, p50.",
            "",
            *cost_table(rows),
        ]
        write_report(args.output, lines, rows)
        return
    if not (args.member and args.weights and args.data and args.fold_texts):
        parser.error("--member, --weights, --data and --fold-texts are needed (or --cost).")

    from st_static.compression import ensemble, fold_block_normalization, prune_vocabulary, read_member

    names = [item.partition("=")[0] for item in args.member]
    specs = [item.partition("=")[2] for item in args.member]
    started = time.perf_counter()
    members = [read_member(spec) for spec in specs]
    model = ensemble(members, names=[Path(spec).name if Path(spec).is_dir() else spec for spec in specs])
    build_seconds = time.perf_counter() - started
    log(f"union table: {model[0]} in {build_seconds:.0f} s")

    rows = []
    for text in args.weights:
        weights = [float(part) for part in text.split(",")]
        log(f"weights {weights} ...")
        row = {"weights": weights, **score(_with_weights(model, weights), args.data)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    chosen = max(rows, key=lambda row: row["dev_mean"])
    exact = _with_weights(model, chosen["weights"])
    used = [index for index, weight in enumerate(chosen["weights"]) if weight > 0]
    if len(used) > 1:  # the chosen members alone, as the shipped command builds them
        weights = [chosen["weights"][i] for i in used]
        exact = ensemble([members[i] for i in used], weights, names=[names[i] for i in used])
    folded = fold_block_normalization(exact, first_lines(args.fold_texts, args.fold_lines))
    forms = {"exact (BlockNormalize)": exact, "folded (Normalize)": folded}
    for size in args.vocab_size:
        forms[f"folded, {size:,} words"] = prune_vocabulary(folded, size)
    form_rows = {label: score(form, args.data) for label, form in forms.items()}
    agreement_texts = first_lines(args.fold_texts, args.agreement_lines, skip=args.fold_lines)
    agreements = agreement(exact, [members[i] for i in used], [names[i] for i in used], agreement_texts)

    lines = [
        "# Ensembles of different static models",
        "",
        f"Command: `{command_line('benchmarks.ensembles', argv)}`",
        f"Machine: {machine()[0]}. Members: " + ", ".join(f"{n} = `{s}`" for n, s in zip(names, specs, strict=True)),
        f"Union table: {model[0].num_words:,} rows ({model[0].num_vocabulary_words:,} words), built in "
        f"{build_seconds:.0f} s.",
        "",
        "## Weights, scored on dev (STS dev sets, task dev halves); test columns reported only",
        "",
        *grid_table(rows, names),
        "",
        f"Chosen on the dev mean: {', '.join(f'{n} {w:g}' for n, w in zip(names, chosen['weights'], strict=True))}.",
        "",
        "## The chosen ensemble: exact against folded",
        "",
        "| form | stsb-en-test | sick-dev | STS dev mean | task dev mean | task test mean |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, row in form_rows.items():
        lines.append(
            f"| {label} | {row['sts']['stsb-en-test']:.2f} | {row['sts']['sick-dev']:.2f} | {row['sts_dev_mean']:.2f} "
            f"| {row['task_dev_mean']:.2f} | {row['task_test_mean']:.2f} |"
        )
    lines += [
        "",
        f"## Each block against its member's own vectors ({len(agreement_texts):,} lines of `{args.fold_texts.name}`)",
        "",
        "| member | mean cosine | min | share >= 0.9999 | share >= 0.99 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, values in agreements.items():
        lines.append(
            f"| {name} | {values['mean']:.5f} | {values['min']:.4f} | {values['share_0.9999']:.3f} | "
            f"{values['share_0.99']:.3f} |"
        )
    write_report(
        args.output,
        lines,
        {"grid": rows, "chosen": chosen["weights"], "forms": form_rows, "agreement": agreements},
    )


if __name__ == "__main__":
    main()
