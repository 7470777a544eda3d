"""Chain of thought (``book/chain_of_thought.md``): threshold chains make linear models learn."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..chain_of_thought import (
    FORMATS,
    MULT_FORMATS,
    SUPPORT_FORMATS,
    NextTokenNet,
    all_bit_strings,
    chain_length,
    chain_targets,
    generate,
    multiplication_length,
    parity_chain,
)
from ..core.runtime import evaluating
from ..core.training import IGNORE_INDEX, train
from ..core.validate import check_int

TABLE = ClaimTable(
    "chain_of_thought",
    [
        # --- parity of n bits, every (chain, model) row
        Claim(
            "parity.no_chain_chance",
            "At this budget (12 bits, 512 training strings, 800 steps), without a chain every "
            "model, linear or MLP, stays within 0.15 of chance on unseen strings (between 0.4 "
            "and 0.65; the best MLP may sit a few points above 0.5).",
            "0.4 <= none_test_lo and none_test_hi <= 0.65",
            "a model above 0.65 on unseen strings (it learned something about parity without "
            "a chain), or one far below chance",
            scale="cpu",
        ),
        Claim(
            "parity.no_chain_linear_chance",
            "Without a chain the linear model stays near chance on unseen strings.",
            "0.4 <= none_linear_test_lo and none_linear_test_hi <= 0.6",
            "a linear model above 0.6 on unseen strings: a single threshold of the bits that "
            "predicts parity",
        ),
        Claim(
            "parity.mlp_memorises",
            "At this budget, without a chain the MLP memorises its training strings.",
            "none_mlp_train >= 0.85",
            "an MLP too small or too briefly trained to fit 512 strings (mean training "
            "accuracy below 0.85)",
            scale="cpu",
        ),
        Claim(
            "parity.linear_cannot_fit",
            "One linear threshold of the bits cannot even fit the parity of its training "
            "strings (no chain or running chain).",
            "linear_train_best <= 0.65",
            "a linear model that fits more than 0.65 of its training strings, i.e. one that "
            "is not a single threshold of the bits",
        ),
        Claim(
            "parity.running_mlp",
            "With the running-XOR chain the MLP learns parity: every model is near 1 on "
            "unseen strings.",
            "running_mlp_worst >= 0.98",
            "an MLP that does not learn the two-bit XOR steps (any model below 0.98)",
        ),
        Claim(
            "parity.running_linear_chance",
            "With the running-XOR chain the linear model stays at chance.",
            "0.4 <= running_linear_test_lo and running_linear_test_hi <= 0.6",
            "a linear model that learns an XOR step (above 0.6 on unseen strings)",
        ),
        Claim(
            "parity.threshold_linear",
            "With the threshold chain the linear model learns parity on unseen strings.",
            "threshold_linear_worst >= 0.98",
            "a linear model that does not learn the threshold steps (any model below 0.98)",
        ),
        Claim(
            "parity.binary_linear",
            "The 4-token binary count takes the linear model far above chance.",
            "binary_linear_worst >= 0.85",
            "a short chain of thresholds that does not help the linear model (any model below "
            "0.85), i.e. length rather than linearity of the steps being what matters",
        ),
        Claim(
            "parity.unary_linear",
            "The 13-token unary chain takes the linear model far above chance too.",
            "unary_linear_worst >= 0.85",
            "a linear model that does not learn the unary thresholds (any model below 0.85)",
        ),
        Claim(
            "parity.mlp_every_chain",
            "The MLP is near 1 on every chain.",
            "mlp_chain_worst >= 0.95",
            "an MLP model below 0.95 on unseen strings with some chain",
        ),
        # --- follow-ups: longer training, weights tied across positions
        Claim(
            "followups.longer_training",
            "The linear model on the binary chain is still learning: with three times as "
            "many steps the worst model's error on unseen strings falls by at least a quarter.",
            "1 - binary_linear_long_worst <= 0.75 * (1 - min(binary_linear_test))",
            "longer training that stalls (the worst model's error barely changes) or makes a "
            "model worse",
        ),
        Claim(
            "followups.shared_linear_chance",
            "Tied across positions, the linear model is back at chance on every chain.",
            "shared_linear_hi <= 0.65",
            "a linear model with tied weights above 0.65 on unseen strings with some chain "
            "(the binary count or the threshold chain, say)",
        ),
        Claim(
            "followups.shared_mlp_learns",
            "The MLP with tied weights still learns the threshold chain.",
            "shared_mlp_worst >= 0.9",
            "a tied MLP that cannot tell the positions apart (any model below 0.9)",
        ),
        # --- the parity of an unknown subset of the bits (the paper's parity class)
        Claim(
            "support.none_chance",
            "On the parity of the hidden subset, without a chain the linear model stays near "
            "chance.",
            "0.4 <= support_none_lo and support_none_hi <= 0.6",
            "a linear model above 0.6 on unseen strings without a chain",
        ),
        Claim(
            "support.binary_learns",
            "The binary count of the subset's ones takes the linear model to parity on "
            "unseen strings: it finds the subset from the examples.",
            "support_binary_worst >= 0.98",
            "a short chain that helps less once the subset must be found (any model below 0.98)",
        ),
        Claim(
            "support.threshold_learns",
            "The threshold chain over the subset takes the linear model to parity on unseen "
            "strings.",
            "support_threshold_worst >= 0.95",
            "a linear model that does not find which bit each step reads (any model below 0.95)",
        ),
        # --- multiplication at toy size
        Claim(
            "multiplication.none_fails",
            "Without a chain no model gets more than a few of the unseen products right.",
            "mult_none_hi <= 0.2",
            "an MLP that learns to multiply without a chain (above 0.2 of the unseen pairs)",
        ),
        Claim(
            "multiplication.none_underfits",
            "Without a chain the models do not even fit their training pairs.",
            "mult_none_train_hi <= 0.4",
            "a model that memorises its training pairs (fits more than 0.4 of them) rather "
            "than failing to fit",
        ),
        Claim(
            "multiplication.none_last_digit",
            "Without a chain the last answer digit, a function of two tokens, is learned.",
            "mult_none_last_worst >= 0.95",
            "a model that gets the last digit wrong on more than 5 % of the unseen pairs",
        ),
        Claim(
            "multiplication.none_middle_digits",
            "Without a chain the middle answer digits, which depend on every prompt digit, "
            "are not learned.",
            "none_middle_best <= 0.6",
            "a model right on more than 0.6 of the unseen pairs on a middle answer digit",
        ),
        Claim(
            "multiplication.products_help",
            "With the products chain the models get a good part of the unseen products "
            "right, far more than without a chain.",
            "min(products_test) >= 0.4 and min(products_test) >= mult_none_hi + 0.25",
            "a products chain that does not help (worst model below 0.4, or less than 0.25 "
            "above the best model without a chain)",
        ),
        Claim(
            "multiplication.products_steps",
            "Every digit-pair product is right on unseen pairs.",
            "mult_products_step_worst >= 0.99",
            "a product token below 0.99 for some model: a two-token step the MLP does not learn",
        ),
        Claim(
            "multiplication.middle_digits_errors",
            "With the products chain the errors sit in the middle answer digits.",
            "1 <= np.argmin(products_answer) <= len(products_answer) - 2",
            "the worst answer digit being the first or the last",
        ),
        Claim(
            "multiplication.middle_digits_band",
            "The middle answer digits are partly learned: neither like the products nor "
            "not at all.",
            "0.6 <= min(products_answer[1:-1]) and max(products_answer[1:-1]) <= 0.85",
            "a middle digit's mean over the models outside [0.6, 0.85]: learned like the "
            "products, or not at all",
        ),
        Claim(
            "multiplication.answer_ends",
            "The first and last answer digits are right on most pairs given the right chain.",
            "mult_answer_ends_worst >= 0.9",
            "the first or the last answer digit below 0.9 (mean over the models)",
        ),
        Claim(
            "multiplication.sums_help",
            "Running sums take every model far above the products chain.",
            "min(sums_test) >= 0.85 and min(sums_test) >= max(products_test) + 0.2",
            "running sums that do not help (any model below 0.85, or less than 0.2 above the "
            "best model of the products chain)",
        ),
        Claim(
            "multiplication.sums_steps",
            "Every token of the running-sum chain is a learned step.",
            "mult_sums_step_worst >= 0.9",
            "a token of some model below 0.9: a step the MLP does not learn, like the "
            "products chain's answer digits",
        ),
        # --- exercise 3: the binary count as thresholds
        Claim(
            "binary_count.thresholds",
            "The thresholds derived in the text reproduce the binary-count chain, and its "
            "last digit is the parity.",
            "thresholds_match and last_digit_is_parity",
            "a library chain that writes the digits least significant first, or thresholds "
            "that do not give the count's digits",
        ),
    ],
)
claims = TABLE.claims_for

#: The paper's multiplication run, from its released code (emalach/LinearLM):
#: configs/config_linear_prod.json and torch_datasets/product.py.
PAPER = dict(
    min_num=1111,
    max_num=9999,  # factors (the config's max_num=10000 is exclusive)
    context=307,
    d=128,  # context length T and embedding width d
    batch=2048,
    examples=100_000_000,  # batch size, sequences in its one pass
)


@TABLE.computes("parity")
def _parity(result) -> dict:
    """Every (chain, model) row: worst and best models on unseen and training strings."""
    test, train = result.test_acc, result.train_acc
    none_test = np.concatenate([test[("none", m)] for m in ("linear", "MLP")])
    none_linear = test[("none", "linear")]
    linear_train = np.concatenate([train[(f, "linear")] for f in ("none", "running")])
    return {
        "none_mlp_train": train[("none", "MLP")].mean(),
        "linear_train_best": linear_train.max(),
        "none_test_lo": none_test.min(),
        "none_test_hi": none_test.max(),
        "none_linear_test_lo": none_linear.min(),
        "none_linear_test_hi": none_linear.max(),
        "running_mlp_worst": test[("running", "MLP")].min(),
        "running_linear_test_lo": test[("running", "linear")].min(),
        "running_linear_test_hi": test[("running", "linear")].max(),
        "threshold_linear_worst": test[("threshold", "linear")].min(),
        "binary_linear_worst": test[("binary", "linear")].min(),
        "unary_linear_worst": test[("unary", "linear")].min(),
        "mlp_chain_worst": min(test[(f, "MLP")].min() for f in FORMATS if f != "none"),
        "test_acc": {f"{f} {m}": test[(f, m)] for f, m in result.models},
    }


@TABLE.computes("followups")
def _followups(result) -> dict:
    """The binary chain trained longer, and tied weights: the linear model on every chain,
    the MLP on the threshold chain."""
    shared = result.shared_test
    linear = np.concatenate([a for (f, kind), a in shared.items() if kind == "linear"])
    return {
        "binary_linear_long_worst": result.binary_long_test.min(),
        "binary_linear_test": result.test_acc[("binary", "linear")],
        "binary_linear_long_test": result.binary_long_test,
        "shared_linear_hi": linear.max(),
        "shared_mlp_worst": shared[("threshold", "MLP")].min(),
        "shared_chains": len([k for k in shared if k[1] == "linear"]),
        "shared_test": {f"{f} {kind}": a for (f, kind), a in shared.items()},
    }


@TABLE.computes("support")
def _support(result) -> dict:
    """The linear model on the parity of a random subset of the bits, for each chain."""
    test, a = result.support_test, np.asarray(result.support)
    return {
        "support_size": len(a),
        "support_n": result.setup.n,
        "support_bits": ", ".join(str(int(i) + 1) for i in a),  # 1-based, as x_i
        **{f"support_len_{f}": chain_length(len(a), f) for f in SUPPORT_FORMATS},
        "support_none_lo": test["none"].min(),
        "support_none_hi": test["none"].max(),
        "support_binary_worst": test["binary"].min(),
        "support_threshold_worst": test["threshold"].min(),
        "support_test": dict(test),
    }


def answer_digit_accuracy(step_acc: np.ndarray, digits: int) -> np.ndarray:
    """Mean over the models of each answer digit's teacher-forced accuracy: (2 * digits,)."""
    step_acc = np.asarray(step_acc)
    if step_acc.ndim != 2 or step_acc.shape[1] < 2 * digits:
        raise ValueError(
            f"step_acc must be (models, tokens) with at least {2 * digits} "
            f"tokens, got shape {step_acc.shape}"
        )
    return step_acc[:, -2 * digits :].mean(axis=0)


