"""Learning partitions from context: planted problems, exact recovery by SAT, scoring.

Setting (our reading of Buchholz, NeurIPS 2024): there are ``I`` groups (positions), each
with ``N`` tokens; group ``i`` has a hidden partition ``Pi_i`` of its tokens into ``K``
classes.  A sample takes one token from every group, ``x = (x_1, ..., x_I)``, and its label
depends on the tokens only through their classes: ``y = g(Pi_1(x_1), ..., Pi_I(x_I))``.
From samples, recover the partitions.

* :func:`planted_problem` draws partitions (balanced or not) and a class-level function g.
* :func:`sample` draws labelled samples (uniform tokens, optional label noise).
* :func:`solve_partitions` encodes "partitions (and g, if unknown) consistent with all
  samples" as CNF and solves it with a SAT solver (python-sat); a second solve with the
  found partition blocked decides whether the answer is unique.
* :func:`same_partition`, :func:`adjusted_rand_index` compare partitions up to relabelling;
  :func:`coverage_probability` is the coupon-collector bound (every token must be seen).
* :func:`train_embeddings` fits token embeddings and a multilinear core by gradient descent
  (through :func:`seqtheory.core.training.train`), :func:`kmeans` reads classes off them.

The chapter's experiments share one shape (:mod:`seqtheory.core.experiment`): a
:class:`PartitionSetup` (CPU and FULL sizes in :data:`SETUP`) goes into
:func:`run_thresholds` (exact recovery by SAT), :func:`run_effort` (solver effort) and
:func:`run_gradient_descent`, each called as ``(setup, *, seed, device, progress)`` or
``(setup, ctx)`` and returning a :class:`~seqtheory.core.experiment.RunInfo` dataclass; their
random draws come from the named streams of :data:`STREAMS`.  The SAT experiments run on the
CPU, over a pool of worker processes under FULL (``workers``: one process per core), instance
by instance with the same results as one process; gradient descent runs on ``device``.
"""

from __future__ import annotations

import gc
import itertools
import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
from pysat.solvers import Solver

from .core.experiment import Experiment, RunInfo, Streams, experiment
from .core.runtime import Sizes, check_device, is_full, progress_bar, to_numpy
from .core.seeds import make_generator, make_rng
from .core.training import History, train
from .core.validate import check_choice, check_float, check_int

#: The random streams of the experiments (logical seed = offset + index, under the base seed):
#: ``problems`` draws planted instance t (:func:`run_thresholds`, :func:`run_effort`) or r
#: (:func:`run_gradient_descent`); ``samples`` the SAT instances' samples; ``graphs`` the
#: random graphs of :func:`run_effort`; ``gd_samples`` the noisy training samples of gradient
#: descent; ``weights`` its initial weights; ``kmeans`` the k-means starts.
STREAMS = Streams(problems=0, samples=10_000, graphs=0, gd_samples=20_000, weights=0, kmeans=0)

__all__ = [
    "PartitionProblem",
    "planted_problem",
    "sample",
    "encode_cnf",
    "solve_partitions",
    "g_symmetries",
    "recovery_threshold",
    "prefix_grid",
    "survival_prediction",
    "separation_rates",
    "single_token_moves",
    "class_separation",
    "SatResult",
    "canonical",
    "same_partition",
    "adjusted_rand_index",
    "coverage_probability",
    "colouring_instance",
    "random_graph",
    "solver_effort",
    "Multilinear",
    "EmbeddingFit",
    "train_embeddings",
    "kmeans",
    "PartitionSetup",
    "SETUP",
    "STREAMS",
    "samples_for",
    "ThresholdResult",
    "run_thresholds",
    "EffortResult",
    "run_effort",
    "GDCell",
    "GDResult",
    "run_gradient_descent",
]

G_KINDS = ("binary", "ternary", "gaussian")


def _as_rng(seed) -> np.random.Generator:
    """``seed`` as a NumPy Generator: an int goes through :func:`~seqtheory.core.seeds.make_rng`
    (so it is combined with the book's base seed); a Generator is used as it is."""
    return seed if isinstance(seed, np.random.Generator) else make_rng(seed)


@dataclass
class PartitionProblem:
    """Planted partitions ``labels`` (I, N) with values in 0..K-1, and the table ``g``
    of shape (K,) * I giving the label of every class tuple."""

    labels: np.ndarray
    g: np.ndarray
    K: int
    kind: str

    @property
    def I(self) -> int:  # noqa: E743 - the paper's name for the number of groups
        return self.labels.shape[0]

    @property
    def N(self) -> int:
        return self.labels.shape[1]


def planted_problem(
    N: int,
    K: int = 3,
    I: int = 3,
    *,
    kind: str = "binary",
    balanced: bool = True,
    seed=0,
) -> PartitionProblem:
    """Random partitions of N tokens into K classes per group, and a random g.

    Balanced partitions have class sizes differing by at most one; imbalanced ones draw
    class proportions from Dirichlet(1) (every class keeps at least one token).  ``kind``
    ``"binary"`` draws g uniformly from {0, 1} (redrawn until g depends on every group and
    separates every pair of classes), ``"ternary"`` from {0, 1, 2}, ``"gaussian"`` from
    N(0, 1).  ``seed``: an int (combined with the base seed) or a NumPy Generator.
    """
    N = check_int("N", N, minimum=1)
    K = check_int("K", K, minimum=2)
    I = check_int("I", I, minimum=1)
    check_choice("kind", kind, G_KINDS)
    if N < K:
        raise ValueError(f"N must be >= K (every class needs a token), got N={N} < K={K}")
    rng = _as_rng(seed)
    labels = np.empty((I, N), dtype=np.int64)
    for i in range(I):
        if balanced:
            labels[i] = rng.permutation(np.arange(N) % K)
        else:
            sizes = 1 + rng.multinomial(N - K, rng.dirichlet(np.ones(K)))
            labels[i] = rng.permutation(np.repeat(np.arange(K), sizes))
    shape = (K,) * I
    for _ in range(1000):
        if kind == "gaussian":
            g = rng.standard_normal(shape)
        else:
            g = rng.integers(0, 2 if kind == "binary" else 3, size=shape)
        if _identifiable(g):
            break
    else:  # pragma: no cover - practically impossible for K, I >= 2
        raise RuntimeError("could not draw an identifiable g")
    return PartitionProblem(labels=labels, g=g, K=K, kind=kind)


def _identifiable(g: np.ndarray) -> bool:
    """True if, in every group, any two classes differ somewhere in g (else they could be
    merged and the partition would not be identifiable)."""
    for axis in range(g.ndim):
        slices = np.moveaxis(g, axis, 0).reshape(g.shape[axis], -1)
        for a in range(len(slices)):
            for b in range(a + 1, len(slices)):
                if np.array_equal(slices[a], slices[b]):
                    return False
    return True


