"""Several seeds of one small model, trained as one batched program.

A claim about training behaviour is a claim about several seeds. Tiny models are
overhead-bound, so training M of them one after the other costs about M times one run,
while stacking their weights and running them as one program (``torch.func`` ``vmap``
over a leading *member* dimension) costs far less. :class:`Ensemble` does this for any
module: ``Ensemble(lambda: Transformer(cfg), seeds=[0, 1, 2])`` builds member ``m`` under
``seeded(seeds[m])`` (so it has exactly the weights that ``with seeded(s): build()`` gives),
and its forward pass maps inputs of shape (M, B, ...) (one batch per member) or (B, ...)
(``shared=True``: the same batch for all) to outputs with a leading member dimension.

:func:`seqtheory.core.training.train` accepts an ``Ensemble``: each member's loss is its own
mean loss, gradients are clipped per member and AdamW acts element-wise, so member ``m``
follows the same optimisation as a model trained alone (up to floating-point rounding:
batched kernels add in another order).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap

from .models import checking_inputs, explicit_attention, unchecked_inputs
from .seeds import seeded
from .validate import check_int

__all__ = ["Ensemble", "ensemble_loss", "member_eval"]


def _key(name: str) -> str:
    return name.replace(".", "__")


class Ensemble(nn.Module):
    """M independently initialised copies of one architecture with stacked weights."""

    def __init__(
        self, build: Callable[[], nn.Module], seeds: Sequence[int], *, base: int | None = None
    ):
        """Member ``m`` is ``build()`` under ``seeded(seeds[m], base=base)`` (``base`` None:
        the book's base seed, :func:`~seqtheory.core.seeds.base_seed`)."""
        super().__init__()
        if not callable(build):
            raise TypeError("build must be a callable that returns a new torch.nn.Module")
        if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
            raise TypeError(f"seeds must be a sequence of ints, got {type(seeds).__name__}")
        seeds = [check_int("seed", s, minimum=0) for s in seeds]
        if not seeds:
            raise ValueError("seeds must name at least one member, got an empty sequence")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {seeds}")
        members = []
        for s in seeds:
            with seeded(s, base=base):
                m = build()
            if not isinstance(m, nn.Module):
                raise TypeError(f"build() must return a torch.nn.Module, got {type(m).__name__}")
            members.append(m)
        if any(type(m) is not type(members[0]) for m in members):
            raise ValueError("build() must return the same architecture for every seed")
        self.seeds = tuple(seeds)
        params, buffers = stack_module_state(members)  # name -> (M, ...) tensors
        self._names = list(params)
        self._buffer_names = list(buffers)
        self.stacked = nn.ParameterDict({_key(n): nn.Parameter(p) for n, p in params.items()})
        for n, b in buffers.items():
            self.register_buffer("buf__" + _key(n), b, persistent=False)
        # a copy of the architecture that functional_call fills with each member's weights
        # (a real copy, not "meta": moving to meta would untie tied weights)
        self._template = [copy.deepcopy(members[0])]
        self._fresh = [copy.deepcopy(members[0])]  # real weights, for member()

    def stacked_linear_weights(self) -> list[nn.Parameter]:
        """The stacked parameters that are ``nn.Linear`` weights in a member (a weight tied
        to another parameter counts under that parameter's name, as in the member)."""
        template = self._template[0]
        name_of = {id(p): n for n, p in template.named_parameters()}
        return [
            self.stacked[_key(name_of[id(m.weight)])]
            for m in template.modules()
            if isinstance(m, nn.Linear) and id(m.weight) in name_of
        ]

    @property
    def num_members(self) -> int:
        """Number of members M."""
        return len(self.seeds)

    def __len__(self) -> int:
        return len(self.seeds)

    def _state(self) -> tuple[dict, dict]:
        params = {n: self.stacked[_key(n)] for n in self._names}
        buffers = {n: getattr(self, "buf__" + _key(n)) for n in self._buffer_names}
        return params, buffers

    def forward(self, *inputs: torch.Tensor, shared: bool = False, **kwargs):
        """Run every member: inputs (M, B, ...) each (or (B, ...) with ``shared=True``).

        Returns the members' outputs stacked along a new first dimension (M, ...).
        Keyword arguments are passed unchanged to every member's forward.
        """
        M = self.num_members
        if not inputs:
            raise TypeError("Ensemble.forward needs at least one input tensor")
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"input {i} must be a torch.Tensor, got {type(x).__name__}")
            if not shared and (x.dim() == 0 or x.shape[0] != M):
                raise ValueError(
                    f"input {i} must have a leading member dimension of size {M} (one batch "
                    f"per member), got shape {tuple(x.shape)}; pass shared=True to give "
                    "every member the same batch"
                )
        template = self._template[0]
        check = getattr(template, "validate_input", None)
        # validate once, outside vmap (data-dependent checks read the values: a host sync on
        # a GPU), unless the caller takes them unchecked (inside unchecked_inputs())
        if check is not None and checking_inputs():
            check(*(x if shared else x.flatten(0, 1) for x in inputs))
        params, buffers = self._state()

        def one(p, b, *xs):
            return functional_call(template, (p, b), xs, kwargs)

        in_dims = (0, 0) + tuple(None if shared else 0 for _ in inputs)
        with unchecked_inputs(), explicit_attention():
            return vmap(one, in_dims=in_dims, randomness="different")(params, buffers, *inputs)

    def member(self, m: int) -> nn.Module:
        """A standalone copy of member ``m`` with its current weights (for plots, probes)."""
        m = check_int("m", m, minimum=0)
        if m >= self.num_members:
            raise ValueError(f"m must be in 0..{self.num_members - 1}, got {m}")
        model = copy.deepcopy(self._fresh[0])
        params, buffers = self._state()
        state = {n: t[m].detach().clone() for n, t in {**params, **buffers}.items()}
        model.load_state_dict(state, strict=False)
        model.train(self.training)
        return model.to(next(iter(params.values())).device)

    def members(self) -> list[nn.Module]:
        """Standalone copies of every member (see :meth:`member`)."""
        return [self.member(m) for m in range(self.num_members)]

    @torch.no_grad()
    def _scratch_members(self) -> list[nn.Module]:
        """Reusable modules holding the members' current weights (for evaluation only:
        they are overwritten at the next call, so do not keep them)."""
        if not hasattr(self, "_scratch") or len(self._scratch) != self.num_members:
            self._scratch = [self.member(m) for m in range(self.num_members)]
            return self._scratch
        params, buffers = self._state()
        for m, model in enumerate(self._scratch):
            own = dict(model.named_parameters())
            own.update(dict(model.named_buffers()))
            for n, t in {**params, **buffers}.items():
                if n in own:
                    own[n].copy_(t[m])
            model.train(self.training)
        return self._scratch

    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """Clip each member's gradient to global norm ``max_norm``; return the (M,) norms."""
        grads = [p.grad for p in self.stacked.values() if p.grad is not None]
        if not grads:
            return torch.zeros(self.num_members)
        sq = sum(g.pow(2).flatten(1).sum(1) for g in grads)  # (M,)
        norms = sq.sqrt()
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)  # (M,)
        for g in grads:
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))
        return norms


def ensemble_loss(loss_fn: Callable, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-member losses (M,): ``loss_fn(outputs[m], targets[m])`` (targets may be shared)."""
    M = outputs.shape[0]
    per_member = (
        targets.dim() == outputs.dim() - 1
        and targets.shape[0] == M
        and targets.shape[1:] == outputs.shape[1:-1]
    )
    return torch.stack(
        [loss_fn(outputs[m], targets[m] if per_member else targets) for m in range(M)]
    )


def member_eval(eval_fn: Callable[[nn.Module, int], dict]) -> Callable[[Ensemble, int], dict]:
    """Turn a one-model ``eval_fn(model, step) -> {name: float}`` into an ensemble's.

    The result maps each metric name to the list of its M member values.
    """

    def evaluate(ens: Ensemble, step: int) -> dict:
        rows = [eval_fn(model, step) for model in ens._scratch_members()]
        return {k: [float(r[k]) for r in rows] for k in rows[0]}

    return evaluate