def accuracy_range(acc) -> str:
    """``"lo–hi"`` of the models' accuracies, two decimals (an en dash between)."""
    acc = np.asarray(acc)
    return f"{acc.min():.2f}–{acc.max():.2f}"


@TABLE.computes("multiplication")
def _multiplication(mult) -> dict:
    """The set-up as run, and every chain's accuracies on the test pairs."""
    s, test, steps = mult.setup, mult.test_acc, mult.step_acc
    answer = 2 * s.digits  # the last tokens are the answer
    lo, hi = 10 ** (s.digits - 1), 10**s.digits - 1
    prod_answer = answer_digit_accuracy(steps["products"], s.digits)
    values = {
        "mult_digits": s.digits,
        "mult_lo": lo,
        "mult_hi": hi,
        "mult_pairs": f"{(hi - lo + 1) ** 2:,}",
        "mult_train_pct": f"{s.train_frac:.0%}",
        "mult_answer_digits": answer,
        "mult_n_products": s.digits**2,
        "mult_seeds": s.seeds,
        **{f"mult_len_{f}": multiplication_length(s.digits, f) for f in MULT_FORMATS},
        "mult_hidden": s.hidden,
        "mult_train_pairs": f"{len(mult.a_train):,}",
        "mult_steps": f"{s.steps:,}",
        "mult_none_hi": test["none"].max(),
        "mult_none_median": np.median(test["none"]),
        "mult_none_train_hi": mult.train_acc["none"].max(),
        "mult_none_last_worst": steps["none"][:, -1].min(),
        "none_middle_best": steps["none"][:, 1:-1].max(),
    }
    for f in ("products", "sums"):
        values[f"mult_{f}_median"] = np.median(test[f])
        values[f"mult_{f}_range"] = accuracy_range(test[f])
        values[f"{f}_test"] = test[f]
    values.update(
        {
            "mult_products_step_worst": steps["products"][:, :-answer].min(),
            "mult_answer_step_worst": prod_answer.min(),
            "mult_answer_ends_worst": prod_answer[[0, -1]].min(),
            "mult_sums_step_worst": steps["sums"].min(),
            "products_answer": prod_answer,
            "none_test": test["none"],
            "none_train": mult.train_acc["none"],
        }
    )
    return values


