"""The build's stages, one module each (extraction, completion, reduction, long texts, second teacher, refinement,
fallback, pieces, storage), all of one shape (:class:`~st_static.stages.base.Stage`); ``pipeline/run.py`` orders
them."""
