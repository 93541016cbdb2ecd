"""Check that st-static builds, loads, encodes and trains on a GPU, in a few minutes, with nothing to download.

    python -m benchmarks.gpu_check --out runs/gpu-check --corpus ../shared/data/corpus/en.txt [--lines 3000]

A small random BERT teacher is made on the spot from the words of the first ``--lines`` corpus lines, so no model
has to travel. On ``--device`` (default ``cuda``) it then runs, each step timed and independent of the others'
failures: ``st-static build --device``; the build with the default device; a bare ``SentenceTransformer`` load
against the CPU; ``st_static.load_model`` + ``st_static.encode`` against the CPU; both st-static losses forward and
backward; a short ``MultipleNegativesRankingLoss`` fine-tune, ``st_static.save_model`` and a reload; and the build
under ``torchrun --nproc-per-node 1``. It prints a table (step | ok/FAILED | seconds | detail) and writes it to
``OUT/gpu_check.md``; each build's output is kept in ``OUT/logs/``. Exit status: 0 when every step passed, 1 when
one failed, 2 when the device is CUDA and this machine has none (nothing is checked then). ``--device cpu`` runs
the same steps on the CPU (a smoke test of the script itself).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.sentence_transformer.modules import Pooling
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast, PrinterCallback

import st_static
from benchmarks.common import (
    BilingualContrastiveLoss,
    SimilarityDistillationLoss,
    default_corpus,
    load_model,
    log,
    save_model,
    split_words,
)

TEACHER_WORDS = 3000
"""Most frequent corpus words that become whole tokens of the random teacher (the rest splits into letters)."""
TOLERANCE = 1e-4
"""Largest difference allowed between vectors computed on the device and on the CPU."""
BUILD_OPTIONS = ["--dim", "32", "--min-sentences", "1", "--complete-words", "0", "--steps", "120"]
BUILD_OPTIONS += ["--batch-size", "32", "--validation-size", "64", "--eval-steps", "40", "--pca-sample-size", "400"]
"""A small build: the pipeline's every stage but the completion, in seconds."""
PROBE_TEXTS = ["the cat sat on the mat", "A quick brown fox.", "unknownword", "", "numbers 12 and 1990s"]


class StepFailed(Exception):
    """A step's check did not hold; its message is the table's detail."""


