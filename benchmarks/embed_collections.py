"""Embedding and mining collections on disk (issue 50): ``st-static embed`` against in-memory ``st_static.encode``.

    python -m benchmarks.embed_collections MODEL_DIR [--corpus ../shared/data/corpus/en.txt] [--output]

Everything runs on generated files in a temporary folder (corpus lines repeated), the model loaded once:
1. speed: texts/s of ``st_static.encode`` over a list in memory, and of ``embed_files`` over the same lines in a
   file (one process; ``--workers 2``; Ray local with 2 workers), each run's vectors compared with the
   one-process run's;
2. resume: the one-process ``st-static embed`` run killed with SIGKILL after two finished shards, run again, its
   vectors compared with the uninterrupted run's;
3. memory: peak RSS of an ``st-static embed`` process at 1x, 10x and 100x input size;
4. mining: 100k lines with seeded near-duplicates (small edits of corpus lines): the pairs at cosine >= the
   threshold from all-pairs brute force (the truth) against ``dedup``'s HNSW search, its time and recall.
The machine may be shared: numbers are noisy, compare ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import st_static
from benchmarks.common import (
    REPO,
    RESULTS,
    EmbeddingsFolder,
    command_line,
    default_corpus,
    duplicate_groups,
    load_average,
    log,
    machine,
    near_duplicate_pairs,
    nearest_neighbours,
    write_report,
)

RESULT_STEM = "2026-11-27-embed-collections"
SHARD = 50_000
"""embed's default shard size."""
MEMORY_SCRIPT = """
import sys, time
from pathlib import Path
import st_static
start = time.perf_counter()
result = st_static.embed_files(sys.argv[1], sys.argv[2], sys.argv[3], show_progress_bar=False)
peak = next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
print(result.rows, time.perf_counter() - start, peak)
"""
"""The peak RSS of this process (VmHWM: ru_maxrss would keep the forking parent's peak across exec)."""


def corpus_lines(corpus: Path) -> list[str]:
    return [line for line in corpus.read_text(encoding="utf-8").split("\n") if line.strip()]


def write_repeated(path: Path, lines: list[str], count: int) -> Path:
    """A text file of ``count`` lines: the corpus lines repeated."""
    with path.open("w", encoding="utf-8") as handle:
        for start in range(0, count, len(lines)):
            handle.write("\n".join(lines[: min(len(lines), count - start)]) + "\n")
    return path


def same_vectors(first: Path, second: Path) -> bool:
    """Whether two embeddings folders hold the same row names and the same stored vectors, shard by shard."""
    a, b = EmbeddingsFolder(first), EmbeddingsFolder(second)
    if (a.rows, a.manifest.shards) != (b.rows, b.manifest.shards):
        return False
    return all(
        x.ids == y.ids and np.array_equal(x.vectors, y.vectors) for x, y in zip(a.shards(), b.shards(), strict=True)
    )


def cli(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "st_static.cli", "embed", *arguments]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def speed_rows(model_dir: Path, model: object, lines: list[str], work: Path, repeats: int, ray: bool) -> list[dict]:
    """Texts/s of encode in memory and of embed on the same lines, with the vectors compared."""
    path = write_repeated(work / "speed.txt", lines, len(lines))
    rows = []
    st_static.encode(model, lines[:1000])
    baselines = (("st_static.encode (one list in memory)", len(lines)), ("st_static.encode (lists of 50,000)", SHARD))
    for name, size in baselines:
        timings = []
        for _ in range(repeats):
            gc.collect()
            start = time.perf_counter()
            for first in range(0, len(lines), size):
                st_static.encode(model, lines[first : first + size])
            timings.append(time.perf_counter() - start)
        rows.append({"path": name, "texts_per_second": len(lines) / min(timings), "equal": "-"})
    encode_rate = rows[0]["texts_per_second"]
    runs = [
        ("embed_files, 1 process", {"model": model}),
        ("embed_files, --workers 2", {"model": str(model_dir), "workers": 2}),
    ]
    if ray:
        runs.append(
            ("embed_files, --engine ray (local, 2 workers)", {"model": str(model_dir), "workers": 2, "engine": "ray"})
        )
    reference = work / "one-process"
    for name, options in runs:
        best, equal = float("inf"), True
        for _ in range(1 if "ray" in options.values() else repeats):
            out = reference if not reference.exists() else work / "run"
            settings = dict(options)
            gc.collect()
            result = st_static.embed_files(settings.pop("model"), path, out, show_progress_bar=False, **settings)
            best = min(best, result.seconds)
            if out != reference:
                equal = equal and same_vectors(reference, out)
                shutil.rmtree(out)
        log(f"{name}: {len(lines) / best:,.0f} texts/s")
        rows.append({"path": name, "texts_per_second": len(lines) / best, "equal": "yes" if equal else "NO"})
    for row in rows:
        row["share_of_encode"] = row["texts_per_second"] / encode_rate
    return rows


