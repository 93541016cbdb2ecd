"""Write English-Chinese pairs in traditional characters from pairs in simplified ones (OpenCC), as a pair TSV.

Chinese is written in two scripts. The en-zh pairs of this project are almost all simplified (Debian's zh_CN
catalogues and manuals), while Chinese text in general, Tatoeba's half of it included, is often traditional: its
words then read rows that the pairs never trained. This script converts the Chinese side of pair files with OpenCC
(``s2t``: character by character, words kept) and writes each pair whose text changes. Use the file with
``st-static build --extra-pairs zh=FILE``: the pairs join the contrastive training only.

    pip install 'st-static[pairs]'   # OpenCC (Apache-2.0)
    python scripts/traditional_pairs.py DATA/parallel/en-zh.tsv DATA/parallel/extra/en-zh.tsv \
        --exclude DATA/tatoeba/cmn-eng.tsv --out models/en-zh-traditional.tsv
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path

from st_static.data_files import read_translation_pairs, write_translation_pairs
from st_static.errors import StStaticError
from st_static.files import check_file_destination


def converter(config: str) -> Callable[[str], str]:
    """The OpenCC conversion ``config`` (``s2t``, ``s2tw``, ``s2twp``, ...) as a function of a text."""
    try:
        import opencc
    except ImportError as error:
        raise SystemExit("error: this script needs OpenCC: pip install 'st-static[pairs]'") from error
    return opencc.OpenCC(config).convert


def traditional_pairs(pairs: Iterable[tuple[str, str]], convert: Callable[[str], str]) -> list[tuple[str, str]]:
    """``(english, converted chinese)`` for each pair whose Chinese side ``convert`` changes, each once."""
    converted: dict[tuple[str, str], None] = {}
    for english, chinese in pairs:
        traditional = convert(chinese)
        if traditional != chinese:
            converted.setdefault((english, traditional), None)
    return list(converted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", type=Path, nargs="+", help="en-zh pair files (TSV with a header, English first)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--config", default="s2t", help="the OpenCC conversion (default s2t: characters only)")
    parser.add_argument(
        "--exclude", type=Path, action="append", default=[], help="a pair file (e.g. Tatoeba's) whose texts no pair has"
    )
    args = parser.parse_args()
    try:
        check_file_destination(args.out, inputs=[*args.pairs, *args.exclude], what="--out file")  # before any work
        convert = converter(args.config)
        pairs = traditional_pairs((pair for path in args.pairs for pair in read_translation_pairs(path)), convert)
        if not pairs:
            raise SystemExit("error: no pairs: the conversion changed no Chinese text")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        written = write_translation_pairs(args.out, pairs, args.exclude)
    except (StStaticError, OSError) as error:  # a missing or malformed file, an unsafe --out: one line, no traceback
        raise SystemExit(f"error: {error}") from None
    print(f"wrote {written:,} pairs to {args.out} ({len(pairs) - written:,} left out by --exclude)")


if __name__ == "__main__":
    main()
