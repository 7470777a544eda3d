"""Knowledge graphs and the small models that learn them.

* :class:`FamilyForest` — a genealogy of a few generations with derived relations
  (parent, child, spouse, sibling, grandparent, grandchild, uncle/aunt, niece/nephew,
  cousin, ancestor, descendant), queryable as sets of (person, person) facts, and the
  single *kinship term* of every ordered pair (:data:`KINSHIP`).
* :func:`kinship_data` — every ordered pair of people with its kinship term, split into
  training and held-out pairs; :func:`seen_closure` — every kinship term the training
  pairs imply (sound rules, fixed point); :func:`automorphism_count` — how many
  relabellings of the people preserve every relation.
* :class:`KinshipModels` — ``M`` independent models in one tensor program: a learned
  embedding per person and a decoder (an MLP, or a bilinear form per term) that reads two
  embeddings and names the relation.  :func:`train_kinship` trains them (through
  :func:`seqtheory.core.training.train`, one loss per model), :func:`accuracy` scores them.
* :func:`plot_forest`, :func:`plot_embedding` — the genealogy and 2-D views of embeddings.

How two models' embeddings compare (CKA, stitching) is in :mod:`seqtheory.similarity`;
the universality chapter's experiment (setup, run, result) in
:mod:`seqtheory.representations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..core.runtime import check_device, evaluating, to_numpy
from ..core.seeds import make_generator, make_rng
from ..core.training import History, TrainConfig, train
from ..core.validate import check_choice, check_float, check_int

__all__ = [
    "DECODERS",
    "KINSHIP",
    "RELATIONS",
    "FamilyForest",
    "KinshipData",
    "KinshipModels",
    "accuracy",
    "automorphism_count",
    "kinship_data",
    "per_model_loss",
    "plot_embedding",
    "plot_forest",
    "seen_closure",
    "train_kinship",
]

RELATIONS = (
    "parent",
    "child",
    "spouse",
    "sibling",
    "grandparent",
    "grandchild",
    "uncle_aunt",
    "niece_nephew",
    "cousin",
    "ancestor",
    "descendant",
)
# The kinship term of an ordered pair (a, b): "a is b's <term>".  The terms are mutually
# exclusive in a forest without intermarriage; "great_ancestor" = ancestor but neither
# parent nor grandparent; "none" = no relation (including in-laws).
KINSHIP = (
    "none",
    "parent",
    "child",
    "spouse",
    "sibling",
    "grandparent",
    "grandchild",
    "uncle_aunt",
    "niece_nephew",
    "cousin",
    "great_ancestor",
    "great_descendant",
)
# The relations that are the transpose of another: "a is b's child" = "b is a's parent".
_INVERSES = {
    "child": "parent",
    "grandchild": "grandparent",
    "niece_nephew": "uncle_aunt",
    "descendant": "ancestor",
}
# Decoder families of :class:`KinshipModels`: a one-hidden-layer MLP on [e_a, e_b], or a
# bilinear form per kinship term (RESCAL-style) plus linear terms.
DECODERS = ("mlp", "bilinear")


@dataclass
class FamilyForest:
    """A genealogy: ``parent[a, b]`` is True when person a is a parent of person b.

    People are numbered 0..n-1; ``generation[p]`` counts from 0 (the founders) and
    ``family[p]`` says which founding couple's tree p belongs to (spouses who marry in are
    assigned to the family they marry into).
    """

    parent: np.ndarray
    spouse: np.ndarray
    generation: np.ndarray
    family: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def generate(
        cls,
        n_families: int = 2,
        generations: int = 4,
        children: tuple = (2, 3),
        seed: int = 0,
        *,
        base: int | None = None,
    ) -> FamilyForest:
        """Founding couples; every couple has between ``children[0]`` and ``children[1]``
        children; every child except in the last generation marries a newcomer.  Drawn
        from ``make_rng(seed, base=base)`` (``base`` None: the book's base seed)."""
        n_families = check_int("n_families", n_families, minimum=1)
        generations = check_int("generations", generations, minimum=2)
        lo, hi = (check_int("children", c, minimum=1) for c in children)
        if hi < lo:
            raise ValueError(f"children must be (min, max) with min <= max, got {children}")
        rng = make_rng(seed, base=base)
        gen, fam, parents, couples = [], [], [], []

        def person(g, f, of=()):
            gen.append(g)
            fam.append(f)
            parents.append(tuple(of))
            return len(gen) - 1

        frontier = []
        for f in range(n_families):
            a, b = person(0, f), person(0, f)
            couples.append((a, b))
            frontier.append((a, b, f))
        for g in range(1, generations):
            nxt = []
            for a, b, f in frontier:
                for _ in range(rng.integers(lo, hi + 1)):
                    kid = person(g, f, (a, b))
                    if g < generations - 1:
                        partner = person(g, f)  # marries in
                        couples.append((kid, partner))
                        nxt.append((kid, partner, f))
            frontier = nxt
        n = len(gen)
        P = np.zeros((n, n), dtype=bool)
        for kid, of in enumerate(parents):
            for par in of:
                P[par, kid] = True
        S = np.zeros((n, n), dtype=bool)
        for a, b in couples:
            S[a, b] = S[b, a] = True
        return cls(P, S, np.array(gen), np.array(fam))

    @property
    def n(self) -> int:
        """Number of people."""
        return len(self.generation)

    def matrix(self, relation: str) -> np.ndarray:
        """Boolean (n, n) matrix: ``M[a, b]`` is True when relation(a, b) holds."""
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}; got {relation!r}")
        if relation not in self._cache:
            inverse = _INVERSES.get(relation)
            self._cache[relation] = (
                self.matrix(inverse).T if inverse is not None else self._forward(relation)
            )
        return self._cache[relation]

    def _forward(self, relation: str) -> np.ndarray:
        """The matrix of a relation that is not the inverse of another (uncached)."""
        P, eye = self.parent.astype(int), np.eye(self.n, dtype=bool)
        if relation == "parent":
            return self.parent
        if relation == "spouse":
            return self.spouse
        if relation == "ancestor":  # transitive closure of parent
            A = self.parent.copy()
            while True:
                grown = A | ((A.astype(int) @ P) > 0)
                if (grown == A).all():
                    return A
                A = grown
        sib = ((P.T @ P) > 0) & ~eye
        if relation == "sibling":
            return sib
        if relation == "grandparent":
            return (P @ P) > 0
        if relation == "uncle_aunt":  # a is a sibling of a parent of b
            return (sib.astype(int) @ P) > 0
        # cousin: a parent of a is a sibling of a parent of b
        return ((P.T @ sib.astype(int) @ P) > 0) & ~eye

    def facts(self, relation: str) -> set:
        """The set of (a, b) pairs for which relation(a, b) holds."""
        a, b = np.nonzero(self.matrix(relation))
        return set(zip(a.tolist(), b.tolist(), strict=True))

    def all_facts(self, relations=RELATIONS) -> np.ndarray:
        """Every fact as rows (relation index, a, b), relations indexed as in ``relations``."""
        rows = [(r, a, b) for r, rel in enumerate(relations) for a, b in sorted(self.facts(rel))]
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    def kinship(self) -> np.ndarray:
        """(n, n) int matrix: ``K[a, b]`` indexes :data:`KINSHIP` (a is b's <term>)."""
        K = np.zeros((self.n, self.n), dtype=np.int64)
        for i, term in enumerate(KINSHIP[1:10], start=1):
            K[self.matrix(term)] = i
        great = self.matrix("ancestor") & (K == 0)
        K[great] = KINSHIP.index("great_ancestor")
        K[great.T] = KINSHIP.index("great_descendant")
        return K

    def shuffled(self, seed: int = 0, *, base: int | None = None) -> FamilyForest:
        """The same family shapes with people relabelled at random *within* each family:
        a different graph on the same people (person i now sits somewhere else); drawn
        from ``make_rng(seed, base=base)``."""
        rng = make_rng(seed, base=base)
        perm = np.arange(self.n)  # perm[old] = new label
        for f in np.unique(self.family):
            idx = np.flatnonzero(self.family == f)
            perm[idx] = rng.permutation(idx)
        inv = np.argsort(perm)  # inv[new] = old
        return FamilyForest(
            self.parent[np.ix_(inv, inv)],
            self.spouse[np.ix_(inv, inv)],
            self.generation[inv],
            self.family[inv],
        )

    def split(self, test_fraction: float = 0.2, seed: int = 0, relations=RELATIONS):
        """Random train/test split over *facts* (rows of :meth:`all_facts`)."""
        facts = self.all_facts(relations)
        order = make_rng(seed).permutation(len(facts))
        n_test = int(round(test_fraction * len(facts)))
        return facts[order[n_test:]], facts[order[:n_test]]