def sample(
    problem: PartitionProblem, S: int, *, seed=0, noise: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``S`` samples: tokens (S, I), uniform in each group, and labels (S,).

    With ``noise > 0`` a fraction of the discrete labels is replaced by a random other
    value (binary/ternary g), or Gaussian noise of that std is added (gaussian g).
    ``seed``: an int (combined with the base seed) or a NumPy Generator.
    """
    S = check_int("S", S, minimum=1)
    noise = check_float("noise", noise, low=0.0, high=1.0)
    rng = _as_rng(seed)
    x = rng.integers(0, problem.N, size=(S, problem.I))
    classes = problem.labels[np.arange(problem.I), x]  # (S, I)
    y = problem.g[tuple(classes.T)]
    if noise > 0:
        if problem.kind == "gaussian":
            y = y + noise * rng.standard_normal(S)
        else:
            values = 2 if problem.kind == "binary" else 3
            flip = rng.random(S) < noise
            y = np.where(flip, (y + rng.integers(1, values, size=S)) % values, y)
    return x, y


# ------------------------------------------------------------------------------------ SAT
@dataclass
class SatResult:
    """Outcome of :func:`solve_partitions`."""

    status: str  # "unique", "ambiguous", "unsatisfiable" or "satisfiable"
    labels: np.ndarray | None  # a consistent partition (I, N), canonical labels
    g: np.ndarray | None  # the g found alongside it
    seconds: float  # solver time (both solves)
    n_vars: int = 0
    n_clauses: int = 0
    alternative: np.ndarray | None = field(default=None, repr=False)


def encode_cnf(
    x: np.ndarray,
    y: np.ndarray,
    N: int,
    K: int,
    *,
    g: np.ndarray | None = None,
    symmetry_breaking: bool = True,
    shared: bool = False,
) -> tuple[list[list[int]], dict]:
    """CNF clauses for "there are partitions (and, if g is None, a g) consistent with
    the samples".  Returns ``(clauses, layout)``; variables are 1-based integers.

    Variables: ``v(i, n, c)`` — token n of group i is in class c (exactly one c per
    token).  With g known, each sample forbids every class tuple whose g value differs from
    its label.  With g unknown (binary labels only), a variable per class tuple holds
    g(c) and each sample ties it to its label.  Symmetry breaking (g unknown): classes are
    numbered in order of first appearance in each group, so every partition has exactly one
    labelling.  ``shared=True`` makes all groups use one partition (the setting of the
    reduction from graph colouring).
    """
    x, y, N, K = _check_samples(x, y, N, K)
    I = x.shape[1]
    P = 1 if shared else I  # number of distinct partitions
    n_token_vars = P * N * K
    clauses = _one_class_clauses(P, N, K)
    tuples = _class_tuples(K, I)
    if g is not None:
        g = np.asarray(g)
        if g.shape != (K,) * I:
            raise ValueError(f"g must have shape {(K,) * I}, got {g.shape}")
        clauses += _sample_clauses(x, y, N, K, g, shared=shared).tolist()
        n_vars = n_token_vars
    else:
        clauses += _g_clauses(x, y, N, K, tuples, shared=shared)
        n_vars = n_token_vars + len(tuples)
        if symmetry_breaking:
            clauses += _precedence_clauses(P, N, K)
    layout = {"N": N, "K": K, "I": P, "n_vars": n_vars, "tuples": tuples, "g_known": g is not None}
    return clauses, layout


def _check_samples(x, y, N, K) -> tuple:
    """``(x, y, N, K)`` of :func:`encode_cnf` checked: x (S, I) integer tokens in 0..N-1,
    y (S,)."""
    if not np.issubdtype(np.asarray(x).dtype, np.integer):
        raise TypeError(f"x must hold integer token ids, got dtype {np.asarray(x).dtype}")
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y)
    S, _ = x.shape
    N, K = check_int("N", N, minimum=1), check_int("K", K, minimum=2)
    if y.shape != (S,):
        raise ValueError(f"y must have shape ({S},), got {y.shape}")
    if x.min() < 0 or x.max() >= N:
        raise ValueError(f"tokens must lie in 0..{N - 1}")
    return x, y, N, K


def _var(i: int, n: int, c: int, N: int, K: int) -> int:
    """The variable ``v(i, n, c)``: token n of partition i is in class c."""
    return 1 + (i * N + n) * K + c


def _one_class_clauses(P: int, N: int, K: int) -> list[list[int]]:
    """Exactly one class per token of each of the P partitions."""
    clauses: list[list[int]] = []
    for i in range(P):
        for n in range(N):
            clauses.append([_var(i, n, c, N, K) for c in range(K)])
            clauses += [
                [-_var(i, n, a, N, K), -_var(i, n, b, N, K)]
                for a in range(K)
                for b in range(a + 1, K)
            ]
    return clauses


def _precedence_clauses(P: int, N: int, K: int) -> list[list[int]]:
    """Value precedence (symmetry breaking): class c appears after class c-1."""
    clauses: list[list[int]] = []
    for i in range(P):
        clauses.append([_var(i, 0, 0, N, K)])
        for n in range(1, N):
            for c in range(1, K):
                clauses.append([-_var(i, n, c, N, K)] + [_var(i, m, c - 1, N, K) for m in range(n)])
    return clauses


def _class_tuples(K: int, I: int) -> np.ndarray:
    """Every class tuple (K ** I, I), the last group's class varying fastest."""
    return np.array(np.meshgrid(*[np.arange(K)] * I, indexing="ij")).reshape(I, -1).T


def _tuple_literals(
    x: np.ndarray, N: int, K: int, tuples: np.ndarray, *, shared: bool = False
) -> np.ndarray:
    """For sample s, class tuple t and group i the variable ``v(i, x_si, t_i)``:
    (S, K ** I, I)."""
    I = x.shape[1]
    group = np.zeros(I, np.int64) if shared else np.arange(I)
    return 1 + (group[None, None, :] * N + x[:, None, :]) * K + tuples[None, :, :]


def _g_clauses(
    x: np.ndarray, y: np.ndarray, N: int, K: int, tuples: np.ndarray, *, shared: bool = False
) -> list[list[int]]:
    """With g unknown: sample s in class tuple t implies g(t) = y_s, one clause per (s, t);
    the variable of g(t) follows the ``P * N * K`` token variables."""
    values = np.unique(y)
    if not np.isin(values, [0, 1]).all():
        raise ValueError("with g unknown, labels must be binary (0/1)")
    I = x.shape[1]
    base = _tuple_literals(x, N, K, tuples, shared=shared)
    gvar = (1 if shared else I) * N * K + 1 + np.arange(len(tuples))  # g(t) = 1
    glit = np.where(y[:, None] == 1, gvar[None, :], -gvar[None, :])  # (S, K^I)
    return np.concatenate([-base, glit[..., None]], axis=2).reshape(-1, I + 1).tolist()


def _decode(model: list[int], layout: dict) -> tuple[np.ndarray, np.ndarray | None]:
    N, K, I = layout["N"], layout["K"], layout["I"]
    assign = np.array(model[: I * N * K]) > 0
    labels = assign.reshape(I, N, K).argmax(-1)
    g = None
    if not layout["g_known"]:
        gv = np.array(model[I * N * K : layout["n_vars"]]) > 0
        g = gv.astype(int).reshape((K,) * I)
    return labels, g


def g_symmetries(g: np.ndarray, *, shared: bool = False) -> list[tuple]:
    """Class relabellings that leave g unchanged: tuples ``(sigma_1, ..., sigma_I)`` of
    permutations of 0..K-1 (as arrays) with ``g[sigma_1(c_1), ..., sigma_I(c_I)] = g[c]``
    for every class tuple c.  The identity is always first.  With ``shared=True`` (one
    partition for all groups) only relabellings with sigma_1 = ... = sigma_I count.

    If partitions ``Pi`` explain the samples, so do ``sigma_i o Pi_i``: with g known, these
    are the same partitions under other class names, not a different answer.
    """
    g = np.asarray(g)
    if g.ndim < 1 or len(set(g.shape)) != 1:
        raise ValueError(f"g must have shape (K,) * I, got {g.shape}")
    K, I = g.shape[0], g.ndim
    perms = [np.array(p) for p in itertools.permutations(range(K))]
    choices = [(p,) * I for p in perms] if shared else itertools.product(perms, repeat=I)
    out = []
    for sig in choices:
        if np.array_equal(g[np.ix_(*sig)], g):
            out.append(tuple(sig))
    return out


def solve_partitions(
    x,
    y,
    N: int,
    K: int,
    *,
    g: np.ndarray | None = None,
    shared: bool = False,
    check_unique: bool = True,
    solver: str = "cadical153",
) -> SatResult:
    """Find partitions consistent with the samples and decide whether they are unique.

    After a first solution, clauses excluding that partition are added and the solver is
    asked again.  Alternatives are compared up to relabelling: when g is unknown, symmetry
    breaking gives every partition one labelling; when g is known, the solution's images
    under every symmetry of g (:func:`g_symmetries`) are blocked too, since they are the
    same partitions.
    """
    clauses, layout = encode_cnf(x, y, N, K, g=g, shared=shared)
    sizes = (layout["n_vars"], len(clauses))
    start = time.perf_counter()
    with Solver(name=solver, bootstrap_with=clauses) as s:
        if not s.solve():
            return SatResult("unsatisfiable", None, None, time.perf_counter() - start, *sizes)
        labels, g_found = _decode(s.get_model(), layout)
        if not check_unique:
            seconds = time.perf_counter() - start
            return SatResult("satisfiable", canonical(labels), g_found, seconds, *sizes)
        _block_relabellings(s, labels, g, K, shared=shared)
        other = s.solve()
        alt = _decode(s.get_model(), layout)[0] if other else None
    status = "ambiguous" if other else "unique"
    seconds = time.perf_counter() - start
    return SatResult(status, canonical(labels), g_found, seconds, *sizes, alt)


def _block_relabellings(s, labels: np.ndarray, g, K: int, *, shared: bool) -> None:
    """Add to solver ``s`` one clause per relabelling of ``labels`` (I, N) that names the
    same partitions (every symmetry of a known g; the labelling itself when g is unknown),
    each forbidding that assignment."""
    I, N = labels.shape
    sigmas = g_symmetries(g, shared=shared) if g is not None else [(np.arange(K),) * I]
    idx = 1 + (np.arange(I)[:, None] * N + np.arange(N)[None, :]) * K  # (I, N)
    for sig in sigmas:
        image = np.stack([sig[i][labels[i]] for i in range(I)])  # (I, N)
        s.add_clause((-(idx + image)).ravel().tolist())


def colouring_instance(edges, n: int, K: int = 3):
    """The partition problem of a graph K-colouring (the NP-hardness reduction).

    Two groups share one partition of the n vertices; every edge (u, v) is a sample with
    label 1, and g(a, b) = 1 exactly when a != b.  Partitions consistent with the samples
    are exactly the proper K-colourings.  Returns ``(x, y, g)``.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge endpoints must lie in 0..{n - 1}")
    g = 1 - np.eye(K, dtype=np.int64)
    return edges, np.ones(len(edges), dtype=np.int64), g


def random_graph(n: int, degree: float, *, seed=0) -> np.ndarray:
    """Edges (m, 2) of a uniform random graph on n vertices with mean degree ``degree``
    (``seed``: an int, combined with the base seed, or a NumPy Generator)."""
    n = check_int("n", n, minimum=2)
    degree = check_float("degree", degree, low=0.0, high=n - 1)
    rng = _as_rng(seed)
    m = int(round(degree * n / 2))
    edges: set = set()
    while len(edges) < m:
        u, v = rng.integers(0, n, 2)
        if u != v:
            edges.add((int(min(u, v)), int(max(u, v))))
    return np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)


def _sample_clauses(
    x: np.ndarray, y: np.ndarray, N: int, K: int, g: np.ndarray, *, shared: bool = False
) -> np.ndarray:
    """Clauses (rows of I negative literals) by which samples forbid class tuples with
    the wrong g value, for g known; sample by sample."""
    tuples = _class_tuples(K, x.shape[1])
    base = _tuple_literals(x, N, K, tuples, shared=shared)
    bad = g[tuple(tuples.T)][None, :] != y[:, None]  # (S, K^I)
    return -base[bad]  # (n, I)


def recovery_threshold(
    problem: PartitionProblem,
    s_max: int,
    *,
    seed=0,
    g_known: bool = True,
    rel_tol: float = 0.02,
    solver: str = "cadical153",
) -> int:
    """Smallest number of samples from which the SAT solver recovers ``problem`` exactly.

    Draws one stream of ``s_max`` samples and searches over its prefixes: a prefix is a
    success if its consistent partition is unique (up to relabelling) and the planted one.
    Success is monotone in the prefix length (more samples only remove candidates, the
    planted partition never), so the search is exact on a geometric grid of prefix lengths
    with ratio ``1 + rel_tol``.  Returns ``s_max + 1`` if even all samples do not suffice.

    With g known, one incremental solver serves the whole search: the samples between two
    grid points are switched on by an activation literal (an assumption), so the CNF is
    built once and the solver keeps what it learnt.
    """
    s_max = check_int("s_max", s_max, minimum=1)
    rel_tol = check_float("rel_tol", rel_tol, low=1e-6, high=1.0)
    x, y = sample(problem, s_max, seed=seed)
    N, K, I = problem.N, problem.K, problem.I
    grid = prefix_grid(s_max, rel_tol)

    if not g_known:

        def ok_at(k):
            S = int(grid[k])
            res = solve_partitions(x[:S], y[:S], N, K)
            return res.status == "unique" and same_partition(res.labels, problem.labels)

        return _search(grid, ok_at, s_max)

    token_clauses, _ = encode_cnf(x[:1], y[:1], N, K, g=problem.g)
    n_token = I * N * (1 + K * (K - 1) // 2)
    with Solver(name=solver, bootstrap_with=token_clauses[:n_token]) as s:
        return _search(grid, _PrefixSolver(s, problem, x, y, grid).ok_at, s_max)


class _PrefixSolver:
    """The incremental search of :func:`recovery_threshold` with g known: solver ``s`` holds
    the token clauses; the samples up to each grid point are added once, guarded by an
    activation literal, and ``ok_at(k)`` asks whether prefix ``grid[k]`` recovers ``problem``.
    """

    def __init__(
        self, s, problem: PartitionProblem, x: np.ndarray, y: np.ndarray, grid: np.ndarray
    ):
        self.s, self.problem, self.x, self.y, self.grid = s, problem, x, y, grid
        N, K, I = problem.N, problem.K, problem.I
        self.sigmas = g_symmetries(problem.g)
        self.idx = 1 + (np.arange(I)[:, None] * N + np.arange(N)[None, :]) * K  # (I, N)
        self.next_var = I * N * K + 1
        self.acts: list[int] = []

    def _new_var(self) -> int:
        v = self.next_var
        self.next_var += 1
        return v

    def activate(self, k: int) -> None:
        """Add the samples up to ``grid[k]``, each stretch guarded by its own literal."""
        pb, grid = self.problem, self.grid
        gc_was = gc.isenabled()
        gc.disable()  # millions of small lists: no GC passes
        try:
            while len(self.acts) <= k:
                j = len(self.acts)
                lo = 0 if j == 0 else int(grid[j - 1])
                rows = _sample_clauses(self.x[lo : grid[j]], self.y[lo : grid[j]], pb.N, pb.K, pb.g)
                a = self._new_var()
                guarded = np.concatenate([np.full((len(rows), 1), -a), rows], 1)
                for clause in guarded.tolist():
                    self.s.add_clause(clause)
                self.acts.append(a)
        finally:
            if gc_was:
                gc.enable()

    def ok_at(self, k: int) -> bool:
        """True if the prefix ``grid[k]`` has the planted partition as its only one."""
        self.activate(k)
        s, pb = self.s, self.problem
        N, K, I = pb.N, pb.K, pb.I
        if not s.solve(assumptions=self.acts[: k + 1]):  # pragma: no cover - planted fits
            return False
        model = s.get_model()
        labels = (np.array(model[: I * N * K]) > 0).reshape(I, N, K).argmax(-1)
        if not same_partition(labels, pb.labels):
            return False  # a second consistent partition exists
        b = self._new_var()
        for sig in self.sigmas:  # block the planted one, all its labellings
            image = np.stack([sig[i][labels[i]] for i in range(I)])
            s.add_clause([-b] + (-(self.idx + image)).ravel().tolist())
        other = s.solve(assumptions=self.acts[: k + 1] + [b])
        s.add_clause([-b])  # retire the blocking clauses
        return not other


def prefix_grid(s_max: int, rel_tol: float = 0.02) -> np.ndarray:
    """The prefix lengths :func:`recovery_threshold` searches: a geometric grid from 1 to
    ``s_max`` with ratio ``1 + rel_tol``.  The grid point just below a threshold is the
    longest prefix known not to recover the instance."""
    s_max = check_int("s_max", s_max, minimum=1)
    rel_tol = check_float("rel_tol", rel_tol, low=1e-6, high=1.0)
    grid = np.unique(
        np.round(np.geomspace(1, s_max, 2 + int(math.log(s_max) / math.log1p(rel_tol)))).astype(int)
    )
    grid = grid[grid <= s_max]
    return grid if grid[-1] == s_max else np.append(grid, s_max)


def _search(grid: np.ndarray, ok_at, s_max: int) -> int:
    """Smallest grid[k] with ok_at(k), for a monotone ok_at: gallop up, then bisect."""
    n = len(grid)
    lo, k = -1, max(0, int(np.searchsorted(grid, grid[-1] / 8)))  # lo: known failure
    while not ok_at(k):
        if k == n - 1:
            return s_max + 1
        lo, k = k, min(n - 1, k + max(1, (n - k) // 3))
    hi = k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok_at(mid) else (mid, hi)
    return int(grid[hi])


def separation_rates(problem: PartitionProblem) -> np.ndarray:
    """rho (I, K, K): probability that a uniform sample's other tokens fall in classes where
    g separates class a from class b of group i, ``rho[i, a, b] = P_c(g(a, c) != g(b, c))``
    with the other groups' classes c drawn with their class frequencies.

    A sample containing token n of group i (true class a) rules out "n is in class b"
    exactly when that happens, so rho is the chance per appearance of ruling out b.
    """
    g, K, I = np.asarray(problem.g), problem.K, problem.I
    freq = np.stack([np.bincount(row, minlength=K) for row in problem.labels]) / problem.N
    rho = np.zeros((I, K, K))
    for i in range(I):
        gi = np.moveaxis(g, i, 0).reshape(K, -1)  # (K, K^(I-1))
        others = [freq[j] for j in range(I) if j != i]
        weight = np.ones(1)
        for f in others:
            weight = np.outer(weight, f).ravel()  # (K^(I-1),)
        differ = gi[:, None, :] != gi[None, :, :]  # (K, K, K^(I-1))
        rho[i] = (differ * weight).sum(-1)
    return rho


def survival_prediction(problem: PartitionProblem, S) -> np.ndarray:
    """Expected number of single-token errors that S samples leave standing:
    ``sum over groups i, tokens n, wrong classes b of (1 - rho[i, a_n, b] / N) ** S``,
    a = the token's true class (see :func:`separation_rates`).  Each surviving error is a
    second consistent partition, so recovery needs this to be small; ``exp(-value)``
    approximates the probability that none survives.  Vectorised over ``S``.
    """
    S = np.asarray(S, dtype=float)
    rho = separation_rates(problem)  # (I, K, K)
    K = problem.K
    counts = np.stack([np.bincount(row, minlength=K) for row in problem.labels])  # (I, K)
    wrong = ~np.eye(K, dtype=bool)
    per_pair = np.broadcast_to(counts[:, :, None], rho.shape)[:, wrong]  # (I, K(K-1))
    rates = rho[:, wrong]
    base = np.log1p(-rates / problem.N)  # (I, K(K-1))
    return (per_pair[..., None] * np.exp(base[..., None] * S.ravel())).sum((0, 1)).reshape(S.shape)


def single_token_moves(problem: PartitionProblem, x, y) -> np.ndarray:
    """Which single-token errors the samples leave standing: a boolean (I, N, K) array,
    True at (i, n, b) when putting token n of group i into the wrong class b (all other
    tokens in their planted classes) contradicts none of the samples ``x`` (S, I), ``y``.
    Each True entry is a second consistent partition one token away from the planted one.
    """
    if not isinstance(problem, PartitionProblem):
        raise TypeError(f"problem must be a PartitionProblem, got {type(problem).__name__}")
    I, N, K = problem.I, problem.N, problem.K
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or x.shape[1] != I or len(y) != len(x):
        raise ValueError(
            f"x must be (S, {I}) tokens and y (S,) labels, got {x.shape} and {y.shape}"
        )
    if x.size and (x.min() < 0 or x.max() >= N):
        raise ValueError(f"x must hold tokens in 0..{N - 1}")
    cls = problem.labels[np.arange(I), x]  # (S, I)
    ruled = np.zeros((I, N, K), dtype=bool)
    for i in range(I):
        for b in range(K):
            alt = cls.copy()
            alt[:, i] = b
            contradicted = problem.g[tuple(alt.T)] != y  # (S,)
            ruled[i, x[contradicted, i], b] = True
    wrong = np.ones((I, N, K), dtype=bool)
    wrong[np.arange(I)[:, None], np.arange(N)[None, :], problem.labels] = False
    return wrong & ~ruled


def solver_effort(
    x,
    y,
    N: int,
    K: int,
    *,
    g=None,
    shared: bool = False,
    check_unique: bool = False,
    max_conflicts: int = 500_000,
    solver: str = "cadical153",
) -> dict:
    """Decide satisfiability once and report the solver's effort: ``{"status", "conflicts",
    "seconds"}``.  Conflicts are a machine-independent measure; ``status`` is "unknown"
    if the conflict budget ran out.  With ``check_unique``, a satisfiable instance also
    gets the uniqueness call of :func:`solve_partitions` (the found partition and its
    relabellings blocked, solve again), and ``"unique_conflicts"`` counts that call's
    conflicts alone (0 where the first call found no partition)."""
    clauses, layout = encode_cnf(x, y, N, K, g=g, shared=shared)
    start = time.perf_counter()
    unique_conflicts = 0
    with Solver(name=solver, bootstrap_with=clauses) as s:
        s.conf_budget(max_conflicts)
        answer = s.solve_limited()
        conflicts = s.accum_stats().get("conflicts", 0)
        if check_unique and answer:
            labels = _decode(s.get_model(), layout)[0]
            I = layout["I"]
            sigmas = g_symmetries(g, shared=shared) if g is not None else [(np.arange(K),) * I]
            idx = 1 + (np.arange(I)[:, None] * N + np.arange(N)[None, :]) * K  # (I, N)
            for sig in sigmas:
                image = np.stack([sig[i][labels[i]] for i in range(I)])  # (I, N)
                s.add_clause((-(idx + image)).ravel().tolist())
            s.conf_budget(max_conflicts)
            s.solve_limited()
            unique_conflicts = s.accum_stats().get("conflicts", 0) - conflicts
    status = {True: "satisfiable", False: "unsatisfiable", None: "unknown"}[answer]
    out = {"status": status, "conflicts": int(conflicts), "seconds": time.perf_counter() - start}
    if check_unique:
        out["unique_conflicts"] = int(unique_conflicts)
    return out


# -------------------------------------------------------------------------------- scoring
def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel each row so that classes are numbered in order of first appearance."""
    labels = np.atleast_2d(np.asarray(labels))
    out = np.empty_like(labels)
    for r, row in enumerate(labels):
        _, first = np.unique(row, return_index=True)
        order = np.argsort(first)
        mapping = np.empty(order.size, dtype=np.int64)
        mapping[order] = np.arange(order.size)
        out[r] = mapping[np.unique(row, return_inverse=True)[1]]
    return out


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """True if a and b (I, N) define the same partitions of every group, up to relabelling."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return a.shape == b.shape and bool(np.array_equal(canonical(a), canonical(b)))


def adjusted_rand_index(a, b) -> float:
    """Adjusted Rand index of two labellings of the same items (1 = identical partitions)."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"labellings differ in length: {a.size} and {b.size}")
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(table, (ai, bi), 1)
    comb = lambda n: n * (n - 1) / 2  # noqa: E731
    sum_ij = comb(table).sum()
    sum_a, sum_b = comb(table.sum(1)).sum(), comb(table.sum(0)).sum()
    expected = sum_a * sum_b / comb(a.size)
    top = (sum_a + sum_b) / 2
    return 1.0 if top == expected else float((sum_ij - expected) / (top - expected))


