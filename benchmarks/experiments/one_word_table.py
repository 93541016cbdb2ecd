"""Word vectors read another way: each word encoded alone by the teacher, instead of the mean of its token vectors
in corpus sentences. Writes a copy of a build's extraction stage whose rows point where the teacher's one-word
embedding points (each row keeps its norm from the contexts, which is how much the word weighs in a mean), so that
``st-static build ... --work-dir NEW_WORK`` with the original build's settings continues from it (completion, PCA,
distillation on the same teacher targets).

    python -m benchmarks.experiments.one_word_table --extraction WORK/extraction-KEY --teacher TEACHER \
        --work NEW_WORK [--prompt ""]
    st-static build --teacher TEACHER ...the original build's settings... --work-dir NEW_WORK --out OUT
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

import st_static


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extraction", type=Path, required=True, help="WORK/extraction-KEY of the original build")
    parser.add_argument("--teacher", required=True, help="the same teacher (a local folder)")
    parser.add_argument("--work", type=Path, required=True, help="new work folder for the continued build")
    parser.add_argument("--prompt", default="", help="the prompt the teacher reads each word with")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    destination = args.work / args.extraction.name
    args.work.mkdir(parents=True, exist_ok=True)
    if not destination.exists():  # the teacher targets are shared (hard links), the model is written anew
        shutil.copytree(args.extraction, destination, copy_function=os.link, ignore=shutil.ignore_patterns("model"))
    model = st_static.load_model(args.extraction / "model")
    words = model[0].vocabulary
    teacher = SentenceTransformer(args.teacher, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})
    rows = [index for index, word in enumerate(words) if word and not word.startswith("##")]
    alone = teacher.encode(
        [words[index] for index in rows],
        prompt=args.prompt or None,
        batch_size=args.batch_size,
        show_progress_bar=True,
        convert_to_numpy=True,
    ).astype(np.float32)
    table = model[0].embedding.weight.data[: len(words)].numpy().copy()
    norms = np.linalg.norm(table[rows], axis=1, keepdims=True)
    table[rows] = alone / np.maximum(np.linalg.norm(alone, axis=1, keepdims=True), 1e-12) * norms
    print(f"{len(rows)} of {len(words)} rows from one-word encodings")
    model[0].embedding.weight.data[: len(words)] = torch.from_numpy(table)
    st_static.save_model(model, destination / "model", force=True)


if __name__ == "__main__":
    main()
