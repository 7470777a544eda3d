"""The engine every chapter shares.

``settings`` (the one place the engine reads the environment), ``validate`` (argument
checks), ``seeds`` (the base seed and named streams under it), ``runtime`` (devices, threads,
the CPU / FULL run mode), ``experiment`` (the contract of every ``run``), ``models`` (the
transformer and its hook points), ``attention`` and ``decode`` (analysis and generation),
``ensemble`` (seeds trained as one program) and ``training`` (the loop). Nothing here knows
of the book: its progress line and smoke runs set ``settings`` from ``seqtheory.book``.
"""
