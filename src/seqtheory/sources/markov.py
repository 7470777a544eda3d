"""Markov chains for in-context learning (ICL-MC) and the reference predictors.

Every sequence comes from its own transition matrix ``P`` on ``k`` states, each row drawn
from ``Dirichlet(alpha * 1)``; the first token is drawn from the stationary distribution of
``P``.  An order-``m`` chain has one row per context of ``m`` tokens: ``P`` has shape
(batch, k**m, k), context ``(x_{t-m+1}, ..., x_t)`` having index ``sum_i x_{t-i} k**i``.

Sampling is vectorised over the batch *and* the sequence: each step's transition is
a map ``[k] -> [k]`` (fixed by one uniform draw per step and state), and the prefix
compositions of these maps are computed by doubling in ``log2(T)`` tensor operations.

Predictors map a batch of sequences ``x`` (B, T) to next-token distributions (B, T, k):
row ``t`` predicts ``x[:, t + 1]`` from ``x[:, :t + 1]``.  :func:`sequence_loss` scores a
predictor on all ``T`` tokens of a sequence, the first one (which has no context) being
predicted uniformly by every strategy.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..core.seeds import check_generator_device as _check_generator_device
from ..core.seeds import make_generator
from ..core.validate import check_choice, check_float, check_int

__all__ = [
    "sample_transition_matrices",
    "stationary_distribution",
    "sample_chains",
    "icl_mc_batch",
    "lift",
    "sample_ngram_chains",
    "ngram_predictor",
    "uniform_predictor",
    "unigram_predictor",
    "bigram_predictor",
    "oracle_predictor",
    "sequence_loss",
    "kl_divergence",
    "binary_entropy",
    "switching_matrix",
    "switching_entropy_rate",
    "switching_unigram_entropy",
    "sample_switching",
    "ngram_name",
    "strategies",
    "reference_losses",
]


def _order_of(P: torch.Tensor) -> int:
    """The order m of a transition tensor (B, k**m, k)."""
    k, rows = P.shape[2], P.shape[1]
    m = max(1, round(math.log(rows) / math.log(k)))
    if k**m != rows:
        raise ValueError(f"P has {rows} rows, not a power of k = {k}: expected (batch, k**m, k)")
    return m


def _check_P(P: torch.Tensor, square: bool = False) -> torch.Tensor:
    if not isinstance(P, torch.Tensor):
        raise TypeError(f"P must be a torch.Tensor, got {type(P).__name__}")
    if P.dim() != 3 or (square and P.shape[1] != P.shape[2]):
        shape = "(batch, k, k)" if square else "(batch, k**m, k)"
        raise ValueError(f"P must have shape {shape}, got {tuple(P.shape)}")
    if P.shape[2] < 2:
        raise ValueError(f"P needs k >= 2 states, got k = {P.shape[2]}")
    _order_of(P)
    if (P < 0).any() or not torch.allclose(P.sum(-1), torch.ones((), dtype=P.dtype), atol=1e-5):
        raise ValueError("every row of P must be a probability distribution (>= 0, sums to 1)")
    return P


def _check_x(x: torch.Tensor, k: int) -> torch.Tensor:
    k = check_int("k", k, minimum=2)
    if not isinstance(x, torch.Tensor) or x.dtype not in (torch.int64, torch.int32):
        raise TypeError("x must be an integer torch.Tensor of shape (batch, T)")
    if x.dim() != 2 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (batch, T) with T >= 1, got {tuple(x.shape)}")
    if x.numel() and (int(x.min()) < 0 or int(x.max()) >= k):
        raise ValueError(
            f"x must hold states 0..{k - 1}, got values in {int(x.min())}..{int(x.max())}"
        )
    return x


PRIORS = ("dirichlet", "doubly_stochastic")


def sample_transition_matrices(
    batch: int,
    k: int,
    alpha: float = 1.0,
    *,
    order: int = 1,
    prior: str = "dirichlet",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``batch`` transition tensors (batch, k**order, k) with rows ~ Dirichlet(alpha * 1).

    ``prior="doubly_stochastic"`` (order 1 only) rescales each Dirichlet matrix by Sinkhorn
    iterations until its columns also sum to 1: the stationary distribution is then
    uniform, so in-context unigram statistics carry no information.
    """
    batch = check_int("batch", batch, minimum=1)
    k = check_int("k", k, minimum=2)
    order = check_int("order", order, minimum=1)
    alpha = check_float("alpha", alpha, low=0.0, low_open=True)
    check_choice("prior", prior, PRIORS)
    if prior == "doubly_stochastic" and order != 1:
        raise ValueError(f"the doubly_stochastic prior needs order=1, got order={order}")
    if generator is None:  # derive one from the global seed (see seed_everything)
        generator = torch.Generator().manual_seed(int(torch.randint(2**62, (1,))))
    # Dirichlet rows = normalised Gamma(alpha) draws (torch's Dirichlet takes no generator)
    shape = (batch, k**order, k)
    if alpha < 1.0:  # small alpha: Gamma draws underflow, so normalise them in log space
        P = _gamma(alpha, shape, generator, log=True).softmax(-1)
    else:
        P = _gamma(alpha, shape, generator).clamp_min(torch.finfo(torch.float64).tiny)
        P = P / P.sum(-1, keepdim=True)
    if prior == "doubly_stochastic":
        P = P.to(torch.float64)
        for i in range(200):  # Sinkhorn: alternate column and row normalisation
            P = P / P.sum(-2, keepdim=True)
            P = P / P.sum(-1, keepdim=True)
            # converged: columns sum to 1 within rounding (checked every 8 sweeps)
            if i % 8 == 7 and float((P.sum(-2) - 1).abs().max()) < 1e-13:
                break
    return P.to(dtype)