def class_separation(embeddings, labels) -> float:
    """How tightly embeddings cluster by class: the mean distance between two tokens of the
    same class divided by the mean distance between two tokens of different classes.
    About 1 when the classes are mixed, 0 when every class sits on one point.
    ``embeddings`` (N, m), ``labels`` (N,) with at least two classes."""
    e = np.asarray(embeddings, dtype=float)
    lab = np.asarray(labels)
    if e.ndim != 2 or lab.shape != (len(e),):
        raise ValueError(
            f"embeddings must be (N, m) and labels (N,), got {e.shape} and {lab.shape}"
        )
    if np.unique(lab).size < 2:
        raise ValueError("labels must name at least two classes")
    dist = np.linalg.norm(e[:, None] - e[None], axis=-1)  # (N, N)
    same = lab[:, None] == lab[None]
    within = dist[same & ~np.eye(len(lab), dtype=bool)]
    return float(within.mean() / dist[~same].mean()) if within.size else 0.0


def coverage_probability(N: int, S: int, I: int = 1) -> float:
    """Probability that S uniform draws from N tokens see every token, in each of I groups
    (exact, by inclusion-exclusion) — a necessary condition for recovering a partition."""
    N, S = check_int("N", N, minimum=1), check_int("S", S, minimum=0)
    I = check_int("I", I, minimum=1)
    j = np.arange(N + 1)
    log_binom = (
        math.lgamma(N + 1)
        - np.array([math.lgamma(k + 1) for k in j])
        - np.array([math.lgamma(N - k + 1) for k in j])
    )
    with np.errstate(divide="ignore"):
        log_term = log_binom + S * np.log1p(-j / N)
    terms = np.where(j % 2 == 0, 1.0, -1.0) * np.exp(log_term)
    p = float(np.clip(terms.sum(), 0.0, 1.0))
    return p**I