def masked_weights(context: int, d: int) -> tuple[int, int]:
    """Weights of a causal linear map over ``context`` positions of ``d``-dimensional
    embeddings: (effective, d x d for every pair s <= t; stored by a dense (T d)^2 layer)."""
    return d * d * context * (context + 1) // 2, (context * d) ** 2


@TABLE.computes("paper")
def _paper() -> dict:
    """The paper's multiplication run (its released configuration), as the text quotes it."""
    effective, stored = masked_weights(PAPER["context"], PAPER["d"])
    return {
        "paper_min": PAPER["min_num"],
        "paper_max": PAPER["max_num"],
        "paper_context": PAPER["context"],
        "paper_d": PAPER["d"],
        "paper_batch": f"{PAPER['batch']:,}",
        "paper_examples": f"{PAPER['examples']:,}",
        "paper_steps": f"{-(-PAPER['examples'] // PAPER['batch']):,}",  # one pass
        "paper_answer_digits": len(str(PAPER["max_num"] ** 2)),
        "paper_mult_weights": f"{effective:,}",
        "paper_mult_stored": f"{stored:,}",
    }


def binary_count_by_thresholds(x: torch.Tensor) -> torch.Tensor:
    """The binary digits of the count of ones of ``x`` (B, n), most significant first, each
    computed as the threshold ``b_j = [sum_i x_i - sum_{l>j} 2^l b_l >= 2^j]``: (B, m)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise TypeError("x must be a (batch, n) tensor of 0/1 bits")
    count, digits = x.long().sum(dim=1), []
    m = x.shape[1].bit_length()
    for j in range(m - 1, -1, -1):
        earlier = sum(2 ** (m - 1 - k) * b for k, b in enumerate(digits))
        digits.append(((count - earlier) >= 2**j).long())
    return torch.stack(digits, dim=1)


@TABLE.computes("binary_count")
def _binary_count(n: int = 12) -> dict:
    """Exercise 3: the thresholds against the library's binary chain, on all 2**n strings."""
    x = all_bit_strings(n)
    chain = parity_chain(x, "binary")[:, n:]
    match = torch.equal(binary_count_by_thresholds(x), chain)
    parity = torch.equal(chain[:, -1], x.sum(dim=1) % 2)
    return {
        "binary_check": f"{match} and {parity} (all {2**n:,} strings)",
        "thresholds_match": match,
        "last_digit_is_parity": parity,
    }


