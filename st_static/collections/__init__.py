"""Collections of texts on disk: streamed to vector shards (``embed_files``, ``st-static embed``), resumably, in one
process, several or on Ray, read back (``EmbeddingsFolder``) and mined for neighbours and near-duplicates."""