def make_random_teacher(folder: Path, sentences: list[str], hidden_size: int = 64, seed: int = 0) -> Path:
    """Save a 2-layer BERT with random weights and a WordPiece vocabulary of the corpus words as an ST folder."""
    counts: Counter[str] = Counter(word for sentence in sentences for word in split_words(sentence.lower()))
    letters = sorted({character for sentence in sentences for character in sentence.lower() if not character.isspace()})
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *letters, *(f"##{letter}" for letter in letters)]
    pieces += [word for word, _ in counts.most_common(TEACHER_WORDS) if word not in set(pieces)]
    tokenizer = Tokenizer(models.WordPiece({piece: index for index, piece in enumerate(pieces)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tokenizer.decoder = decoders.WordPiece()
    special = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
    hf_tokenizer = PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=128, **special)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(pieces),
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    BertModel(config).save_pretrained(folder / "hf")
    hf_tokenizer.save_pretrained(folder / "hf")
    transformer = Transformer(str(folder / "hf"), max_seq_length=128)
    teacher = SentenceTransformer(
        modules=[transformer, Pooling(hidden_size, pooling_mode="mean"), Normalize()], device="cpu"
    )
    teacher.save_pretrained(str(folder / "teacher"))
    return folder / "teacher"


class GpuCheck:
    """The steps, in order, and their results."""

    def __init__(self, out: Path, corpus: Path, device: str) -> None:
        self.out = out
        self.corpus = corpus
        self.device = device
        self.logs = out / "logs"
        self.rows: list[tuple[str, bool, float, str]] = []
        self.teacher: Path | None = None
        self.built: Path | None = None

    def run(self, name: str, step: Callable[[], str]) -> None:
        """Run one step; an exception marks it FAILED with its first line as the detail."""
        log(f"{name} ...")
        started = time.perf_counter()
        try:
            detail, passed = step(), True
        except Exception as error:  # every failure is a row of the report
            message = str(error).strip().splitlines()
            detail, passed = f"{type(error).__name__}: {message[-1] if message else ''}", False
        seconds = time.perf_counter() - started
        self.rows.append((name, passed, seconds, detail))
        log(f"{name}: {'ok' if passed else 'FAILED'} ({seconds:.1f} s) {detail}")

    def cli_build(self, name: str, launcher: list[str], extra: list[str]) -> Path:
        """Run ``st-static build`` through ``launcher``; the model folder, or StepFailed with the error line."""
        if self.teacher is None:
            raise StepFailed("no teacher (its step failed)")
        out = self.out / name
        arguments = ["build", "--teacher", str(self.teacher), "--corpus", str(self.corpus), "--out", str(out)]
        arguments += ["--work-dir", str(self.out / f"{name}.work"), *BUILD_OPTIONS, *extra]
        result = subprocess.run([*launcher, *arguments], capture_output=True, text=True, timeout=900)
        self.logs.mkdir(parents=True, exist_ok=True)
        (self.logs / f"{name}.txt").write_text(result.stdout + "\n--- stderr ---\n" + result.stderr, encoding="utf-8")
        if result.returncode != 0:
            lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
            raise StepFailed(f"exit {result.returncode}: {lines[-1] if lines else 'no output'} (logs/{name}.txt)")
        vectors = SentenceTransformer(str(out), device="cpu").encode(PROBE_TEXTS)
        if not np.isfinite(vectors).all():
            raise StepFailed("the built model gives non-finite vectors")
        return out

    def teacher_step(self, sentences: list[str]) -> str:
        self.teacher = make_random_teacher(self.out / "teacher", sentences)
        return f"random 2-layer BERT, hidden 64, from {len(sentences):,} corpus lines"

    def build_on_device(self) -> str:
        self.built = self.cli_build("build-device", [sys.executable, "-m", "st_static.cli"], ["--device", self.device])
        return describe(self.built)

    def build_default_device(self) -> str:
        built = self.cli_build("build-default", [sys.executable, "-m", "st_static.cli"], [])
        return f"{describe(built)} (the default: {'cuda' if torch.cuda.is_available() else 'cpu'})"

    def bare_load(self) -> str:
        path = self.model_path()
        on_device = SentenceTransformer(str(path), device=self.device).encode(PROBE_TEXTS)
        on_cpu = SentenceTransformer(str(path), device="cpu").encode(PROBE_TEXTS)
        return compare(on_device, on_cpu)

    def library_load(self) -> str:
        path = self.model_path()
        model = load_model(path, device=self.device)
        if model[0].embedding.weight.device.type != torch.device(self.device).type:
            raise StepFailed(f"the table is on {model[0].embedding.weight.device}, not {self.device}")
        on_device = st_static.encode(model, PROBE_TEXTS)
        through_st = model.encode(PROBE_TEXTS)
        on_cpu = st_static.encode(load_model(path, device="cpu"), PROBE_TEXTS)
        return f"st_static.encode {compare(on_device, on_cpu)}; model.encode {compare(through_st, on_cpu)}"

    def losses(self) -> str:
        model = load_model(self.model_path(), device=self.device)
        module = model[0]
        texts = [line for line in self.corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:16]
        teacher = torch.randn(len(texts), 48, device=self.device)
        results = []
        for loss, columns, labels in [
            (SimilarityDistillationLoss(model), [texts], teacher),
            (BilingualContrastiveLoss(model), [texts, texts[1:] + texts[:1]], None),
        ]:
            module.embedding.weight.grad = None
            features = [move(module.preprocess(column), self.device) for column in columns]
            value = loss(features, labels)
            value.backward()
            gradient = module.embedding.weight.grad
            if gradient is None or not torch.isfinite(value) or not torch.isfinite(gradient.to_dense()).all():
                raise StepFailed(f"{type(loss).__name__}: loss {value.item()} or its gradient is not finite")
            results.append(f"{type(loss).__name__} {value.item():.4f} on {value.device}")
        return "; ".join(results)

    def fine_tune(self) -> str:
        from datasets import Dataset

        model = load_model(self.model_path(), device=self.device)
        before = st_static.encode(model, PROBE_TEXTS)
        lines = [line for line in self.corpus.read_text(encoding="utf-8").splitlines() if line.strip()][:512]
        positives = [" ".join(line.split()[1:]) or line for line in lines]  # the line without its first word
        pairs = Dataset.from_dict({"anchor": lines, "positive": positives})
        with tempfile.TemporaryDirectory(prefix="gpu-check-") as scratch:
            args = SentenceTransformerTrainingArguments(
                output_dir=scratch,
                max_steps=20,
                per_device_train_batch_size=32,
                learning_rate=1e-2,
                save_strategy="no",
                report_to="none",
                use_cpu=self.device == "cpu",
                disable_tqdm=True,
            )
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=pairs, loss=MultipleNegativesRankingLoss(model)
            )
            trainer.remove_callback(PrinterCallback)  # no log dicts between the report's lines
            trainer.train()
        model.eval()
        trained_on = model[0].embedding.weight.device
        after = st_static.encode(model, PROBE_TEXTS)
        if np.allclose(after, before):
            raise StepFailed("the fine-tune left the vectors unchanged")
        saved = self.out / "fine-tuned"
        save_model(model, saved)
        reloaded = st_static.encode(load_model(saved, device=self.device), PROBE_TEXTS)
        return f"20 steps on {trained_on}; saved and reloaded: {compare(reloaded, after)}"

    def torchrun_build(self) -> str:
        torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
        launcher = [torchrun, "--nproc-per-node", "1", "-m", "st_static.cli"]
        return describe(self.cli_build("build-torchrun", launcher, ["--device", self.device]))

    def model_path(self) -> Path:
        if self.built is None:
            raise StepFailed("no model (the device build failed)")
        return self.built

    def report(self, header: list[str]) -> list[str]:
        lines = [*header, "", "| step | result | seconds | detail |", "| --- | --- | ---: | --- |"]
        for name, passed, seconds, detail in self.rows:
            lines.append(f"| {name} | {'ok' if passed else 'FAILED'} | {seconds:.1f} | {detail.replace('|', '/')} |")
        return lines


def move(features: dict, device: str) -> dict:
    """A feature dict with its tensors on ``device``."""
    return {key: value.to(device) if torch.is_tensor(value) else value for key, value in features.items()}


def compare(vectors: np.ndarray, reference: np.ndarray) -> str:
    """``max abs diff X``; StepFailed above :data:`TOLERANCE`."""
    difference = float(np.abs(np.asarray(vectors) - np.asarray(reference)).max())
    if not difference <= TOLERANCE:
        raise StepFailed(f"max abs diff {difference:.2e} to the CPU exceeds {TOLERANCE:g}")
    return f"max abs diff {difference:.1e}"


def describe(folder: Path) -> str:
    """What a built model folder records: vocabulary, dimension, stages, training steps."""
    config = json.loads((folder / "st_static_config.json").read_text(encoding="utf-8"))
    history = json.loads((folder / "training" / "training_history.json").read_text(encoding="utf-8"))
    from st_static.model.metadata import ModelMetadata

    recorded = ModelMetadata.from_dict(config["metadata"])
    best = history["best_validation_loss"]
    return (
        f"{recorded.vocab_size:,} words, stages {'+'.join(recorded.stages or [])}, {history['steps']} steps, "
        f"best validation loss {'none' if best is None else f'{best:.4f}'}"
    )


def device_description(device: str) -> str:
    if torch.device(device).type == "cuda":
        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA {torch.version.cuda})"
    return device


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the teacher, the models and the report")
    parser.add_argument("--corpus", type=Path, default=default_corpus(), help="one sentence per line")
    parser.add_argument("--lines", type=int, default=3000, help="corpus lines used (the first ones)")
    parser.add_argument("--device", default="cuda", help="device to check (cpu: a smoke test of this script)")
    args = parser.parse_args()

    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        print(f"No CUDA device on this machine (torch {torch.__version__}): nothing checked.")
        return 2
    if args.lines < 200:
        parser.error("--lines must be at least 200 (the build's validation split and PCA sample need them)")
    sentences = []
    with args.corpus.open(encoding="utf-8") as corpus:
        for line in corpus:
            if line.strip():
                sentences.append(line.strip())
            if len(sentences) == args.lines:
                break
    args.out.mkdir(parents=True, exist_ok=True)
    slice_path = args.out / "corpus.txt"
    slice_path.write_text("\n".join(sentences) + "\n", encoding="utf-8")

    check = GpuCheck(args.out, slice_path, args.device)
    check.run("random teacher", lambda: check.teacher_step(sentences))
    check.run(f"st-static build --device {args.device}", check.build_on_device)
    check.run("st-static build (default device)", check.build_default_device)
    check.run(f"bare SentenceTransformer on {args.device} vs cpu", check.bare_load)
    check.run(f"st_static.load_model + encode on {args.device} vs cpu", check.library_load)
    check.run("losses forward + backward", check.losses)
    check.run("MNRL fine-tune + save_model + reload", check.fine_tune)
    check.run("torchrun --nproc-per-node 1 st-static build", check.torchrun_build)

    header = [
        f"# st-static GPU check, {date.today().isoformat()}",
        "",
        f"Device: {device_description(args.device)}; torch {torch.__version__}; st-static {st_static.__version__}; "
        f"corpus: the first {len(sentences):,} lines of {args.corpus.name}.",
    ]
    lines = check.report(header)
    print("\n".join(lines))
    (args.out / "gpu_check.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    failed = [row[0] for row in check.rows if not row[1]]
    print(f"\n{len(check.rows) - len(failed)} of {len(check.rows)} steps ok; report: {args.out / 'gpu_check.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