# --------------------------------------------------------------------------- coding labs
def _check_chains(seqs, prompt: int) -> torch.Tensor:
    if not isinstance(seqs, torch.Tensor) or seqs.dim() != 2:
        raise TypeError("seqs must be a (strings, prompt + chain) tensor of token ids")
    prompt = check_int("prompt", prompt, minimum=1)
    if seqs.shape[1] <= prompt:
        raise ValueError(
            f"seqs must have tokens after the prompt of {prompt}, got {seqs.shape[1]} tokens in all"
        )
    return seqs.long()


def train_on_chains(
    seqs: torch.Tensor,
    prompt: int,
    *,
    hidden: int | None = None,
    models: int = 3,
    steps: int = 400,
    lr: float = 1e-2,
    batch_size: int = 256,
    generator: torch.Generator,
) -> NextTokenNet:
    """Train ``models`` time-inhomogeneous next-token models (:class:`NextTokenNet`, linear
    or with ``hidden`` ReLU units per position) on any chains: ``seqs`` (strings, prompt +
    chain) of 0/1 tokens, the loss on every token after the first ``prompt`` ones. AdamW as
    in the chapter; ``generator`` draws the weights, then every batch."""
    seqs = _check_chains(seqs, prompt)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    M = check_int("models", models, minimum=1)
    model = NextTokenNet(seqs.shape[1] - 1, vocab=2, hidden=hidden, models=M, generator=generator)

    def batch(step):
        rows = torch.randint(len(seqs), (batch_size,), generator=generator)
        return chain_targets(seqs[rows], prompt)

    def loss(logits, y):  # each model's mean, summed: its own gradient
        return (
            nn.functional.cross_entropy(
                logits.flatten(0, 2), y[None].expand(M, -1, -1).flatten(), ignore_index=IGNORE_INDEX
            )
            * M
        )

    train(
        model,
        batch,
        steps=steps,
        lr=lr,
        grad_clip=None,
        loss_fn=loss,
        eval_every=steps,
        progress=False,
    )
    return model