# ------------------------------------------------------------------ gradient descent on embeddings
#: largest number of token tuples per run (N ** I) for which the loss is computed on the full
#: table of predictions; beyond it, per sample.  The loss depends on the samples only through
#: how often each tuple occurs and the sum of its labels, so on the table it costs a few small
#: matrix products, whatever the number of samples.
DENSE_CELLS = 2**18


def _contract(embedded: list, core):
    """f = core contracted with one embedding per group: (R, S).

    ``embedded[i]`` is (R, S, m) and ``core`` is (R, m, ..., m) with I trailing axes.
    """
    out = core.unsqueeze(1).expand(-1, embedded[0].shape[1], *core.shape[1:])  # (R, S, m..)
    for e in embedded:  # contract the leading mode, one group at a time
        out = (out * e.reshape(*e.shape, *([1] * (out.dim() - 3)))).sum(2)
    return out


def _predict_all(E, core):
    """f for every token tuple: (R, N ** I), tuple (n_1, ..., n_I) at index
    ``((n_1 N + n_2) N + ...) N + n_I``.  ``E`` is (R, I, N, m), ``core`` (R, m, ..., m)."""
    out = core
    for i in range(E.shape[1]):  # contract the leading m axis, append an N axis
        out = torch.einsum("rna,ra...->r...n", E[:, i], out)  # (R, m.., N..)
    return out.reshape(out.shape[0], -1)


