"""The paper's analyses of a word table (norms by part of speech, principal components, language separation) and
the Brown corpus part-of-speech converter; used by ``benchmarks.analysis_figures`` and ``benchmarks.crosslingual``."""