@torch.no_grad()
def token_accuracy(model: NextTokenNet, seqs: torch.Tensor, prompt: int) -> np.ndarray:
    """Accuracy of every token after the prompt given the right tokens before it (teacher
    forcing), per model: (models, tokens written)."""
    seqs = _check_chains(seqs, prompt)
    with evaluating(model):
        pred = model(seqs[:, :-1]).argmax(dim=-1)  # (M, B, L-1)
    right = (pred == seqs[None, :, 1:]).float().mean(dim=1)  # (M, L-1)
    return right[:, prompt - 1 :].numpy()


def chain_answer_accuracy(model: NextTokenNet, seqs: torch.Tensor, prompt: int) -> np.ndarray:
    """Fraction of ``seqs`` whose last token the model gets right after generating its own
    chain from the prompt, per model: (models,)."""
    seqs = _check_chains(seqs, prompt)
    got = generate(model, seqs[:, :prompt], seqs.shape[1] - prompt)  # (M, B, L)
    return (got[:, :, -1] == seqs[None, :, -1]).float().mean(dim=1).numpy()


def block_chain(x: torch.Tensor, k: int) -> torch.Tensor:
    """Bits ``x`` (B, n) followed by the running parity after every ``k`` bits (k divides
    n): each chain token is the previous one XOR ``k`` new bits; the last is the parity."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise TypeError("x must be a (batch, n) tensor of 0/1 bits")
    k = check_int("k", k, minimum=1)
    if x.shape[1] % k:
        raise ValueError(f"k must divide n = {x.shape[1]}, got {k}")
    x = x.long()
    return torch.cat([x, (x.cumsum(dim=1) % 2)[:, k - 1 :: k]], dim=1)


def split_strings(n: int, train_size: int, generator: torch.Generator):
    """All ``2**n`` strings in a random order, split: (train, test)."""
    strings = all_bit_strings(n)
    strings = strings[torch.randperm(len(strings), generator=generator)]
    return strings[:train_size], strings[train_size:]


BLOCKS = (2, 3, 4, 6)  # bits per step of the long-steps lab (n = 12)

LABS = LabTable(
    "chain_of_thought",
    [
        Lab(
            "ex-chain-of-thought-3",
            expects="the fraction of the 4,096 strings of 12 bits on which the four thresholds "
            "reproduce the binary-count chain in every digit",
            quantity="the fraction of strings reproduced",
            low=0.999,
            high=1.0,
            because="each digit b_j = [S - sum_{l>j} 2^l b_l >= 2^j] is exactly the binary digit "
            "of the count, since S minus the higher digits is S mod 2^(j+1)",
            hint="compute the digits most significant first, subtract 2^l b_l for every digit "
            "already written, and compare with 2^j using >=.",
        ),
        Lab(
            "ex-chain-of-thought-4",
            expects="two teacher-forced test accuracies of the parity digit b_0: written last "
            "(most significant digit first), then written first (least significant "
            "first)",
            quantity="b_0's accuracy written last minus written first",
            measure=lambda a: a[0] - a[1],
            low=0.3,
            high=0.6,
            because="written last, b_0 is a threshold of the bits and the digits before it; "
            "written first, it is the parity of the bits, which no linear threshold "
            "computes",
            hint="reverse only the four digits after the 12 bits (seqs[:, 12:].flip(1)), train "
            "one set of models per order, and read b_0 where each order writes it: the "
            "last token of the first order, the first token of the second.",
        ),
        Lab(
            "ex-chain-of-thought-5",
            expects="two test accuracies after training on 64 strings: the mean accuracy of a "
            "written token given the right tokens before it, then the accuracy of the "
            "answer after the model's own chain",
            quantity="the mean token accuracy minus the answer accuracy",
            measure=lambda a: a[0] - a[1],
            low=0.2,
            high=0.5,
            because="an answer needs all 24 steps right, so small per-step errors add up over "
            "the chain",
            hint="measure both on the test strings (not the 64 training strings): the token "
            "accuracy with chapter.token_accuracy, averaged over tokens and models, the "
            "answer with chapter.chain_answer_accuracy.",
        ),
        Lab(
            "ex-chain-of-thought-6",
            expects="four test accuracies of the MLP's answer, for chains whose every step "
            "takes k = 2, 3, 4, 6 new bits",
            quantity="the accuracy with k = 2 minus that with k = 6",
            measure=lambda a: a[0] - a[-1],
            low=0.35,
            high=0.6,
            because="a shorter chain makes each step a parity of more bits, and at this budget "
            "the MLP learns the 3-bit steps but not the 7-bit ones",
            hint="build each chain with chapter.block_chain(x, k), train a fresh MLP "
            "(hidden=32) per k, and measure on the test strings.",
        ),
    ],
)
feedback = LABS.feedback
