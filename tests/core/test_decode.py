"""Tests of greedy decoding (seqtheory.core.decode)."""

import pytest
import torch

from seqtheory import Transformer, TransformerConfig
from seqtheory.core.decode import greedy_decode


class Counter(torch.nn.Module):
    """Logits (..., T, V) that put the next token at (last token + 1) mod V."""

    def __init__(self, V: int = 5):
        super().__init__()
        self.V = V

    def forward(self, ids):
        return 10.0 * torch.nn.functional.one_hot((ids + 1) % self.V, self.V).float()


def test_greedy_decode_appends_the_argmax_and_stops_when_every_row_has_stopped():
    model = Counter().train()
    prompt = torch.tensor([[0, 1], [2, 3]])
    assert torch.equal(greedy_decode(model, prompt, 4), torch.tensor([[2, 3, 4, 0], [4, 0, 1, 2]]))
    assert model.training  # mode restored
    # row 0 writes 4 at step 3, row 1 wrote it at step 1: decoding ends after step 3
    assert torch.equal(
        greedy_decode(model, prompt, 6, stop=4), torch.tensor([[2, 3, 4], [4, 0, 1]])
    )
    # any leading shape (..., T)
    assert greedy_decode(model, prompt[None].expand(3, -1, -1), 2).shape == (3, 2, 2)


def test_greedy_decode_matches_the_loop_by_hand_on_a_transformer():
    model = Transformer(TransformerConfig(vocab_size=7, max_len=12, d_model=8), seed=0)
    prompt = torch.randint(7, (3, 4), generator=torch.Generator().manual_seed(0))
    seqs = prompt
    with torch.no_grad():
        for _ in range(5):
            seqs = torch.cat([seqs, model(seqs)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(greedy_decode(model, prompt, 5), seqs[:, 4:])


def test_greedy_decode_uses_next_logits_where_the_model_has_it():
    class Last(Counter):
        def next_logits(self, ids):
            return torch.zeros(*ids.shape[:-1], self.V).index_fill(-1, torch.tensor([3]), 1.0)

    assert torch.equal(greedy_decode(Last(), torch.tensor([[0]]), 2), torch.tensor([[3, 3]]))


@pytest.mark.parametrize(
    "model, prompt, steps, err, match",
    [
        (lambda x: x, torch.tensor([[0]]), 1, TypeError, "model must be a torch.nn.Module"),
        (Counter(), [[0]], 1, TypeError, "prompt must be a tensor"),
        (Counter(), torch.zeros(2, 0, dtype=torch.long), 1, TypeError, "T >= 1"),
        (Counter(), torch.tensor([[0]]), 0, ValueError, "steps must be >= 1"),
    ],
)
def test_greedy_decode_refuses_bad_input(model, prompt, steps, err, match):
    with pytest.raises(err, match=match):
        greedy_decode(model, prompt, steps)