def _gamma(
    alpha: float, shape: tuple, generator: torch.Generator, log: bool = False
) -> torch.Tensor:
    """Gamma(alpha, 1) draws from ``generator`` (Marsaglia-Tsang, vectorised rejection);
    with ``log=True`` their logarithms (exact even where the draws underflow: alpha << 1)."""
    boost = alpha < 1.0  # Gamma(a) = Gamma(a + 1) * U^(1/a)
    a = alpha + 1.0 if boost else alpha
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    dev = generator.device  # draws are made where the generator lives
    out = torch.empty(shape, dtype=torch.float64, device=dev).view(-1)
    todo = torch.arange(out.numel(), device=dev)
    while todo.numel():
        n = todo.numel()
        z = torch.randn(n, generator=generator, dtype=torch.float64, device=dev)
        u = torch.rand(n, generator=generator, dtype=torch.float64, device=dev)
        v = (1.0 + c * z) ** 3
        ok = (v > 0) & (
            torch.log(u.clamp_min(1e-300))
            < 0.5 * z**2 + d - d * v + d * torch.log(v.clamp_min(1e-300))
        )
        out[todo[ok]] = d * v[ok]
        todo = todo[~ok]
    if boost:
        u = torch.rand(out.numel(), generator=generator, dtype=torch.float64, device=dev)
        if log:
            return (out.log() + u.clamp_min(1e-300).log() / alpha).view(shape)
        out = out * u.clamp_min(1e-300) ** (1.0 / alpha)
    return (out.log() if log else out).view(shape)


def stationary_distribution(P: torch.Tensor) -> torch.Tensor:
    """Stationary distribution pi (batch, k) of each P, solving pi^T P = pi^T, sum(pi) = 1.

    Solved as a linear system (one equation of ``(P^T - I) pi = 0`` replaced by the
    normalisation), exact for irreducible chains, which Dirichlet rows are almost surely.
    """
    P = _check_P(P, square=True)
    B, k, _ = P.shape
    A = (P.transpose(1, 2) - torch.eye(k, dtype=P.dtype, device=P.device)).to(
        torch.float64
    )  # (B, k, k)
    A[:, -1, :] = 1.0
    b = torch.zeros(B, k, 1, dtype=torch.float64, device=P.device)
    b[:, -1] = 1.0
    sol, info = torch.linalg.solve_ex(A, b)
    if bool((info != 0).any()):
        bad = int((info != 0).nonzero()[0, 0])
        raise ValueError(
            f"P[{bad}] has no unique stationary distribution (a reducible chain); "
            "give each chain a start state with start=..."
        )
    pi = sol[..., 0].clamp_min(0.0)  # (B, k)
    return (pi / pi.sum(-1, keepdim=True)).to(P.dtype)