# --------------------------------------------------------------------------- kinship data
@dataclass
class KinshipData:
    """Ordered pairs of people with their kinship term and a train/held-out split."""

    pairs: torch.Tensor  # (P, 2) long: ordered pairs (a, b), a != b
    labels: torch.Tensor  # (P,) long: index into KINSHIP of "a is b's <term>"
    train: torch.Tensor  # (P,) bool: True for training pairs, False for held-out ones
    n_people: int

    def select(self, which: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``(pairs, labels)`` of one part: "train", "test", "test_facts" (held-out related
        pairs), "test_none" (held-out unrelated pairs), "train_facts" or "all"."""
        related = self.labels > 0
        masks = {
            "all": torch.ones_like(self.train),
            "train": self.train,
            "test": ~self.train,
            "train_facts": self.train & related,
            "test_facts": ~self.train & related,
            "test_none": ~self.train & ~related,
        }
        if which not in masks:
            raise ValueError(f"which must be one of {tuple(masks)}; got {which!r}")
        m = masks[which]
        return self.pairs[m], self.labels[m]

    def relabelled(self, forest: FamilyForest) -> KinshipData:
        """The same pairs and split, labelled by another forest on the same people."""
        if forest.n != self.n_people:
            raise ValueError(f"forest has {forest.n} people, the data has {self.n_people}")
        K = torch.from_numpy(forest.kinship()).to(self.pairs.device)
        return KinshipData(
            self.pairs, K[self.pairs[:, 0], self.pairs[:, 1]], self.train, self.n_people
        )

    @property
    def device(self) -> torch.device:
        """Where the tensors live."""
        return self.pairs.device

    def to(self, device) -> KinshipData:
        """The same data with its tensors on ``device`` (itself if they are there already)."""
        device = check_device("device", device)
        if self.pairs.device == device:
            return self
        return KinshipData(
            self.pairs.to(device), self.labels.to(device), self.train.to(device), self.n_people
        )


def kinship_data(
    forest: FamilyForest,
    train_fraction: float = 0.8,
    seed: int = 0,
    within_family: bool = True,
    *,
    base: int | None = None,
) -> KinshipData:
    """Every ordered pair (a, b), a != b, with its kinship term; a random ``train_fraction``
    of the pairs is for training, the rest is held out (drawn from
    ``make_rng(seed, base=base)``).

    ``within_family`` keeps only pairs from the same family (pairs across families are all
    "none", and cost most of the compute)."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    train_fraction = check_float(
        "train_fraction", train_fraction, low=0.0, high=1.0, low_open=True, high_open=True
    )
    keep = ~np.eye(forest.n, dtype=bool)
    if within_family:
        keep &= forest.family[:, None] == forest.family[None, :]
    a, b = np.nonzero(keep)
    labels = forest.kinship()[a, b]
    train = make_rng(seed, base=base).random(len(a)) < train_fraction
    return KinshipData(
        torch.from_numpy(np.stack([a, b], 1)),
        torch.from_numpy(labels),
        torch.from_numpy(train),
        forest.n,
    )


