"""A teacher's normalised sentence vectors of many texts, as distillation targets, in a pass that resumes.

The second teacher's pass (:mod:`st_static.extraction.target_mix`) and the long texts' pass
(:mod:`st_static.extraction.long_texts`) both run here. Batches are planned as the extraction's teacher pass plans
them (:func:`st_static.extraction.extract.plan_batches`: similar token counts, at most ``batch_tokens`` padded token
slots, since small batches run fastest on a CPU), and the texts are encoded in chunks of similar length, each kept
in a ``partial`` folder, so an interrupted pass resumes at its first missing chunk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from st_static.files import write_file_atomically, write_text_atomically

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

FINGERPRINT_FILE = "fingerprint.json"


def encode_targets(
    teacher: SentenceTransformer,
    texts: Sequence[str],
    prompt: str,
    partial: Path,
    *,
    chunk: int = 4096,
    batch_tokens: int = 1024,
    max_batch_size: int = 128,
    description: str = "Encoding targets",
) -> np.ndarray:
    """The teacher's L2-normalised vectors of ``texts`` (float32, in their order).

    Args:
        teacher: The teacher, on the device it should run on.
        texts: The texts (the teacher truncates each at its ``max_seq_length``).
        prompt: Put before every text (``""``: none).
        partial: Folder of the finished chunks; chunks of another pass (other texts or prompt) are removed.
        chunk: Texts per kept chunk.
        batch_tokens: Padded token slots per batch at most.
        max_batch_size: Texts per batch at most.
        description: The progress bar's label.
    """
    import torch

    from st_static.extraction.extract import plan_batches, teacher_token_counts
    from st_static.tensors import to_numpy

    partial.mkdir(parents=True, exist_ok=True)
    fingerprint = {"texts": len(texts), "first": texts[0] if texts else "", "prompt": prompt, "chunk": chunk}
    marker = partial / FINGERPRINT_FILE
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) != fingerprint:
        for stale in partial.glob("chunk-*.npy"):
            stale.unlink()
    write_text_atomically(marker, json.dumps(fingerprint))
    counts = teacher_token_counts(teacher, list(texts), prompt)
    order = np.argsort(counts, kind="stable")  # a chunk holds texts of similar length
    dim = teacher.get_embedding_dimension() or 0
    vectors = np.zeros((len(texts), dim), dtype=np.float32)
    teacher.eval()
    progress = tqdm(total=len(texts), desc=description, unit=" texts", mininterval=2.0)
    for start in range(0, len(texts), chunk):
        indices = order[start : start + chunk]
        path = partial / f"chunk-{start // chunk:06d}.npy"
        if path.is_file():
            vectors[indices] = np.load(path)
            progress.update(len(indices))
            continue
        batch_texts = [texts[index] for index in indices]
        block = np.zeros((len(batch_texts), dim), dtype=np.float32)
        with torch.inference_mode():
            for batch in plan_batches(batch_texts, batch_tokens, max_batch_size, counts[indices]):
                features = teacher.preprocess(batch.texts, prompt=prompt or None)
                features = {
                    key: value.to(teacher.device) if torch.is_tensor(value) else value
                    for key, value in features.items()
                }
                block[batch.indices] = to_numpy(teacher.forward(features)["sentence_embedding"], dtype=torch.float32)
                progress.update(len(batch.texts))
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
        write_file_atomically(path, lambda temporary, block=block: _save_array(temporary, block))
        vectors[indices] = block
    progress.close()
    return vectors


def _save_array(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:  # (np.save given a path would add ".npy" to it)
        np.save(handle, array)
