"""Publishing a model folder: ``st-static push``, the upload allow-list and the bare-load proof."""
