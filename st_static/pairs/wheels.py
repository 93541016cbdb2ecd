"""Translation pairs from data that PyPI packages ship: auf-deutsch 0.1.1 (German A1/A2 phrases, dialogues and short
stories, MIT) and hsk-sentences-audio 1.0.0 (graded Chinese HSK sentences, CC BY-SA 4.0). Their wheels are downloaded
with pip (never installed, never imported) into st-static's cache folder and read as zip files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from st_static.bundled import cache_dir
from st_static.data_files import comparable_text
from st_static.pairs.catalogues import PairsError, script_prefixes
from st_static.pairs.debian import Rows
from st_static.pairs.everyday import everyday_pair


@dataclass(frozen=True)
class WheelSource:
    """A PyPI package whose wheel holds translation pairs, and how to read them from it."""

    package: str
    version: str
    language: str
    license: str
    read: Callable[[zipfile.ZipFile], list[tuple[str, str]]]
    """The ``(english, other)`` pairs in the opened wheel."""

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


def _pairs_in(value: Any, english: str, other: str) -> Iterator[tuple[str, str]]:
    """Every ``(value[english], value[other])`` of the objects nested anywhere in the JSON ``value``."""
    if isinstance(value, dict):
        if isinstance(value.get(english), str) and isinstance(value.get(other), str):
            yield value[english], value[other]
        for item in value.values():
            yield from _pairs_in(item, english, other)
    elif isinstance(value, list):
        for item in value:
            yield from _pairs_in(item, english, other)


def read_auf_deutsch(wheel: zipfile.ZipFile) -> list[tuple[str, str]]:
    """The ``en``/``de`` pairs of every content file (phrases, their examples and variations, dialogue lines, story
    paragraphs, listening exercises, grammar examples), in file order."""
    names = sorted(
        name for name in wheel.namelist() if name.startswith("auf_deutsch/content/") and name.endswith(".json")
    )
    return [pair for name in names for pair in _pairs_in(json.loads(wheel.read(name)), "en", "de")]


def read_hsk_sentences(wheel: zipfile.ZipFile) -> list[tuple[str, str]]:
    """The English translation and the (simplified) Chinese of every HSK sentence, in the package's order."""
    records = json.loads(wheel.read("hsk_sentences_audio/data/sentences.json"))
    return [
        (record["translation"]["en"], record["chinese"])
        for record in records
        if isinstance(record.get("translation"), dict)
        and isinstance(record["translation"].get("en"), str)
        and isinstance(record.get("chinese"), str)
    ]


WHEEL_SOURCES = (
    WheelSource("auf-deutsch", "0.1.1", "de", "MIT", read_auf_deutsch),
    WheelSource("hsk-sentences-audio", "1.0.0", "zh", "CC BY-SA 4.0", read_hsk_sentences),
)


def wheel_sources(language: str) -> list[WheelSource]:
    """The PyPI sources of ``language`` (``zh`` for ``zh_CN`` too)."""
    base = re.split(r"[_@-]", language)[0]
    if base == "zh" and language not in ("zh", "zh_CN", "zh-CN"):  # the HSK sentences are simplified Chinese
        return []
    return [source for source in WHEEL_SOURCES if source.language == base]


def default_wheel_cache() -> Path:
    """``wheels/`` in st-static's cache folder."""
    return cache_dir() / "wheels"


def download_wheel(source: WheelSource, cache: Path) -> Path:
    """``source``'s wheel in ``cache``, downloaded with pip (its index and proxy settings) unless it is there already.

    Raises:
        PairsError: If pip cannot download it.
    """
    stem = source.package.replace("-", "_")
    cached = sorted(cache.glob(f"{stem}-{source.version}-*.whl"))
    if cached:
        return cached[-1]
    cache.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    result = subprocess.run([*command, "--dest", str(cache), source.requirement], capture_output=True, text=True)
    cached = sorted(cache.glob(f"{stem}-{source.version}-*.whl"))
    if result.returncode != 0 or not cached:
        last_line = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise PairsError(f"{source.requirement}: could not download it from PyPI ({last_line}).")
    return cached[-1]


def wheel_rows(source: WheelSource, wheel: Path, language: str) -> Rows:
    """The everyday pairs of ``source`` read from its ``wheel`` (source name: the package), each pair once.

    Raises:
        PairsError: If the wheel is not a readable zip file or lacks the files its reader expects.
    """
    prefixes = script_prefixes(language)
    rows: dict[tuple[str, str], tuple[str, str, str]] = {}
    try:
        with zipfile.ZipFile(wheel) as archive:
            pairs = source.read(archive)
    except (zipfile.BadZipFile, KeyError, ValueError) as error:  # ValueError: JSON that does not parse
        raise PairsError(f"{wheel.name}: not the expected {source.requirement} wheel ({error}).") from error
    for english, other in pairs:
        if (pair := everyday_pair(english, other, prefixes)) is not None:
            rows.setdefault((comparable_text(pair[0]), comparable_text(pair[1])), (source.package, *pair))
    print(f"{source.requirement} (PyPI, {source.license}): {len(rows):,} pairs of {len(pairs):,}")
    return list(rows.values())