def seen_closure(data: KinshipData) -> np.ndarray:
    """The kinship terms that the *training* pairs of ``data`` imply: (n, n) int matrix
    indexing :data:`KINSHIP`, 0 where nothing is implied.

    Sound rules, valid in every forest :meth:`FamilyForest.generate` makes (each child has
    exactly two parents, who are each other's only spouse; siblings share both parents):
    a seen "parent" or the inverse "child" gives a parent link; a seen spouse or sibling
    fact is symmetric; children of one parent are siblings; siblings are transitive; a
    parent of someone is a parent of that person's siblings; a parent's spouse is a parent;
    two parents of one child are spouses.  Iterated to a fixed point on boolean matrices,
    the recovered parent and spouse links are a subset of the true ones, so every term
    derived from them (as in :meth:`FamilyForest.kinship`) is the true term."""
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    n = data.n_people
    pairs, labels = (to_numpy(t) for t in data.select("train"))
    seen = np.zeros((len(KINSHIP), n, n), dtype=bool)  # (K, n, n)
    seen[labels, pairs[:, 0], pairs[:, 1]] = True
    T = {t: seen[KINSHIP.index(t)] for t in ("parent", "child", "spouse", "sibling")}
    eye = np.eye(n, dtype=bool)
    P = T["parent"] | T["child"].T
    S = T["spouse"] | T["spouse"].T
    sib = T["sibling"] | T["sibling"].T

    def mm(A, B):
        return (A.astype(np.int64) @ B.astype(np.int64)) > 0

    while True:
        new_sib = (sib | mm(P.T, P) | mm(sib, sib)) & ~eye
        new_P = P | mm(P, new_sib) | mm(S, P)
        new_S = S | (mm(new_P, new_P.T) & ~eye)
        if (new_sib == sib).all() and (new_P == P).all() and (new_S == S).all():
            break
        sib, P, S = new_sib, new_P, new_S
    zeros = np.zeros(n, dtype=np.int64)
    return FamilyForest(P, S, zeros, zeros).kinship()