def sample_chains(
    P: torch.Tensor,
    T: int,
    *,
    start: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One sequence (batch, T) per transition matrix; first state ~ stationary (or ``start``).

    Vectorised over batch and time: with one uniform per step, ``f_t(i)`` = the state that
    follows ``i`` at step ``t``; the states are ``x_{t+1} = (f_t o ... o f_1)(x_1)``, and all
    prefix compositions are computed by doubling (``ceil(log2 T)`` gathers).
    """
    P = _check_P(P, square=True)
    T = check_int("T", T, minimum=1)
    B, k, _ = P.shape
    _check_generator_device(generator, P.device)
    if start is None:
        pi = stationary_distribution(P)
        start = torch.multinomial(pi, 1, generator=generator)[:, 0]  # (B,)
    elif not isinstance(start, torch.Tensor) or start.shape != (B,):
        raise ValueError(
            f"start must be a tensor of shape ({B},), got "
            f"{tuple(start.shape) if isinstance(start, torch.Tensor) else start!r}"
        )
    elif (
        start.dtype.is_floating_point
        or start.dtype == torch.bool
        or (start.numel() and (int(start.min()) < 0 or int(start.max()) >= k))
    ):
        raise ValueError(f"start must hold integer states in 0..{k - 1}")
    if T == 1:
        return start[:, None].clone()
    cdf = P.to(torch.float64).cumsum(-1)  # (B, k, k)
    cdf[..., -1] = 1.0 + 1e-9  # guard rounding
    u = torch.rand(
        B, T - 1, 1, 1, generator=generator, dtype=torch.float64, device=P.device
    )  # one per step
    # maps[b, t, i] = next state after i at step t: count of cdf entries <= u
    maps = (cdf[:, None] <= u).sum(-1).clamp_max(k - 1)  # (B, T-1, k)
    # prefix compositions by doubling: after the loop maps[t] = f_t o ... o f_1
    shift = 1
    while shift < T - 1:
        earlier = maps[:, :-shift]  # f_{t-s} o ...
        later = maps[:, shift:]
        maps = torch.cat([maps[:, :shift], later.gather(2, earlier)], dim=1)
        shift *= 2
    rest = maps.gather(2, start[:, None, None].expand(B, T - 1, 1))[..., 0]  # (B, T-1)
    return torch.cat([start[:, None], rest], dim=1)


def lift(P: torch.Tensor) -> torch.Tensor:
    """The first-order chain on contexts of an order-m tensor P (B, k**m, k): (B, k**m, k**m).

    From context ``c`` the next token ``j`` leads to context ``(c * k + j) mod k**m``.
    """
    P = _check_P(P)
    B, S, k = P.shape
    if S == k:
        return P
    idx = torch.arange(S, device=P.device)
    nxt = (idx[:, None] * k + idx[None, :k]) % S  # (S, k)
    Q = torch.zeros(B, S, S, dtype=P.dtype, device=P.device)
    Q.scatter_add_(2, nxt.expand(B, S, k), P)
    return Q


def sample_ngram_chains(
    P: torch.Tensor, T: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Sequences (batch, T) of the order-m chains P (B, k**m, k), started stationary.

    The first m tokens are the digits of a context drawn from the stationary law of the
    lifted chain (:func:`lift`); each later token is the last digit of the next context.
    """
    P = _check_P(P)
    T = check_int("T", T, minimum=1)
    B, S, k = P.shape
    m = _order_of(P)
    if m == 1:
        return sample_chains(P, T, generator=generator)
    if T < m:
        raise ValueError(f"T must be >= the order m = {m}, got {T}")
    contexts = sample_chains(lift(P), T - m + 1, generator=generator)  # (B, T-m+1)
    digits = k ** torch.arange(m - 1, -1, -1, device=P.device)  # most significant digit first
    first = (contexts[:, :1] // digits) % k  # (B, m)
    return torch.cat([first, contexts[:, 1:] % k], dim=1)


def icl_mc_batch(
    batch: int,
    k: int,
    T: int,
    alpha: float = 1.0,
    *,
    order: int = 1,
    prior: str = "dirichlet",
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the ICL-MC task: sequences (batch, T) and their own P (batch, k**order, k)."""
    P = sample_transition_matrices(batch, k, alpha, order=order, prior=prior, generator=generator)
    return sample_ngram_chains(P, T, generator=generator), P


# ----------------------------------------------------------------------------- predictors
def uniform_predictor(x: torch.Tensor, k: int) -> torch.Tensor:
    """The context-free guess 1/k at every position: (B, T, k)."""
    x = _check_x(x, k)
    return torch.full((*x.shape, k), 1.0 / k, dtype=torch.float64, device=x.device)


def _context_ids(x: torch.Tensor, k: int, length: int) -> torch.Tensor:
    """Index of every window of ``length`` tokens: (B, T - length + 1); window i = x[i:i+length]."""
    if length == 0:
        return torch.zeros(x.shape[0], x.shape[1] + 1, dtype=torch.long, device=x.device)
    digits = k ** torch.arange(length - 1, -1, -1, device=x.device)  # (length,)
    return (x.unfold(1, length, 1) * digits).sum(-1)


def ngram_predictor(x: torch.Tensor, k: int, n: int, alpha: float = 1.0) -> torch.Tensor:
    """In-context n-gram estimate ``(N(c -> j) + alpha) / (N(c -> .) + k alpha)``: (B, T, k).

    ``c`` is the context of the last ``n - 1`` tokens and ``N`` counts, in the sequence so
    far, how often ``c`` was followed by ``j``.  This is the posterior predictive
    (Bayes-optimal) rule for an order-(n-1) chain whose rows have a Dirichlet(alpha) prior.
    ``n = 1`` is the unigram rule and ``n = 2`` the bigram rule.  Positions with fewer than
    ``n - 1`` tokens of context predict uniformly.
    """
    x = _check_x(x, k)
    n = check_int("n", n, minimum=1)
    alpha = check_float("alpha", alpha, low=0.0, low_open=True)
    B, T = x.shape
    if B * T * k**n > 2**28:  # the (B, T, k^n) event counts below
        raise ValueError(
            f"n={n} with k={k} needs B*T*k**n = {B * T * k**n:,} counts "
            f"(over 2**28); use a smaller n or batch"
        )
    out = torch.full((B, T, k), 1.0 / k, dtype=torch.float64, device=x.device)
    if T < n - 1:
        return out
    ctx = _context_ids(x, k, n - 1)  # window i = context of event s = i + n - 1
    events = torch.zeros(B, T, k**n, dtype=torch.float64, device=x.device)  # event at time s
    if T > n - 1:
        ids = ctx[:, : T - n + 1] * k + x[:, n - 1 :]  # (B, T-n+1)
        events[:, n - 1 :] = F.one_hot(ids, k**n).to(torch.float64)
    counts = events.cumsum(1).view(B, T, k ** (n - 1), k)  # N up to time t
    t0 = max(n - 2, 0)  # first position with full context
    query = ctx[:, : T - t0]  # context of query t = window t - n + 2
    rows = counts[:, t0:].gather(2, query[:, :, None, None].expand(B, T - t0, 1, k))[:, :, 0]
    out[:, t0:] = (rows + alpha) / (rows.sum(-1, keepdim=True) + k * alpha)
    return out


def unigram_predictor(x: torch.Tensor, k: int) -> torch.Tensor:
    """In-context unigram (Laplace) estimate ``(count_t(j) + 1) / (t + k)``: (B, T, k).

    ``count_t(j)`` counts ``j`` among the first ``t`` tokens ``x[:, :t]`` (1-based ``t``).
    """
    return ngram_predictor(x, k, 1, 1.0)


def bigram_predictor(x: torch.Tensor, k: int, alpha: float = 1.0) -> torch.Tensor:
    """In-context bigram estimate ``(n(x_t -> j) + alpha) / (n(x_t -> .) + k alpha)``.

    The posterior predictive (Bayes-optimal) rule under a ``Dirichlet(alpha)`` prior on the
    rows of P; ``n`` counts the transitions seen so far.  Returns (B, T, k).
    """
    return ngram_predictor(x, k, 2, alpha)


def oracle_predictor(x: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """The true next-token distribution ``P[context]``: (B, T, k).

    For an order-m chain the first m - 1 positions (incomplete context) predict uniformly.
    """
    P = _check_P(P)
    B, S, k = P.shape
    m = _order_of(P)
    x = _check_x(x, k)
    if x.shape[0] != B:
        raise ValueError(f"x has {x.shape[0]} sequences but P has {B} matrices")
    T = x.shape[1]
    out = torch.full((B, T, k), 1.0 / k, dtype=torch.float64, device=x.device)
    if T >= m:
        ctx = _context_ids(x, k, m)  # (B, T-m+1)
        out[:, m - 1 :] = P.to(torch.float64)[torch.arange(B, device=x.device)[:, None], ctx]
    return out


def sequence_loss(probs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Cross-entropy (nats) of predicting each of the T tokens: (B, T).

    Position 0 scores the context-free uniform guess ``ln k``; position ``t >= 1`` scores
    ``probs[:, t - 1]`` on ``x[:, t]``.
    """
    if probs.dim() != 3 or probs.shape[:2] != x.shape:
        raise ValueError(
            f"probs must have shape (B, T, k) matching x {tuple(x.shape)}, got {tuple(probs.shape)}"
        )
    k = probs.shape[-1]
    x = _check_x(x, k)
    nll = -probs[:, :-1].gather(2, x[:, 1:, None])[..., 0].clamp_min(1e-300).log()
    first = torch.full((x.shape[0], 1), math.log(k), dtype=nll.dtype, device=x.device)
    return torch.cat([first, nll], dim=1)


def kl_divergence(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """KL(p || q) over the last dimension (nats); p and q are distributions (non-negative,
    summing to 1 over the last dimension within 1e-4; a ValueError otherwise)."""
    if not isinstance(p, torch.Tensor) or not isinstance(q, torch.Tensor):
        raise TypeError("p and q must be torch tensors of probabilities")
    if p.shape != q.shape:
        raise ValueError(
            f"p and q must have the same shape, got {tuple(p.shape)} and {tuple(q.shape)}"
        )
    p, q = p.to(torch.float64), q.to(torch.float64)
    for name, d in (("p", p), ("q", q)):
        if d.numel() and (
            not bool(torch.isfinite(d).all())
            or bool((d < 0).any())
            or float((d.sum(-1) - 1).abs().max()) > 1e-4
        ):
            raise ValueError(
                f"{name} must hold distributions over its last dimension "
                "(finite, non-negative, summing to 1)"
            )
    return (p * (p.clamp_min(eps).log() - q.clamp_min(eps).log())).sum(-1)


# ----------------------------------------------------------------------------- switching sources
def binary_entropy(p: float, base: float = 2.0) -> float:
    """h(p) = -p log p - (1-p) log(1-p), in bits by default (``base=math.e`` for nats)."""
    p = check_float("p", p, low=0.0, high=1.0)
    if p in (0.0, 1.0):
        return 0.0
    return -(p * math.log(p) + (1 - p) * math.log(1 - p)) / math.log(base)


def _check_pq(p: float, q: float) -> tuple[float, float]:
    p = check_float("p", p, low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_float("q", q, low=0.0, high=1.0, low_open=True, high_open=True)
    return p, q


def switching_matrix(p: float, q: float) -> torch.Tensor:
    """The first-order switching chain ``[[1-p, p], [q, 1-q]]``: leave 0 w.p. p, 1 w.p. q."""
    p, q = _check_pq(p, q)
    return torch.tensor([[1 - p, p], [q, 1 - q]], dtype=torch.float64)


def switching_entropy_rate(p: float, q: float, base: float = 2.0) -> float:
    """Entropy rate H = pi0 h(p) + pi1 h(q) of the switching chain (bits by default).

    The m-th order switching process has the same entropy rate: it is m interleaved copies
    of the first-order chain.
    """
    p, q = _check_pq(p, q)
    pi1 = p / (p + q)
    return (1 - pi1) * binary_entropy(p, base) + pi1 * binary_entropy(q, base)


def switching_unigram_entropy(p: float, q: float, base: float = 2.0) -> float:
    """Cross-entropy of the best unigram (i.i.d.) model of the switching source: h(pi1)."""
    p, q = _check_pq(p, q)
    return binary_entropy(p / (p + q), base)


def sample_switching(
    batch: int,
    T: int,
    p: float,
    q: float,
    *,
    order: int = 1,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Binary sequences (batch, T) of the ``order``-th order switching process (the book's
    m; the tokenization paper writes k), started stationary.

    ``x[t]`` equals ``x[t - m]`` flipped with probability p (if ``x[t - m] = 0``) or q (if
    1): m independent first-order switching chains, interleaved.  ``order = 1`` is the
    first-order chain.
    """
    batch = check_int("batch", batch, minimum=1)
    T = check_int("T", T, minimum=1)
    m = check_int("order", order, minimum=1)
    dev = generator.device if generator is not None else torch.device("cpu")
    P = switching_matrix(p, q).to(dev, torch.float32).expand(batch * m, 2, 2).contiguous()
    n = -(-T // m)  # ceil(T / m) per chain
    chains = sample_chains(P, n, generator=generator)  # (batch * m, n)
    x = chains.view(batch, m, n).transpose(1, 2).reshape(batch, n * m)
    return x[:, :T].contiguous()


NGRAM_NAMES = {1: "unigram", 2: "bigram", 3: "trigram"}


def ngram_name(n: int) -> str:
    """``unigram``, ``bigram``, ``trigram``, then ``4-gram``, ``5-gram`` ..."""
    return NGRAM_NAMES.get(n, f"{n}-gram")


def strategies(x: torch.Tensor, P: torch.Tensor, alpha: float = 1.0) -> dict[str, torch.Tensor]:
    """Every reference predictor on ``x``: uniform, the n-grams up to the Bayes one
    (n = order + 1, with the prior's alpha; lower n with Laplace smoothing alpha = 1) and
    the oracle.  Each value is (B, T, k)."""
    k, m = P.shape[2], _order_of(_check_P(P))
    out = {"uniform": uniform_predictor(x, k)}
    for n in range(1, m + 2):
        out[ngram_name(n)] = ngram_predictor(x, k, n, alpha if n == m + 1 else 1.0)
    out["oracle"] = oracle_predictor(x, P)
    return out


def reference_losses(
    k: int,
    T: int = 100,
    alpha: float = 1.0,
    *,
    order: int = 1,
    prior: str = "dirichlet",
    n: int = 20_000,
    seed: int = 0,
    batch: int = 5_000,
) -> dict[str, tuple[float, float]]:
    """Monte-Carlo expected loss (mean over the T positions) of each reference strategy.

    Returns ``{name: (mean, standard error)}`` for the strategies of :func:`strategies`,
    from ``n`` fresh sequences of the ICL-MC task.
    """
    n = check_int("n", n, minimum=2)
    gen = make_generator(seed)
    per_seq: dict[str, list] = {}
    for start in range(0, n, batch):
        x, P = icl_mc_batch(
            min(batch, n - start), k, T, alpha, order=order, prior=prior, generator=gen
        )
        for name, probs in strategies(x, P, alpha).items():
            per_seq.setdefault(name, []).append(sequence_loss(probs, x).mean(1))
    out = {}
    for name, chunks in per_seq.items():
        v = torch.cat(chunks)
        out[name] = (v.mean().item(), (v.std() / math.sqrt(v.numel())).item())
    return out


# ----------------------------------------------------------------------------- graded prior
def sample_graded_matrices(
    batch: int,
    k: int,
    p: float,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Transition matrices (batch, k, k) from a mixture that grades how useful unigrams are.

    Each matrix is, with probability ``p``, doubly stochastic (uniform stationary law: the
    in-context unigram statistics carry no information) and otherwise has ``k`` identical
    rows ``r ~ Dirichlet(1)`` (the tokens are i.i.d. draws from ``r``: the unigram rule is
    Bayes-optimal and bigrams add nothing).  For ``k = 2`` the doubly stochastic matrices are
    drawn uniformly, ``[[a, 1 - a], [1 - a, a]]`` with ``a ~ U(0, 1)``; for ``k > 2`` by
    Sinkhorn rescaling of Dirichlet matrices (``prior="doubly_stochastic"``).  This is the
    mixture of the authors' code for the ICL-MC paper (Edelman et al., 2024).
    """
    batch = check_int("batch", batch, minimum=1)
    k = check_int("k", k, minimum=2)
    p = check_float("p", p, low=0.0, high=1.0)
    if generator is None:  # derive one from the global seed (see seed_everything)
        generator = torch.Generator().manual_seed(int(torch.randint(2**62, (1,))))
    dev = generator.device
    is_ds = torch.rand(batch, generator=generator, dtype=torch.float64, device=dev) < p  # (B,)
    if k == 2:
        a = torch.rand(batch, generator=generator, dtype=torch.float64, device=dev)
        ds = torch.stack([torch.stack([a, 1 - a], -1), torch.stack([1 - a, a], -1)], -2)
    else:
        ds = sample_transition_matrices(
            batch, k, prior="doubly_stochastic", generator=generator, dtype=torch.float64
        )
    rows = _gamma(1.0, (batch, 1, k), generator).clamp_min(torch.finfo(torch.float64).tiny)
    iid = (rows / rows.sum(-1, keepdim=True)).expand(batch, k, k)  # (B, k, k)
    return torch.where(is_ds[:, None, None], ds, iid).to(dtype)


def graded_batch(
    batch: int,
    k: int,
    T: int,
    p: float,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sequences (batch, T) of chains from :func:`sample_graded_matrices` and their P."""
    T = check_int("T", T, minimum=1)
    P = sample_graded_matrices(batch, k, p, generator=generator)
    return sample_chains(P, T, generator=generator), P


__all__ += ["sample_graded_matrices", "graded_batch"]