class Multilinear(nn.Module):
    """R multilinear models side by side: embeddings ``E`` (R, I, N, m) and cores ``T``
    (R, m, ..., m), drawn from ``seed`` (an int, through ``make_generator(seed, device)``,
    or a ``torch.Generator`` on ``device``; never torch's global RNG);
    ``f(x) = T(E_1[x_1], ..., E_I[x_I])``.

    ``model(tokens)`` with tokens (R, S, I) returns f on those tuples, (R, S); with
    ``dense=True`` it returns f on every token tuple, (R, N ** I), and the loss reads the
    samples through their tuple counts.
    """

    def __init__(
        self,
        runs: int,
        I: int,
        N: int,
        m: int,
        *,
        init: float = 0.1,
        seed=0,
        device=None,
        dense: bool = False,
    ):
        super().__init__()
        device = check_device("device", device)
        generator = seed if isinstance(seed, torch.Generator) else make_generator(seed, device)
        self.E = nn.Parameter(
            init * torch.randn(runs, I, N, m, generator=generator, device=device)
        )  # (R, I, N, m)
        self.T = nn.Parameter(
            init * torch.randn(runs, *([m] * I), generator=generator, device=device)
        )  # (R, m, ..., m)
        self.dense = dense

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.dense:
            return _predict_all(self.E, self.T)  # (R, N ** I)
        runs = torch.arange(self.E.shape[0], device=tokens.device)[:, None]
        embedded = [
            self.E[:, i][runs, tokens[:, :, i]]  # I x (R, S, m)
            for i in range(self.E.shape[1])
        ]
        return _contract(embedded, self.T)  # (R, S)


@dataclass
class EmbeddingFit:
    """What :func:`train_embeddings` returns (NumPy arrays on the CPU)."""

    embeddings: np.ndarray  # (R, I, N, m) after the last step
    core: np.ndarray  # (R, m, ..., m) learned core tensors
    history: History  # training.History (per-run losses in member_loss)
    snapshots: dict  # step -> embeddings (R, I, N, m) at that step

    @property
    def losses(self) -> np.ndarray:
        """Training loss of every run at every step, (steps, R)."""
        return np.asarray(self.history.member_loss, dtype=float)

    @property
    def final_loss(self) -> np.ndarray:
        """Training loss of every run at the last step, (R,)."""
        return self.losses[-1]


def train_embeddings(
    xs: list,
    ys: list,
    N: int,
    I: int,
    *,
    m: int = 3,
    steps: int = 2000,
    lr: float = 0.05,
    init: float = 0.1,
    seed=0,
    snapshot_every: int | None = None,
    progress: bool = False,
    dense: bool | None = None,
    device=None,
) -> EmbeddingFit:
    """Fit R multilinear models at once, one per (x, y) pair, by full-batch Adam.

    :class:`Multilinear` models ``f(x) = T(E_1[x_1], ..., E_I[x_I])`` (embeddings in R^m,
    a learned tensor T) with squared loss on the labels, centred and scaled per run; runs
    may have different numbers of samples (padded and masked).  Training goes through
    :func:`seqtheory.core.training.train` (AdamW without weight decay, which is Adam; no
    gradient clipping) with the (R,) per-run losses, so each run gets its own gradient.
    ``seed`` (an int, through :func:`~seqtheory.core.seeds.make_generator`, or a
    ``torch.Generator``) draws the initial weights on ``device``; ``snapshot_every`` keeps
    the embeddings every so many steps.  ``dense`` (default: N ** I <= ``DENSE_CELLS``)
    computes the loss from f on all N ** I token tuples through their counts, otherwise
    sample by sample.  Returns an :class:`EmbeddingFit` (NumPy arrays on the CPU).
    """
    N, I, m, steps = _check_fit(xs, ys, N, I, m, steps, snapshot_every)
    dev = check_device("device", device)
    if dense is None:
        dense = N**I <= DENSE_CELLS
    X, Y, W = (t.to(dev) for t in _pack_samples(xs, ys, N, I))  # once
    model = Multilinear(len(xs), I, N, m, init=init, seed=seed, dense=dense, device=dev)
    loss_fn = _table_loss(X, Y, W, N) if dense else _sample_loss(W)
    snap_steps = tuple(range(0, steps + 1, snapshot_every)) if snapshot_every else ()
    hist = train(
        model,
        lambda step: (X, Y),
        loss_fn=loss_fn,
        steps=steps,
        lr=lr,
        optimizer="adamw",
        weight_decay=0.0,
        grad_clip=None,
        eval_every=steps,
        snapshot_steps=snap_steps,
        progress=progress,
        desc="gradient descent",
    )
    snaps = {step: state["E"].numpy() for step, state in hist.snapshots.items()}
    hist.snapshots = {}  # kept as embeddings
    return EmbeddingFit(
        embeddings=to_numpy(model.E), core=to_numpy(model.T), history=hist, snapshots=snaps
    )


