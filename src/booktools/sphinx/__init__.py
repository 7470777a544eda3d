"""The book's Sphinx extensions, listed in ``_config.yml`` under ``sphinx.extra_extensions``."""