def automorphism_count(forest: FamilyForest) -> int:
    """Number of relabellings of the people that preserve every parent and spouse link
    (and so every kinship term), for forests made by :meth:`FamilyForest.generate`:
    swap the two founders of a couple, swap siblings whose descendant trees have the same
    shape, swap families of the same shape."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    from collections import Counter
    from math import factorial

    kids = [np.flatnonzero(forest.parent[p]) for p in range(forest.n)]

    def tree(p):  # (shape, automorphisms) of the line below person p
        below = [tree(c) for c in kids[p]]
        shape = (bool(forest.spouse[p].any()), tuple(sorted(sh for sh, _ in below)))
        count = int(np.prod([a for _, a in below], dtype=object)) if below else 1
        for mult in Counter(sh for sh, _ in below).values():
            count *= factorial(mult)
        return shape, count

    founders = np.flatnonzero(
        ~forest.parent.any(0) & ~(forest.spouse.astype(int) @ forest.parent.any(0)).astype(bool)
    )
    roots = [
        p
        for p in founders  # one founder per couple, or a single founder
        if not forest.spouse[p].any() or p < np.flatnonzero(forest.spouse[p]).min()
    ]
    total, shapes = 1, []
    for r in roots:
        shape, count = tree(r)
        couple = forest.spouse[r].any()
        total *= count * (2 if couple else 1)  # the founders swap
        shapes.append(shape)
    for mult in Counter(shapes).values():
        total *= factorial(mult)
    return total


def _check_models(seeds, embed_dims) -> tuple[tuple, tuple]:
    """``(seeds, dims)`` of :class:`KinshipModels` checked: one embedding size per seed (an
    int size is used for every seed)."""
    seeds = tuple(check_int("seed", s, minimum=0) for s in seeds)
    if not seeds:
        raise ValueError("seeds must name at least one model")
    if isinstance(embed_dims, (int, np.integer)):
        embed_dims = (embed_dims,) * len(seeds)
    dims = tuple(check_int("embed_dim", d, minimum=1) for d in embed_dims)
    if len(dims) != len(seeds):
        raise ValueError(
            f"give one embedding size per seed: {len(dims)} sizes for {len(seeds)} seeds"
        )
    return seeds, dims


def _initial_weights(g, n, d, D, h, k, decoder, init_scale) -> dict[str, torch.Tensor]:
    """One model's initial weights, drawn from the CPU generator ``g`` in a fixed order and
    zero-padded from its embedding size ``d`` to ``D`` (see :class:`KinshipModels`)."""

    def rows(width, std):  # (D, width): d random rows over ``std``, then zero rows
        return torch.cat([torch.randn(d, width, generator=g) / std, torch.zeros(D - d, width)])

    scale = init_scale if init_scale is not None else 1 / np.sqrt(d)
    out = {"embed": torch.cat([torch.randn(n, d, generator=g) * scale, torch.zeros(n, D - d)], 1)}
    if decoder == "bilinear":  # one d x d form per kinship term, plus linear terms
        out["rel"] = torch.zeros(k, D, D)
        out["rel"][:, :d, :d] = torch.randn(k, d, d, generator=g) / np.sqrt(d)
        out["u_a"], out["u_b"] = rows(k, np.sqrt(d)), rows(k, np.sqrt(d))
    else:
        out["w_a"], out["w_b"] = rows(h, np.sqrt(2 * d)), rows(h, np.sqrt(2 * d))
        out["b_1"] = torch.zeros(1, h)
        out["w_out"] = torch.randn(h, k, generator=g) / np.sqrt(h)
    out["b_out"] = torch.zeros(1, k)
    return out


# --------------------------------------------------------------------------- models
class KinshipModels(nn.Module):
    """``M`` independent models trained as one tensor program.

    Model m has an embedding ``E_m`` (n_people, d_m) and a one-hidden-layer MLP decoder:
    ``logits(a, b) = W_out relu(W_a e_a + W_b e_b + b_1) + b_out`` (the first layer acts on
    the concatenation ``[e_a, e_b]``); ``decoder="bilinear"`` replaces it by a different
    family, ``logits_k(a, b) = e_a^T R_k e_b + u_k . e_a + v_k . e_b + c_k`` (one d x d form
    R_k per kinship term).  Models of different sizes share one tensor: their
    embeddings are zero-padded to the largest d and masked.  Model m is initialised from
    its own generator, ``make_generator(seeds[m], base=base)`` (embeddings ~
    N(0, init_scale^2), default ``1/sqrt(d_m)``), so it is the same model whether it is
    trained alone or with others; ``seeds`` stay the models' names (:meth:`index`).
    The weights are drawn on the CPU and then placed on ``device``, so a model starts from
    the same weights on every device.
    """

    def __init__(
        self,
        n_people: int,
        embed_dims: int | Sequence[int],
        seeds: Sequence[int] = (0,),
        hidden: int = 32,
        n_classes: int = len(KINSHIP),
        init_scale: float | None = None,
        decoder: str = "mlp",
        *,
        base: int | None = None,
        device=None,
    ) -> None:
        super().__init__()
        device = check_device("device", device)
        self.decoder = check_choice("decoder", decoder, DECODERS)
        n = check_int("n_people", n_people, minimum=2)
        h = check_int("hidden", hidden, minimum=1)
        k = check_int("n_classes", n_classes, minimum=2)
        seeds, dims = _check_models(seeds, embed_dims)
        if init_scale is not None:
            init_scale = check_float("init_scale", init_scale, low=0.0, low_open=True)
        self.seeds, self.dims = seeds, dims
        D = max(dims)
        parts = [
            _initial_weights(make_generator(s, base=base), n, d, D, h, k, decoder, init_scale)
            for s, d in zip(seeds, dims, strict=True)
        ]
        for name in parts[0]:
            setattr(self, name, nn.Parameter(torch.stack([part[name] for part in parts])))
        mask = torch.zeros(len(dims), 1, D)
        for m, d in enumerate(dims):
            mask[m, :, :d] = 1.0
        self.register_buffer("mask", mask)  # (M, 1, D)
        self.to(device)

    @property
    def n_models(self) -> int:
        """Number of models M."""
        return self.embed.shape[0]

    def embedding(self, m: int) -> torch.Tensor:
        """Model m's learned embedding, (n_people, d_m)."""
        m = check_int("m", m, minimum=0)
        if m >= self.n_models:
            raise ValueError(f"model index must be < {self.n_models}, got {m}")
        return self.embed.detach()[m, :, : self.dims[m]]

    def index(self, dim: int, seed: int) -> int:
        """Position of the model with embedding size ``dim`` and ``seed``."""
        for m, key in enumerate(zip(self.dims, self.seeds, strict=True)):
            if key == (dim, seed):
                return m
        raise ValueError(
            f"no model with dim={dim}, seed={seed}; have "
            f"{sorted(set(zip(self.dims, self.seeds, strict=True)))}"
        )

    def forward(self, pairs: torch.Tensor, embed: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (M, P, K) for ordered pairs (P, 2); ``embed`` (M, n, D) replaces the
        models' own embeddings (used for stitching)."""
        E = self.embed if embed is None else embed  # (M, n, D)
        if E.shape[0] != self.n_models or E.shape[2] != self.embed.shape[2]:
            raise ValueError(
                f"embed must have shape ({self.n_models}, n, "
                f"{self.embed.shape[2]}), got {tuple(E.shape)}"
            )
        E = E * self.mask
        if self.decoder == "bilinear":  # logits_k = e_a^T R_k e_b + u_k.e_a + v_k.e_b + c_k
            ER = torch.einsum("mni,mkij->mnkj", E, self.rel)  # (M, n, K, D)
            e_b = E[:, pairs[:, 1]]  # (M, P, D)
            bil = (ER[:, pairs[:, 0]] * e_b[:, :, None]).sum(-1)  # (M, P, K)
            return bil + (E @ self.u_a)[:, pairs[:, 0]] + e_b @ self.u_b + self.b_out
        u_a, u_b = E @ self.w_a, E @ self.w_b  # (M, n, h) each
        hidden = torch.relu(u_a[:, pairs[:, 0]] + u_b[:, pairs[:, 1]] + self.b_1)  # (M, P, h)
        return torch.baddbmm(self.b_out, hidden, self.w_out)  # (M, P, K)

    def select(self, index: int | Sequence[int]) -> KinshipModels:
        """A frozen copy holding the models at ``index`` (an int or a list of ints)."""
        idx = [index] if isinstance(index, (int, np.integer)) else list(index)
        for i in idx:
            if not 0 <= i < self.n_models:
                raise ValueError(f"model index must be in [0, {self.n_models}), got {i}")
        out = KinshipModels.__new__(KinshipModels)
        nn.Module.__init__(out)
        out.decoder = self.decoder
        out.seeds = tuple(self.seeds[i] for i in idx)
        out.dims = tuple(self.dims[i] for i in idx)
        D = max(out.dims)
        for name, p in self.named_parameters():
            value = p.detach()[idx].clone()
            if name == "embed":
                value = value[:, :, :D]
            elif name in ("w_a", "w_b", "u_a", "u_b"):
                value = value[:, :D]
            elif name == "rel":
                value = value[:, :, :D, :D]
            setattr(out, name, nn.Parameter(value, requires_grad=False))
        out.register_buffer("mask", self.mask[idx][:, :, :D].clone())
        return out


def per_model_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Each model's mean cross-entropy (nats): logits (M, P, K), labels (P,) -> (M,).

    :func:`~seqtheory.core.training.train` steps on their sum, so the models train
    independently, and records them per model."""
    M, P, K = logits.shape
    return (
        F.cross_entropy(logits.reshape(M * P, K), labels.repeat(M), reduction="none")
        .reshape(M, P)
        .mean(1)
    )


def accuracy(
    models: KinshipModels,
    data: KinshipData,
    which: str = "test_facts",
    embed: torch.Tensor | None = None,
) -> np.ndarray:
    """Fraction of pairs in ``data.select(which)`` whose term each model names: (M,)."""
    if not isinstance(models, KinshipModels):
        raise TypeError(f"models must be KinshipModels, got {type(models).__name__}")
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    pairs, labels = data.to(models.mask.device).select(which)
    if len(labels) == 0:
        raise ValueError(f"the data has no {which!r} pairs")
    with evaluating(models):
        pred = models(pairs, embed).argmax(-1)  # (M, P)
    return to_numpy((pred == labels).double().mean(1))


def _kinship_evaluation(data: KinshipData):
    """The evaluation of :func:`train_kinship`: every model's accuracy on the training pairs
    and on the held-out facts of ``data``."""

    def evaluate(models, step):
        return {
            "train acc": accuracy(models, data, "train"),
            "held-out acc": accuracy(models, data, "test_facts"),
        }

    return evaluate


def train_kinship(
    data: KinshipData,
    dims: int | Sequence[int] = 4,
    seeds: Sequence[int] = (0,),
    *,
    hidden: int = 32,
    steps: int = 1000,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    init_scale: float | None = None,
    decoder: str = "mlp",
    base: int | None = None,
    device=None,
    progress: bool = True,
    desc: str = "training models",
) -> tuple[KinshipModels, History]:
    """Train one model per (embedding size, seed) on the training pairs, all at once.

    Full-batch AdamW through :func:`~seqtheory.core.training.train`, one loss per model;
    models are ordered size-major (all seeds of ``dims[0]`` first) and initialised from
    logical seed ``seed`` under ``base`` (see :class:`KinshipModels`).  Models and data live on
    ``device`` (None: the CPU) while training.  Returns ``(models, history)``, the models
    frozen; the history records every model's training loss, training accuracy and
    held-out-fact accuracy ((evals, M) arrays)."""
    if not isinstance(data, KinshipData):
        raise TypeError(f"data must be KinshipData, got {type(data).__name__}")
    device = check_device("device", device)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    seeds = tuple(seeds)
    if not dims or not seeds:
        raise ValueError("dims and seeds must each name at least one value")
    models = KinshipModels(
        data.n_people,
        [d for d in dims for _ in seeds],
        [s for _ in dims for s in seeds],
        hidden,
        init_scale=init_scale,
        decoder=decoder,
        base=base,
        device=device,
    )
    data = data.to(device)  # moved once
    pairs, labels = data.select("train")  # (P, 2), (P,)
    cfg = TrainConfig(
        steps=steps, lr=lr, weight_decay=weight_decay, grad_clip=None, eval_every=max(1, steps // 4)
    )
    hist = train(
        models,
        lambda step: (pairs, labels),
        cfg,
        eval_fn=_kinship_evaluation(data),
        loss_fn=per_model_loss,
        progress=progress,
        desc=desc,
    )
    models.requires_grad_(False)
    return models, hist


# --------------------------------------------------------------------------- figures
def _scatter_people(ax, xy: np.ndarray, forest: FamilyForest, **kw) -> None:
    """People at (n, 2) positions: colour = generation, marker = family."""
    import matplotlib.pyplot as plt

    top = int(forest.generation.max())
    cmap = plt.get_cmap("viridis", top + 1)
    for fam, marker in zip(np.unique(forest.family), "osD^v", strict=False):
        sel = forest.family == fam
        ax.scatter(
            xy[sel, 0],
            xy[sel, 1],
            c=forest.generation[sel],
            cmap=cmap,
            marker=marker,
            vmin=-0.5,
            vmax=top + 0.5,
            edgecolor="k",
            label=f"family {fam}",
            **kw,
        )


def _axes(ax, figsize):
    """``ax``, or the axes of a new figure of ``figsize``."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    return ax


def plot_forest(forest: FamilyForest, ax=None, *, labels: bool = False):
    """Draw the genealogy: generations top to bottom, parent-child lines, spouse links;
    colour = generation, marker = family (as in :func:`plot_embedding`).  Returns ``ax``
    (a new figure's axes when None)."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    ax = _axes(ax, (8, 3.4))
    x = np.zeros(forest.n)
    for g in np.unique(forest.generation):  # order people within a row
        row = np.flatnonzero(forest.generation == g)
        if g == 0:
            order = row
        else:  # children under their parents, partners next to spouses

            def key(p):
                par = np.flatnonzero(forest.parent[:, p])
                sp = np.flatnonzero(forest.spouse[p])
                if len(par):
                    return (x[par].mean(), p)
                if len(sp) and forest.parent[:, sp[0]].any():  # next to the partner
                    return (x[np.flatnonzero(forest.parent[:, sp[0]])].mean(), sp[0] + 0.5)
                return (2.0, p)

            order = sorted(row, key=key)
        x[order] = np.linspace(0, 1, len(order) + 2)[1:-1]
    y = -forest.generation.astype(float)
    for a, b in zip(*np.nonzero(forest.parent), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.75", lw=0.8, zorder=1)
    for a, b in zip(*np.nonzero(np.triu(forest.spouse)), strict=True):
        ax.plot([x[a], x[b]], [y[a], y[b]], color="0.3", lw=1.6, zorder=1)
    _scatter_people(ax, np.stack([x, y], 1), forest, s=40, zorder=2, linewidth=0.4)
    if labels:
        for p in range(forest.n):
            ax.annotate(
                str(p),
                (x[p], y[p]),
                fontsize=7,
                ha="center",
                va="bottom",
                xytext=(0, 4),
                textcoords="offset points",
            )
    ax.set_yticks(-np.unique(forest.generation))
    ax.set_yticklabels([f"gen {g}" for g in np.unique(forest.generation)])
    ax.set_xticks([])
    ax.grid(False)
    return ax


def plot_embedding(coords, forest: FamilyForest, ax=None, title: str | None = None):
    """Scatter 2-D coordinates (n, 2) of the people (e.g. from
    :func:`~seqtheory.similarity.pca_2d`): colour = generation, marker = family."""
    if not isinstance(forest, FamilyForest):
        raise TypeError(f"forest must be a FamilyForest, got {type(forest).__name__}")
    coords = to_numpy(coords)
    if coords.shape != (forest.n, 2):
        raise ValueError(f"coords must have shape ({forest.n}, 2), got {coords.shape}")
    ax = _axes(ax, (5, 4.5))
    _scatter_people(ax, coords, forest, s=30, linewidth=0.3)
    ax.set_xlabel("PC 1 of B's embedding", fontsize=9)
    ax.set_ylabel("PC 2", fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    return ax
