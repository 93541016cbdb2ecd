"""Translation pairs for any language from registry packages (Debian's archive, PyPI): ``st-static pairs``."""