def resume_check(model_dir: Path, work: Path, shard_size: int) -> dict:
    """SIGKILL the one-process run after two finished shards, run it again, compare with the uninterrupted run of
    :func:`speed_rows` (same file, same arguments)."""
    out = work / "resumed"
    arguments = [str(model_dir), str(work / "speed.txt"), "--out", str(out), "--quiet", "--shard-size", str(shard_size)]
    process = subprocess.Popen(cli(*arguments), env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest = out / "manifest.json"
    shards = 0
    while process.poll() is None:
        try:
            shards = json.loads(manifest.read_text())["progress"]["shards"]
        except (OSError, ValueError, KeyError):
            shards = 0
        if shards >= 2:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait()
    killed_at = EmbeddingsFolder(out).rows
    leftovers = len(list(out.glob(".shard-*")))
    rerun = subprocess.run(cli(*arguments), env=child_env(), capture_output=True, text=True, check=True)
    return {
        "killed": process.returncode == -signal.SIGKILL,
        "rows_before_kill": killed_at,
        "temporary_files_left": leftovers,
        "rerun": rerun.stdout.strip().splitlines()[-1].split(": ", 1)[-1],  # without the scratch folder's path
        "equal": same_vectors(out, work / "one-process"),  # the uninterrupted run of the speed rows
    }


def memory_rows(model_dir: Path, lines: list[str], work: Path, base: int, sizes: list[int]) -> list[dict]:
    rows = []
    for size in sizes:
        path = write_repeated(work / f"memory-{size}x.txt", lines, base * size)
        out = work / f"memory-{size}x"
        result = subprocess.run(
            [sys.executable, "-c", MEMORY_SCRIPT, str(model_dir), str(path), str(out)],
            env=child_env(),
            capture_output=True,
            text=True,
            check=True,
        )
        count, seconds, peak_kib = result.stdout.split()
        rows.append(
            {
                "size": f"{size}x",
                "texts": int(count),
                "peak_rss_mib": int(peak_kib) / 1024,
                "texts_per_second": int(count) / float(seconds),
            }
        )
        log(f"memory {size}x: {rows[-1]}")
        shutil.rmtree(out)
        path.unlink()
    for row in rows:
        row["vs_1x"] = row["peak_rss_mib"] / rows[0]["peak_rss_mib"]
    return rows


def near_duplicate_lines(lines: list[str], count: int, share: float, seed: int) -> list[str]:
    """``count`` lines: distinct corpus lines, and ``share`` of them replaced by small edits of other lines (a word
    dropped, repeated, swapped with its neighbour or replaced; case or punctuation changed)."""
    rng = np.random.default_rng(seed)
    originals = list(dict.fromkeys(line for line in lines if len(line.split()) >= 6))[:count]
    edited = int(count * share)
    result = originals[: count - edited]
    vocabulary = " ".join(originals[:5000]).split()
    for source in rng.choice(len(result), size=edited, replace=True):
        words = result[source].split()
        position = int(rng.integers(len(words)))
        kind = int(rng.integers(5))
        if kind == 0:
            del words[position]
        elif kind == 1:
            words.insert(position, words[position])
        elif kind == 2 and position + 1 < len(words):
            words[position], words[position + 1] = words[position + 1], words[position]
        elif kind == 3:
            words[position] = vocabulary[int(rng.integers(len(vocabulary)))]
        else:
            words[0] = words[0].upper() if words[0].islower() else words[0].lower()
            words[-1] = words[-1].rstrip(".!?") + "!"
        result.append(" ".join(words))
    return result


def exact_pairs(vectors: np.ndarray, threshold: float, block: int = 4096) -> set[tuple[int, int]]:
    """Every pair ``a < b`` at cosine >= ``threshold`` (all pairs, brute force in blocks)."""
    norms = np.linalg.norm(vectors, axis=1)
    unit = np.where(norms[:, None] > 0, vectors / np.maximum(norms, 1e-30)[:, None], 0).astype(np.float32)
    pairs: set[tuple[int, int]] = set()
    for start in range(0, len(unit), block):
        scores = unit[start : start + block] @ unit.T
        rows, columns = np.nonzero(scores >= threshold)
        rows += start
        keep = rows < columns
        pairs.update(zip(rows[keep].tolist(), columns[keep].tolist(), strict=True))
    return pairs


def mining_rows(model: object, lines: list[str], count: int, threshold: float, k: int) -> tuple[list[dict], dict]:
    texts = near_duplicate_lines(lines, count, share=0.05, seed=0)
    vectors = st_static.encode(model, texts)
    start = time.perf_counter()
    truth = exact_pairs(vectors, threshold)
    brute_seconds = time.perf_counter() - start
    rows = [{"search": "all pairs, brute force (the truth)", "seconds": brute_seconds, "pairs": len(truth)}]
    for name, exact in (("exact k-NN (blocked matrix product)", True), ("HNSW k-NN (USearch, dedup's default)", False)):
        start = time.perf_counter()
        found = nearest_neighbours(vectors, k=k, exact=exact)
        first, second, _ = near_duplicate_pairs(found, threshold)
        groups = duplicate_groups(len(vectors), first, second)
        seconds = time.perf_counter() - start
        pairs = set(zip(first.tolist(), second.tolist(), strict=True))
        grouped = sum(1 for a, b in truth if groups[a] >= 0 and groups[a] == groups[b])
        rows.append(
            {
                "search": name,
                "seconds": seconds,
                "pairs": len(pairs),
                "pair_recall": len(pairs & truth) / max(len(truth), 1),
                "group_recall": grouped / max(len(truth), 1),
            }
        )
        log(f"mining {name}: {rows[-1]}")
    setting = {"lines": len(texts), "edited": int(count * 0.05), "threshold": threshold, "k": k}
    return rows, setting


def plot(path: Path, speed: list[dict], memory: list[dict], mining: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    names = [row["path"].replace("embed_files, ", "embed ").replace("st_static.", "") for row in speed]
    axes[0].barh(names[::-1], [row["texts_per_second"] for row in speed][::-1], color="#4c72b0")
    axes[0].set_xlabel("texts/s")
    axes[0].set_title("Speed on the same lines")
    axes[1].plot([row["texts"] for row in memory], [row["peak_rss_mib"] for row in memory], "o-")
    axes[1].set_xscale("log")
    axes[1].set_ylim(0, max(row["peak_rss_mib"] for row in memory) * 1.3)
    axes[1].set_xlabel("texts in the input")
    axes[1].set_ylabel("peak RSS (MiB)")
    axes[1].set_title("Memory of st-static embed")
    axes[2].bar([row["search"].split(" (")[0] for row in mining], [row["seconds"] for row in mining], color="#dd8452")
    axes[2].set_ylabel("seconds")
    axes[2].set_title("Near-duplicate search, 100k lines")
    for index, row in enumerate(mining):
        if "pair_recall" in row:
            axes[2].annotate(f"recall {row['pair_recall']:.3f}", (index, row["seconds"]), ha="center", va="bottom")
    axes[2].tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def portable_arguments(model_name: str) -> list[str]:
    """This run's arguments as the report shows them: the model by its folder name, no scratch folder."""
    arguments, skip = [model_name], False
    for argument in sys.argv[2:]:
        if skip or argument.startswith("--work"):
            skip = argument == "--work"
            continue
        arguments.append(argument)
    return arguments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path, help="a static model folder")
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--speed-lines", type=int, default=1_000_000, help="lines of the speed and resume file")
    parser.add_argument("--base-lines", type=int, default=50_000, help="lines of the 1x memory file")
    parser.add_argument("--sizes", default="1,10,100", help="memory input sizes, in multiples of --base-lines")
    parser.add_argument("--dedup-lines", type=int, default=100_000)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray row out")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--output", action="store_true", help=f"write benchmarks/results/{RESULT_STEM}.md/.png/.json")
    args = parser.parse_args()

    lines = corpus_lines(args.corpus)
    model = st_static.load_model(args.model)
    with tempfile.TemporaryDirectory(prefix="embed-collections-", dir=args.work) as scratch:
        work = Path(scratch)
        speed_lines = (lines * (args.speed_lines // len(lines) + 1))[: args.speed_lines]
        speed = speed_rows(args.model, model, speed_lines, work, args.repeats, not args.no_ray)
        resume = resume_check(args.model, work, SHARD)
        log(f"resume: {resume}")
        memory = memory_rows(args.model, lines, work, args.base_lines, [int(size) for size in args.sizes.split(",")])
    mining, setting = mining_rows(model, lines, args.dedup_lines, args.threshold, args.k)

    description, _ = machine()
    report = [
        "# Embedding and mining collections (`st-static embed`, `dedup`)",
        "",
        f"Command: `{command_line('benchmarks.embed_collections', portable_arguments(args.model.name))}`  ",
        f"Machine: {description}; load average at the end {load_average()}.  ",
        f"Model: `{args.model.name}`; texts: lines of `{args.corpus.name}`.",
        "",
        f"## Speed ({len(speed_lines):,} lines, the same texts; best of {args.repeats})",
        "",
        "| path | texts/s | share of encode | vectors equal the 1-process run's |",
        "| --- | ---: | ---: | --- |",
    ]
    report += [
        f"| {row['path']} | {row['texts_per_second']:,.0f} | {row['share_of_encode']:.0%} | {row['equal']} |"
        for row in speed
    ]
    report += [
        "",
        "Share of encode: of `st_static.encode` over the whole list (the first row). embed_files is timed whole "
        "(model fingerprint, reading, encoding, writing Parquet shards of 50,000 float32 vectors); `--workers 2` "
        "and Ray include starting their processes and loading the model in each (several seconds of the run).",
        "",
        "## Resume after SIGKILL",
        "",
        f"The 1-process `st-static embed` of the speed file killed (SIGKILL: {resume['killed']}) after "
        f"{resume['rows_before_kill']:,} rows in finished shards ({resume['temporary_files_left']} temporary file(s) "
        f"of the shard being written left); the same command again wrote `{resume['rerun']}`; final vectors equal an "
        f"uninterrupted run's: **{'yes' if resume['equal'] else 'NO'}**.",
        "",
        f"## Peak memory of `st-static embed` ({args.base_lines:,} lines = 1x; float32 Parquet shards)",
        "",
        "| input | texts | peak RSS (MiB) | vs 1x | texts/s |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    report += [
        f"| {row['size']} | {row['texts']:,} | {row['peak_rss_mib']:,.0f} | {row['vs_1x']:.2f} | "
        f"{row['texts_per_second']:,.0f} |"
        for row in memory
    ]
    report += [
        "",
        f"## Near-duplicate mining ({setting['lines']:,} lines, {setting['edited']:,} of them small edits of others; "
        f"cosine >= {setting['threshold']}, k = {setting['k']})",
        "",
        "| search | seconds | pairs | pair recall | group recall |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in mining:
        recall = (
            f"{row['pair_recall']:.4f} | {row['group_recall']:.4f}" if "pair_recall" in row else "1 (the truth) | -"
        )
        report.append(f"| {row['search']} | {row['seconds']:.1f} | {row['pairs']:,} | {recall} |")
    report += [
        "",
        "Pair recall: the truth's pairs that the search found itself; group recall: the truth's pairs whose rows "
        "end up in one near-duplicate group (what a deduplication acts on). The times of the k-NN rows include "
        "exact rescoring, the pairs and the groups.",
    ]
    output = RESULTS / f"{RESULT_STEM}.md" if args.output else None
    rows = {"speed": speed, "resume": resume, "memory": memory, "mining": mining, "mining_setting": setting}
    write_report(output, report, rows)
    if output is not None:
        plot(output.with_suffix(".png"), speed, memory, mining)


if __name__ == "__main__":
    main()