def _check_fit(xs, ys, N, I, m, steps, snapshot_every) -> tuple[int, int, int, int]:
    """``(N, I, m, steps)`` of :func:`train_embeddings` checked (with ``xs``, ``ys`` and
    ``snapshot_every``)."""
    if len(xs) != len(ys) or not xs:
        raise ValueError("xs and ys must be non-empty lists of the same length")
    N, m = check_int("N", N, minimum=1), check_int("m", m, minimum=1)
    I = check_int("I", I, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    if snapshot_every is not None:
        check_int("snapshot_every", snapshot_every, minimum=1)
    return N, I, m, steps


def _pack_samples(xs: list, ys: list, N: int, I: int) -> tuple:
    """The runs' samples as padded tensors: tokens X (R, S, I), labels Y (R, S) centred and
    scaled per run, weights W (R, S) of 1 / (samples of the run), 0 on the padding."""
    R, S = len(xs), max(len(x) for x in xs)
    X = torch.zeros(R, S, I, dtype=torch.long)
    Y = torch.zeros(R, S)
    W = torch.zeros(R, S)
    for r, (x, y) in enumerate(zip(xs, ys, strict=True)):
        y = np.asarray(y, dtype=float)
        y = (y - y.mean()) / (y.std() + 1e-8)
        x = np.asarray(x)
        if x.shape != (len(y), I) or x.min() < 0 or x.max() >= N:
            raise ValueError(f"run {r}: x must be ({len(y)}, {I}) tokens in 0..{N - 1}")
        X[r, : len(x)] = torch.as_tensor(x)
        Y[r, : len(y)] = torch.as_tensor(y, dtype=torch.float32)
        W[r, : len(y)] = 1.0 / len(y)
    return X, Y, W


def _table_loss(X: torch.Tensor, Y: torch.Tensor, W: torch.Tensor, N: int):
    """The per-run loss from f on every token tuple (R, N ** I), through the tuple counts:
    sum_s w_s (f(x_s) - y_s)^2 = sum_t (C_t f_t^2 - 2 Y_t f_t) + sum_s w_s y_s^2."""
    (R, S, I), dev = X.shape, X.device
    flat = torch.zeros(R, S, dtype=torch.long, device=dev)
    for i in range(I):
        flat = flat * N + X[:, :, i]  # (R, S) tuple index
    C = torch.zeros(R, N**I, device=dev).scatter_add_(1, flat, W)  # weight of each tuple
    Ysum = torch.zeros(R, N**I, device=dev).scatter_add_(1, flat, W * Y)  # label sums
    const = (W * Y**2).sum(1)  # (R,)

    def loss_fn(f, _):  # f: (R, N ** I)
        return ((C * f - 2 * Ysum) * f).sum(1) + const  # (R,)

    return loss_fn


def _sample_loss(W: torch.Tensor):
    """The per-run loss sample by sample: f (R, S) against the labels, weighted by W."""

    def loss_fn(f, y):  # f: (R, S)
        return (W * (f - y) ** 2).sum(1)  # (R,)

    return loss_fn


def kmeans(points: np.ndarray, K: int, *, restarts: int = 8, iters: int = 50, seed=0) -> np.ndarray:
    """Cluster each set of points (B, N, m) into K groups; labels (B, N).

    Batched Lloyd iterations from k-means++ starts; the restart with the smallest
    within-cluster sum of squares wins.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim not in (2, 3):
        raise ValueError(f"points must have shape (N, m) or (B, N, m), got {pts.shape}")
    if not np.isfinite(pts).all():
        raise ValueError("points must be finite (got NaN or inf)")
    if pts.ndim == 2:
        return kmeans(pts[None], K, restarts=restarts, iters=iters, seed=seed)[0]
    B, N, _ = pts.shape
    K = check_int("K", K, minimum=1)
    if K > N:
        raise ValueError(f"cannot make K={K} clusters of {N} points")
    rng = _as_rng(seed)
    best_cost = np.full(B, np.inf)
    best = np.zeros((B, N), dtype=np.int64)
    for _ in range(restarts):
        centers = np.empty((B, K, pts.shape[2]))
        centers[:, 0] = pts[np.arange(B), rng.integers(0, N, B)]
        for k in range(1, K):  # k-means++ seeding
            d2 = ((pts[:, :, None] - centers[:, None, :k]) ** 2).sum(-1).min(-1)  # (B, N)
            prob = d2 / d2.sum(1, keepdims=True).clip(1e-12)
            pick = (prob.cumsum(1) < rng.random((B, 1))).sum(1).clip(max=N - 1)
            centers[:, k] = pts[np.arange(B), pick]
        for _ in range(iters):
            d2 = ((pts[:, :, None] - centers[:, None]) ** 2).sum(-1)  # (B, N, K)
            assign = d2.argmin(-1)
            onehot = np.eye(K)[assign]  # (B, N, K)
            counts = onehot.sum(1)  # (B, K)
            sums = np.einsum("bnk,bnd->bkd", onehot, pts)
            centers = np.where(counts[..., None] > 0, sums / counts.clip(1)[..., None], centers)
        cost = np.take_along_axis(d2, assign[..., None], -1)[..., 0].sum(1)
        better = cost < best_cost
        best[better], best_cost[better] = assign[better], cost[better]
    return best


# ------------------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class PartitionSetup:
    """Sizes of the partitions chapter's experiments (K classes, I groups, binary g)."""

    K: int = 3  # classes per group
    I: int = 3  # groups
    balanced: bool = True  # balanced classes (else Dirichlet(1) proportions)
    # Experiment 1: SAT recovery thresholds
    sizes: tuple = (16, 32, 64, 128)  # N, tokens per group
    trials: int = 30  # planted instances per N
    c_max: float = 16.0  # threshold search up to S = c_max N ln N
    # Experiment 2: solver effort
    colouring_sizes: tuple = (100, 200, 300, 350)  # graph vertices n, at degree 4.6
    colouring_graphs: int = 3  # random graphs per point
    colouring_n: int = 200  # vertices for the sweep over the mean degree
    colouring_degrees: tuple = (3.0, 4.0, 4.3, 4.6, 5.0, 6.0)
    effort_sizes: tuple = (64, 128)  # N for solver effort against c (planted)
    effort_cs: tuple = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0)
    effort_trials: int = 6  # planted instances per (N, c)
    # Experiment 3: gradient descent on embeddings
    gd_N: int = 32  # the main N (of gd_sizes) for figures
    gd_sizes: tuple = (16, 32)  # N for gradient descent
    gd_cs: tuple = (4, 8, 12, 16, 32)  # c = S / (N ln N)
    gd_runs: int = 8  # instances per (N, c), trained as one tensor program
    gd_steps: int = 1500  # full-batch Adam steps
    gd_lr: float = 0.03  # Adam's learning rate
    gd_noise: float = 0.0  # fraction of flipped labels
    gd_snapshot_every: int = 50  # keep the embeddings every this many steps
    # variations
    variation_trials: int = 30  # imbalanced instances at N = 32
    unknown_k_trials: int = 8  # instances for the unknown-K variation

    def __post_init__(self) -> None:
        check_int("K", self.K, minimum=2)
        check_int("I", self.I, minimum=1)
        if not isinstance(self.balanced, bool):
            raise TypeError(f"balanced must be a bool, got {self.balanced!r}")
        for name in ("sizes", "colouring_sizes", "effort_sizes", "gd_sizes"):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values:
                raise TypeError(f"{name} must be a non-empty tuple, got {values!r}")
            for v in values:
                check_int(f"{name} entry", v, minimum=self.K if name != "colouring_sizes" else 2)
        for name in ("colouring_degrees", "effort_cs", "gd_cs"):
            values = getattr(self, name)
            if not isinstance(values, tuple) or not values:
                raise TypeError(f"{name} must be a non-empty tuple, got {values!r}")
            for v in values:
                check_float(f"{name} entry", v, low=0.0, low_open=True)
        for name in (
            "trials",
            "colouring_graphs",
            "effort_trials",
            "gd_runs",
            "gd_steps",
            "gd_snapshot_every",
            "variation_trials",
            "unknown_k_trials",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_int("colouring_n", self.colouring_n, minimum=2)
        check_float("c_max", self.c_max, low=0.0, low_open=True)
        check_float("gd_lr", self.gd_lr, low=0.0, low_open=True)
        check_float("gd_noise", self.gd_noise, low=0.0, high=1.0)
        if self.gd_N not in self.gd_sizes:
            raise ValueError(f"gd_N ({self.gd_N}) must be one of gd_sizes {self.gd_sizes}")


#: CPU default and FULL=1 sizes of the partitions chapter
SETUP = Sizes(
    cpu=PartitionSetup(),
    full=PartitionSetup(
        sizes=(16, 32, 64, 128, 256, 512),
        trials=100,
        gd_runs=32,
        gd_sizes=(16, 32, 64),
        colouring_sizes=(100, 200, 300, 400, 450),
        colouring_graphs=10,
        effort_sizes=(64, 128, 256),
        effort_trials=20,
        variation_trials=100,
        unknown_k_trials=32,
    ),
)


def samples_for(c: float, N: int) -> int:
    """S = round(c N ln N)."""
    return max(1, int(round(c * N * math.log(N))))


def _cpu_header(ctx: Experiment, setup: PartitionSetup, seconds: float) -> dict:
    """The result header of a SAT experiment, which runs on the CPU whatever ``ctx.device``
    names (the device is only validated)."""
    return {**ctx.header(setup, seconds), "device": "cpu"}


def _available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _check_workers(workers) -> int:
    """Worker processes of a SAT experiment: ``workers``, or when it is None every core
    under FULL (:func:`~seqtheory.core.runtime.is_full`) and 1 (this process, no pool) in the CPU
    default run."""
    if workers is None:
        return _available_cores() if is_full() else 1
    return check_int("workers", workers, minimum=1)


def _pool_context():
    """Start method of the worker pool: ``forkserver`` where the platform has it (else
    ``spawn``).  Workers are forked from a server process that imported this module once and
    never started CUDA or the threads of a notebook's kernel, so a parent that trained on a
    GPU cannot hand them a held lock; after the first pool of a process, starting a pool
    costs milliseconds.  Results do not depend on the start method.  As with any pool
    that does not fork the parent, a script that starts one must be importable: its
    top-level code under ``if __name__ == "__main__":`` (a notebook's kernel, ``python -c``
    and pytest need nothing)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", __name__])
    return ctx


def _map_instances(
    fn, cells: list, workers: int, *, costs=None, desc: str = "", progress: bool = False
) -> list:
    """``[fn(cell) for cell in cells]``, on ``workers`` processes when there are more than
    one (``fn`` module-level, cells and results picklable).

    Cells go to the pool in decreasing order of ``costs`` (ties in their order in
    ``cells``), so the slowest ones start first; the results come back in the order of
    ``cells`` and the progress bar advances as cells finish.  With one worker (or one cell)
    the cells run in this process, one after the other."""
    cells = list(cells)
    workers = min(workers, len(cells))
    if workers <= 1:
        return [fn(cell) for cell in progress_bar(cells, desc=desc, disable=not progress)]
    order = (
        range(len(cells)) if costs is None else sorted(range(len(cells)), key=lambda k: -costs[k])
    )
    out: list = [None] * len(cells)
    bar = progress_bar(total=len(cells), desc=desc, disable=not progress)
    pool = ProcessPoolExecutor(workers, mp_context=_pool_context())
    try:
        futures = {pool.submit(fn, cells[k]): k for k in order}
        for future in as_completed(futures):
            out[futures[future]] = future.result()
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown()
    return out


@dataclass
class ThresholdResult(RunInfo):
    """What :func:`run_thresholds` returns: the smallest recovering S of every instance."""

    thresholds: dict  # N -> (trials,) smallest S that recovers each instance
    problems: dict  # N -> [PartitionProblem] of the instances

    def rate_at(self, N: int, c: float) -> float:
        """Fraction of the instances of size N recovered with S = c N ln N samples."""
        return float(np.mean(self.thresholds[N] <= samples_for(c, N)))

    def s50(self) -> np.ndarray:
        """Median threshold divided by N, S50 / N, for every N in ``setup.sizes``."""
        return np.array([np.median(self.thresholds[N]) / N for N in self.setup.sizes])


def _threshold_instance(cell: tuple) -> tuple:
    """One instance of :func:`run_thresholds`: ``(setup, N, t, ctx)`` -> ``(S, problem)``."""
    setup, N, t, ctx = cell
    pb = planted_problem(N, setup.K, setup.I, balanced=setup.balanced, seed=ctx.rng("problems", t))
    S = recovery_threshold(pb, samples_for(setup.c_max, N), seed=ctx.rng("samples", t))
    return S, pb


@experiment(PartitionSetup, STREAMS)
def run_thresholds(
    setup: PartitionSetup, ctx: Experiment, *, workers: int | None = None
) -> ThresholdResult:
    """Experiment 1: :func:`recovery_threshold` for ``setup.trials`` planted instances of
    every N in ``setup.sizes`` (balanced or not, g known), searched up to
    ``S = setup.c_max N ln N``.

    Instance t draws its problem from stream ``problems`` (index t) and its samples from
    ``samples`` (index t) under the base seed ``ctx.seed``.  The SAT solver runs on the CPU:
    ``ctx.device`` is only validated.  The instances run on ``workers`` processes (default:
    every core under FULL, this process alone in the CPU default run), largest N first; the
    result does not depend on ``workers`` (a script that uses several keeps its top-level
    code under ``if __name__ == "__main__":``).  The exact-recovery rate at any S is the
    fraction of instances with threshold <= S (:meth:`ThresholdResult.rate_at`).
    """
    workers = _check_workers(workers)
    with ctx.timer() as timer:
        cells = [(setup, N, t, ctx) for N in setup.sizes for t in range(setup.trials)]
        results = _map_instances(
            _threshold_instance,
            cells,
            workers,
            costs=[cell[1] for cell in cells],
            desc="SAT thresholds",
            progress=ctx.progress,
        )
        thresholds: dict = {}
        problems: dict = {}
        for (_, N, _, _), (S, pb) in zip(cells, results, strict=True):
            thresholds.setdefault(N, []).append(S)
            problems.setdefault(N, []).append(pb)
    return ThresholdResult(
        **_cpu_header(ctx, setup, timer.seconds),
        thresholds={N: np.array(v) for N, v in thresholds.items()},
        problems=problems,
    )


#: the two families of :attr:`EffortResult.by_size`
_SIZE_FAMILIES = ("colouring, degree 4.6", "planted, c = 4")


@dataclass
class EffortResult(RunInfo):
    """What :func:`run_effort` returns: solver conflicts on colouring and planted instances.

    ``by_size[family]`` is an array of rows ``(Boolean variables, conflicts, seconds)``
    for the families ``"colouring, degree 4.6"`` and ``"planted, c = 4"``.
    """

    by_size: dict  # family -> (rows, 3) array: variables, conflicts, seconds
    by_degree: dict  # mean degree -> (colouring_graphs,) conflicts, n = colouring_n
    by_c: dict  # (N, c) -> (effort_trials,) conflicts of planted instances
    by_c_unique: dict  # (N, c) -> (effort_trials,) conflicts of the uniqueness call


def _effort_job(job: tuple):
    """One job of :func:`run_effort`: ``(kind, key, s, setup, ctx)`` -> two rows
    ``(variables, conflicts, seconds)`` ("size"), the conflicts ("degree"), or the
    conflicts of the first and of the uniqueness call ("c")."""
    kind, key, s, setup, ctx = job
    if kind == "size":
        return _effort_at_size(key, s, setup, ctx)
    if kind == "degree":
        n = setup.colouring_n
        graph = random_graph(n, key, seed=ctx.rng("graphs", s))
        gx, gy, gg = colouring_instance(graph, n)
        return solver_effort(gx, gy, n, 3, g=gg, shared=True)["conflicts"]
    N, c = key
    pb = planted_problem(N, setup.K, setup.I, seed=ctx.rng("problems", s))
    px, py = sample(pb, samples_for(c, N), seed=ctx.rng("samples", s))
    e = solver_effort(px, py, N, setup.K, g=pb.g, check_unique=True)
    return e["conflicts"], e["unique_conflicts"]


def _effort_at_size(n: int, s: int, setup: PartitionSetup, ctx: Experiment) -> tuple:
    """Rows ``(variables, conflicts, seconds)`` of colouring graph s on n vertices at mean
    degree 4.6 and of planted instance s with as many Boolean variables, at c = 4."""
    K, I = setup.K, setup.I
    gx, gy, gg = colouring_instance(random_graph(n, 4.6, seed=ctx.rng("graphs", s)), n)
    e = solver_effort(gx, gy, n, 3, g=gg, shared=True)
    colouring = (3 * n, e["conflicts"], e["seconds"])
    N = n // I  # same number of variables: I * N * K = 3 n
    pb = planted_problem(N, K, I, seed=ctx.rng("problems", s))
    px, py = sample(pb, samples_for(4, N), seed=ctx.rng("samples", s))
    e = solver_effort(px, py, N, K, g=pb.g)
    return colouring, (I * N * K, e["conflicts"], e["seconds"])


def _effort_jobs(setup: PartitionSetup) -> list:
    """The jobs ``(kind, key, s)`` of :func:`run_effort`, in the order of its result."""
    return (
        [("size", n, s) for n in setup.colouring_sizes for s in range(setup.colouring_graphs)]
        + [("degree", d, s) for d in setup.colouring_degrees for s in range(setup.colouring_graphs)]
        + [
            ("c", (N, c), s)
            for N in setup.effort_sizes
            for c in setup.effort_cs
            for s in range(setup.effort_trials)
        ]
    )


def _effort_variables(setup: PartitionSetup, kind: str, key) -> int:
    """Boolean variables of a job of :func:`run_effort` (its cost in the pool)."""
    if kind == "size":
        return 6 * key
    if kind == "degree":
        return 3 * setup.colouring_n
    return setup.I * key[0] * setup.K


def _collect_effort(setup: PartitionSetup, jobs: list, results: list) -> dict:
    """The fields ``by_size, by_degree, by_c, by_c_unique`` of an :class:`EffortResult`."""
    by_size: dict = {family: [] for family in _SIZE_FAMILIES}
    by_degree: dict = {d: [] for d in setup.colouring_degrees}
    by_c: dict = {(N, c): [] for N in setup.effort_sizes for c in setup.effort_cs}
    by_c_unique: dict = {key: [] for key in by_c}
    for (kind, key, _), out in zip(jobs, results, strict=True):
        if kind == "size":
            by_size[_SIZE_FAMILIES[0]].append(out[0])
            by_size[_SIZE_FAMILIES[1]].append(out[1])
        elif kind == "degree":
            by_degree[key].append(out)
        else:
            by_c[key].append(out[0])
            by_c_unique[key].append(out[1])
    return {
        "by_size": {k: np.array(v, dtype=float) for k, v in by_size.items()},
        "by_degree": {k: np.array(v) for k, v in by_degree.items()},
        "by_c": {k: np.array(v) for k, v in by_c.items()},
        "by_c_unique": {k: np.array(v) for k, v in by_c_unique.items()},
    }


@experiment(PartitionSetup, STREAMS)
def run_effort(
    setup: PartitionSetup, ctx: Experiment, *, workers: int | None = None
) -> EffortResult:
    """Experiment 2: how hard the SAT solver works (:func:`solver_effort`).

    Colouring instances of random graphs (the shared-partition variant) at mean degree 4.6
    for every n in ``setup.colouring_sizes``, next to planted instances at c = 4 with as
    many Boolean variables (N = n / I); colouring instances of ``setup.colouring_n``
    vertices against the mean degree; planted instances against c for every N in
    ``setup.effort_sizes``, each with the effort of finding one consistent partition
    (``by_c``) and of the uniqueness call that exact recovery adds (``by_c_unique``).
    Graph s draws from stream ``graphs`` (index s), planted instance s from ``problems``
    and its samples from ``samples`` (index s, as in :func:`run_thresholds`), under the
    base seed ``ctx.seed``.  The solver runs on the CPU: ``ctx.device`` is only validated.
    The instances run on ``workers`` processes (default: every core under FULL, this
    process alone in the CPU default run), those with the most Boolean variables first; the
    conflict counts do not depend on ``workers`` (the solver seconds are timings; a script
    that uses several workers keeps its top-level code under ``if __name__ == "__main__":``).
    """
    workers = _check_workers(workers)
    with ctx.timer() as timer:
        jobs = _effort_jobs(setup)
        results = _map_instances(
            _effort_job,
            [(kind, key, s, setup, ctx) for kind, key, s in jobs],
            workers,
            costs=[_effort_variables(setup, kind, key) for kind, key, _ in jobs],
            desc="solver effort",
            progress=ctx.progress,
        )
        fields = _collect_effort(setup, jobs, results)
    return EffortResult(**_cpu_header(ctx, setup, timer.seconds), **fields)


@dataclass
class GDCell:
    """Gradient descent at one (N, c): ``setup.gd_runs`` planted instances trained as one
    program, then k-means on each group's embeddings."""

    N: int
    c: float
    problems: list  # the planted instances
    samples: list  # each instance's training samples (x, y)
    fit: EmbeddingFit  # embeddings, history (per-run losses), snapshots
    labels: np.ndarray  # (runs, I, N) k-means classes
    recovered: np.ndarray  # (runs,) exact recovery (up to relabelling)
    aris: np.ndarray  # (runs,) adjusted Rand index, mean over groups

    @property
    def recovery(self) -> float:
        """Fraction of the instances recovered exactly."""
        return float(np.mean(self.recovered))

    @property
    def ari(self) -> float:
        """Mean adjusted Rand index over the instances."""
        return float(np.mean(self.aris))

    @property
    def final_loss(self) -> np.ndarray:
        """Training loss of every instance after the last step, (runs,); standardised
        labels, so 1 is the loss of predicting the mean and the planted partitions reach 0."""
        return self.fit.final_loss


@dataclass
class GDResult(RunInfo):
    """What :func:`run_gradient_descent` returns: one :class:`GDCell` per (N, c)."""

    cells: dict  # (N, c) -> GDCell

    def __getitem__(self, key) -> GDCell:
        """``result[N, c]``: the cell for size N and sample ratio c."""
        return self.cells[key]


def _gd_cell(setup: PartitionSetup, ctx: Experiment, N: int, c: float) -> GDCell:
    """One cell of :func:`run_gradient_descent`: train, cluster and score at (N, c)."""
    K, I, R = setup.K, setup.I, setup.gd_runs
    problems = [planted_problem(N, K, I, seed=ctx.rng("problems", r)) for r in range(R)]
    data = [
        sample(pb, samples_for(c, N), seed=ctx.rng("gd_samples", r), noise=setup.gd_noise)
        for r, pb in enumerate(problems)
    ]
    fit = train_embeddings(
        [d[0] for d in data],
        [d[1] for d in data],
        N,
        I,
        m=K,
        steps=setup.gd_steps,
        lr=setup.gd_lr,
        seed=ctx.generator("weights", 0),
        snapshot_every=setup.gd_snapshot_every,
        device=ctx.device,
    )
    labels = kmeans(fit.embeddings.reshape(-1, N, K), K, seed=ctx.rng("kmeans", 0)).reshape(R, I, N)
    rec = [same_partition(labels[r], problems[r].labels) for r in range(R)]
    ari = [
        np.mean([adjusted_rand_index(labels[r, i], problems[r].labels[i]) for i in range(I)])
        for r in range(R)
    ]
    return GDCell(
        N=N,
        c=c,
        problems=problems,
        samples=data,
        fit=fit,
        labels=labels,
        recovered=np.array(rec),
        aris=np.array(ari),
    )


@experiment(PartitionSetup, STREAMS)
def run_gradient_descent(setup: PartitionSetup, ctx: Experiment) -> GDResult:
    """Experiment 3: gradient descent on embeddings (:func:`train_embeddings`, m = K), then
    :func:`kmeans`, for every N in ``setup.gd_sizes`` and c in ``setup.gd_cs``.

    At each (N, c), instance r draws its problem from stream ``problems`` (index r) and its
    samples, with label noise ``setup.gd_noise``, from ``gd_samples`` (index r); the
    ``setup.gd_runs`` instances are trained together from initial weights of stream
    ``weights`` and k-means starts from stream ``kmeans`` (index 0 both), all under the base
    seed ``ctx.seed``.  Training runs on ``ctx.device``; results come back as NumPy arrays.
    """
    with ctx.timer() as timer:
        jobs = [(N, c) for N in setup.gd_sizes for c in setup.gd_cs]
        cells = {
            (N, c): _gd_cell(setup, ctx, N, c)
            for N, c in progress_bar(jobs, desc="gradient descent", disable=not ctx.progress)
        }
    return GDResult(**ctx.header(setup, timer.seconds), cells=cells)
