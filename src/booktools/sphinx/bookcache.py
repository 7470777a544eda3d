"""Sphinx extension: the build's execution cache, keyed per chapter on what it uses.

- ``config-inited``: the cache folder (:func:`booktools.cache.cache_path`).
- ``builder-inited``: with ``execute_notebooks: cache``, the chapters the cache lacks are
  executed first, in parallel over the cores (:mod:`booktools.execute`); a failure stops
  the build with its traceback.
- ``source-read``: each chapter's front matter gets its fingerprint in the ``kernelspec``
  (:func:`booktools.cache.fingerprint`), so myst-nb's cache lookup matches a chapter only
  while its code, the library modules it imports and its data files are unchanged.
- ``env-get-outdated``: a chapter whose fingerprint changed since the last build is read
  again (Sphinx alone re-reads only pages whose source changed, and would keep the old
  outputs of a chapter whose library module changed).
"""

from __future__ import annotations

from pathlib import Path

from sphinx.errors import ExtensionError

from booktools.cache import KEY, cache_path, fingerprint, log_execution


def _set_cache_path(app, config) -> None:
    config.nb_execution_cache_path = str(cache_path(Path(app.srcdir).resolve()))


def _execute_stale(app) -> None:
    if app.config.nb_execution_mode != "cache":
        return
    from booktools.execute import execute_stale

    root = Path(app.srcdir).resolve()
    results = execute_stale(root, timeout=int(app.config.nb_execution_timeout), log=print)
    failed = [(name, error) for name, _, error in results if error]
    if failed:
        raise ExtensionError(
            "chapters failed to execute:\n"
            + "\n\n".join(f"{name}:\n{error[-4000:]}" for name, error in failed)
        )


def keyed_front_matter(text: str, key: str) -> str:
    """A MyST notebook's text with ``kernelspec.seqtheory_uses: key`` in its front matter
    (unchanged when it has no kernelspec: not a notebook)."""
    if not text.startswith("---"):
        return text
    head, sep, rest = text.partition("\n---")
    if "\nkernelspec:\n" not in head:
        return text
    head = head.replace("\nkernelspec:\n", f'\nkernelspec:\n  {KEY}: "{key}"\n', 1)
    return head + sep + rest


def _keys(env) -> dict[str, str]:
    if not hasattr(env, "seqtheory_keys"):
        env.seqtheory_keys = {}
    return env.seqtheory_keys


def _key_source(app, docname: str, source: list[str]) -> None:
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md" or "```{code-cell}" not in source[0]:
        return
    root = Path(app.srcdir).resolve()
    key = fingerprint(path, root)
    _keys(app.env)[docname] = key
    source[0] = keyed_front_matter(source[0], key)
    if app.config.nb_execution_mode == "cache":
        from booktools.cache import cached

        if not cached(path, root, key):  # myst-nb executes it while reading: count it
            log_execution(root, path.stem, "build (myst-nb)")


def _outdated(app, env, added, changed, removed) -> list[str]:
    root = Path(app.srcdir).resolve()
    return [
        docname
        for docname, key in _keys(env).items()
        if docname not in changed
        and docname not in removed
        and Path(env.doc2path(docname)).is_file()
        and fingerprint(Path(env.doc2path(docname)), root) != key
    ]


def _purge(app, env, docname) -> None:
    _keys(env).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    _keys(env).update({d: k for d, k in _keys(other).items() if d in docnames})


def setup(app):
    app.connect("config-inited", _set_cache_path, priority=400)
    app.connect("builder-inited", _execute_stale)
    app.connect("source-read", _key_source)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
