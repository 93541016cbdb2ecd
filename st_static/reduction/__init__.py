"""Step 2 of the method: sentence-level PCA with All-But-The-Top (ABTT) on the extracted word vectors."""
