"""Statistical induction heads (``book/induction_heads.md``): three phases and their circuit."""

from __future__ import annotations

import numpy as np

from ..book.claims import Claim, ClaimTable
from ..book.exercises import Lab, LabTable
from ..book.notebook import spread
from ..core.runtime import Sizes
from ..incontext import (
    PAPER,
    TRIGRAM_SETUP,
    ICLSetup,
    bigram_gap,
    escape_steps,
    first_visits,
    history_from_record,
    layer1_profile,
    layer2_steps,
    phases,
    plateau_index,
    rise_step,
    switch_step,
    switch_width,
    unigram_plateau,
)
from ..incontext import SETUP as ICL_SETUP

#: the three strategies of the main task, in the order the model should visit them
STRATS = ("uniform", "unigram", "bigram")
#: the strategies of the second-order (trigram) task
TRI = ("uniform", "unigram", "bigram", "trigram")
#: the reference table as the text quotes it: k -> strategy -> expected loss (nats)
QUOTED = {
    2: {"uniform": 0.693, "unigram": 0.579, "bigram": 0.511, "oracle": 0.482},
    3: {"uniform": 1.099, "unigram": 1.006, "bigram": 0.888, "oracle": 0.821},
}
#: the one-layer control of section "Three phases": the CPU configuration with one layer
ONE_LAYER = ICLSetup(n_layers=1)
#: the CPU configuration with relative positions (the contrast run of section "Knocking the
#: circuit out"): PAPER's relative positions, every other setting the CPU one
RELATIVE = ICLSetup(pos_encoding="relative", steps=1300)
#: the tasks of section "Variations": text label -> short name of the glued values
VARIANTS = {
    "k=2, α=1": "k2",
    "k=3, α=1": "k3",
    "k=5, α=1": "k5",
    "k=3, α=4": "a4",
    "doubly stochastic": "ds",
}
#: training steps of the chapter's live k = 5 run: the archived CPU budget, and at FULL=1
#: the paper configuration's own budget (k = 5 switches later than 1,000 steps there)
K5_STEPS = Sizes(cpu=1000, full=ICL_SETUP.full.steps)
#: the depth archive's attention-only architectures and their versions without LayerNorm
NO_LN = {
    "2 layers, attention-only": "2 layers, attention-only, no LayerNorm",
    "4 layers, attention-only": "4 layers, attention-only, no LayerNorm",
}

TABLE = ClaimTable(
    "induction_heads",
    [
        # ------------------------------------------------------------------ reference table
        Claim(
            "reference.quoted_table",
            "The reference table the text quotes (for k = 3: uniform 1.099, unigram 1.006, "
            "bigram 0.888, oracle 0.821 nats) is the Monte-Carlo estimate, within its error.",
            "max(ref_excess) < 0.0015",
            "a sampler or strategy that moves an expected loss by more than the Monte-Carlo error",
        ),
        # ------------------------------------------------------------------ three phases
        Claim(
            "phases.uniform_start",
            "At initialisation the model predicts uniformly.",
            "kl_uniform_start < 0.01",
            "a large initialisation, whose logits are far from zero",
        ),
        Claim(
            "phases.in_order",
            "The model visits the uniform, unigram and bigram rules in that order and ends "
            "at the bigram rule.",
            "visited == ['uniform', 'unigram', 'bigram'] and first_visits[0] < first_visits[1] "
            "< first_visits[2] and last_phase == 'bigram'",
            "a skipped phase, phases out of order, or a run that ends away from the bigram rule",
        ),
        Claim(
            "phases.unigram_plateau",
            "At the plateau the model is much closer to the unigram rule than to the others.",
            "kl_plateau[1] < 0.03 and kl_plateau[1] < 0.3 * min(kl_plateau[0], kl_plateau[2])",
            "a model that passes between the rules without ever implementing the unigram rule",
        ),
        Claim(
            "phases.unigram_early",
            "The model is closest to the unigram rule within a few hundred steps.",
            "uni_start <= 300",
            "a model that takes more than 300 steps to reach the unigram rule",
        ),
        Claim(
            "phases.plateau_lasts",
            "It stays near the unigram rule for a plateau (at least 300 steps) before the switch.",
            "plateau_len is not None and plateau_len >= 300",
            "a model that skips the plateau and goes straight to the bigram rule",
        ),
        Claim(
            "phases.switch_is_quick",
            "From the last step nearest the unigram rule to within 0.05 nats (KL) of the "
            "bigram rule takes a few hundred steps.",
            "switch_width is not None and 0 < switch_width <= 600",
            "a slow drift to the bigram rule, taking more than 600 steps",
        ),
        Claim(
            "phases.ends_at_bigram",
            "The model ends close to the bigram rule (KL under 0.045 nats, under half its KL "
            "to the unigram rule).",
            "kl_final[2] < 0.045 and kl_final[2] < 0.5 * kl_final[1]",
            "a model still between the unigram and bigram rules at the end",
        ),
        Claim(
            "phases.gap",
            "The final loss is a few hundredths of a nat above the Bayes-optimal (bigram) loss.",
            "0 < gap < 0.045",
            "a loss below the Bayes rule (a bug) or a model that stays 0.045 nats away",
        ),
        Claim(
            "one_layer.no_switch",
            "A one-layer model trained the same way never becomes closer to the bigram rule "
            "than to the unigram rule.",
            "one_switch is None",
            "a single layer that learns the bigram rule",
        ),
        Claim(
            "one_layer.stays_unigram",
            "It ends near the unigram rule: its final KL to the bigram rule is above 0.05 nats "
            "and more than twice its KL to the unigram rule.",
            "one_kl_bigram > 0.05 and one_kl_bigram > 2 * one_kl_unigram",
            "a single layer that ends between the two rules or near the bigram rule",
        ),
        # ------------------------------------------------------------------ authors' configuration
        Claim(
            "paper.same_setup",
            "The archived paper-scale runs used the library's PAPER set-up.",
            "paper_setup_matches",
            "a PAPER set-up that differs from the one the archive trained",
        ),
        Claim(
            "paper.same_task",
            "Fresh sequences of PAPER's task give the unigram and bigram rules the archived "
            "losses, within sampling error.",
            "max(paper_live_excess) < 0.005",
            "a task sampler or n-gram rule that differs from the archived one",
        ),
        # ------------------------------------------------------------------ mechanism
        Claim(
            "mechanism.layer1_waits",
            "Layer 1's attention to the previous position stays at its initial value during "
            "the plateau.",
            "prev_plateau < prev_start + 0.05",
            "a layer 1 that forms its previous-token head before the switch",
        ),
        Claim(
            "mechanism.layer1_rises",
            "Around the switch layer 1's weight on the previous position grows severalfold, "
            "to between 0.15 and 0.5 (an average over query positions).",
            "prev_final > 3 * prev_plateau and 0.15 < prev_final < 0.5",
            "a layer 1 that never forms the head, or a sharp head at every position",
        ),
        Claim(
            "mechanism.layer2_rises",
            "Layer 2 gains more than 0.15 of its attention on matching positions.",
            "ind_final > ind_plateau + 0.15",
            "a layer 2 that never forms the induction head",
        ),
        Claim(
            "mechanism.layer2_at_switch",
            "In the CPU configuration layer 2 has covered half of its rise around the switch "
            "(within 300 steps of it).",
            "ind_lead is not None and abs(ind_lead) <= 300",
            "a layer 2 whose rise is not tied to the switch, e.g. one that rises during the "
            "plateau",
            scale="cpu",
        ),
        Claim(
            "mechanism.layer1_follows",
            "In the CPU configuration layer 1 covers half of its rise a few hundred steps "
            "after the switch (0 to 600).",
            "prev_lag is not None and 0 <= prev_lag <= 600",
            "a layer 1 that rises before the switch, or lags by more than 600 steps",
            scale="cpu",
        ),
        Claim(
            "mechanism.layer2_first",
            "Layer 2 is half-way up before layer 1.",
            "None not in (rise_ind, rise_prev) and rise_ind < rise_prev",
            "a layer 1 that is half-way up first, or at the same evaluation as layer 2",
        ),
        # ------------------------------------------------------------------ knock-outs
        Claim(
            "knockout.not_nearby",
            "Averaged over queries, layer 1 puts little weight on the token itself (under "
            "0.05) or on offsets 2-4 (under 0.15 together).",
            "off_self < 0.05 and off_near < 0.15",
            "a layer 1 whose remaining weight goes to the token itself or the next few offsets",
        ),
        Claim(
            "knockout.far_back",
            "Most of layer 1's remaining weight lies on keys five or more positions back.",
            "off_far > 0.45",
            "a layer 1 that is a previous-token head at every position",
        ),
        Claim(
            "knockout.sharp_early",
            "Layer 1 is a previous-token head at the start of the sequence: most of its "
            "weight on the previous token at the first ten queries, more than half up to a "
            "position between 15 and 80.",
            "prev_early > 0.6 and prev_reach is not None and 15 <= prev_reach <= 80",
            "a layer 1 that is never sharp, or sharp at every position",
        ),
        Claim(
            "knockout.uniform_late",
            "In the CPU model (learned absolute positions), beyond position 60 layer 1's "
            "weight on the previous token is about that of uniform attention (under 1.5 "
            "times 1/(t+1)).",
            "prev_late_ratio < 1.5",
            "a layer 1 that stays a previous-token head at late positions",
            scale="cpu",
        ),
        Claim(
            "knockout.layer1_prev_is_unigram",
            "In the CPU model, removing layer 1's weight on the previous token brings the "
            "loss to about the unigram rule's (within 0.05 nats) and far above the intact "
            "model's.",
            "abs(ko_l1_prev - ref_unigram) < 0.05 and ko_l1_prev > ko_none + 0.08",
            "a model that stays near the bigram rule without the previous-token weight",
            scale="cpu",
        ),
        Claim(
            "knockout.layer1_controls",
            "Removing layer 1's weight on the token itself, or replacing its pattern by its "
            "mean, leaves the loss where it was (within 0.005 nats): a positional head.",
            "abs(ko_l1_self - ko_none) < 0.005 and abs(ko_l1_mean - ko_none) < 0.005",
            "a content-dependent layer 1",
        ),
        Claim(
            "knockout.layer1_uniform",
            "Uniform attention in layer 1 gives a loss above the unigram rule's.",
            "ko_l1_unif > ref_unigram",
            "a layer 1 whose pattern does not matter",
        ),
        Claim(
            "knockout.layer2_not_unigram",
            "In the CPU model, without layer 2's matching (mean or uniform pattern) the loss "
            "is far above the unigram rule's.",
            "min(ko_l2_mean, ko_l2_unif) > ref_unigram + 0.08",
            "a trained model that falls back to the unigram rule without its matching head",
            scale="cpu",
        ),
        Claim(
            "knockout.layer2_near_uniform_guess",
            "In the CPU model, without layer 2's matching the loss is close to the uniform "
            "guess (within 0.075 nats).",
            "max(abs(ko_l2_mean - ref_uniform), abs(ko_l2_unif - ref_uniform)) < 0.075",
            "a model that falls back to the unigram rule (about 0.09 nats below the uniform "
            "guess), or one more than 0.075 nats worse than guessing",
            scale="cpu",
        ),
        # ------------------------------------------------------------------ relative positions
        Claim(
            "relative.switches",
            "The CPU configuration with relative positions switches to the bigram rule within "
            "its 1,300 steps.",
            "rel_switch is not None",
            "a relative-position model that stays at the unigram rule",
        ),
        Claim(
            "relative.head_stays",
            "With relative positions layer 1 stays a previous-token head late in the sequence: "
            "beyond position 60 its weight on the previous token is more than 2.5 times that "
            "of uniform attention (the CPU model's: under 1.5).",
            "rel_prev_late_ratio > 2.5",
            "a relative-position layer 1 that fades to uniform attention, as the "
            "absolute-position one does",
        ),
        Claim(
            "relative.knockouts_flip",
            "With relative positions the knock-outs swap roles: without layer 2's matching "
            "(mean pattern) the loss is nearer the unigram rule's than the uniform guess's, "
            "and without layer 1's previous-token weight it is more than 0.05 nats above "
            "the unigram rule's.",
            "abs(rel_ko_l2_mean - rel_unigram) < abs(rel_ko_l2_mean - rel_uniform) "
            "and rel_ko_l1_prev > rel_unigram + 0.05",
            "a relative-position model whose knock-outs behave like the absolute-position model's",
        ),
        Claim(
            "relative.full_run_agrees",
            "The archived FULL=1 run of PAPER (relative positions, paper scale) agrees with "
            "the CPU-size relative-position run: layer 1's previous-token weight beyond "
            "position 60 is more than 2.5 times uniform, without layer 2's matching the loss "
            "is nearer the unigram rule than the uniform guess, without layer 1's "
            "previous-token weight it is more than 0.05 nats above the unigram rule, and "
            "layer 2 is half-way up before layer 1.",
            "fr_prev_late_ratio > 2.5 "
            "and abs(fr_ko_l2_mean - fr_unigram) < abs(fr_ko_l2_mean - fr_uniform) "
            "and fr_ko_l1_prev > fr_unigram + 0.05 and fr_ind_after < fr_prev_after",
            "a paper-scale run whose mechanism differs from the CPU-size relative-position run's",
        ),
        # ------------------------------------------------------------------ variations
        Claim(
            "variations.gain_order",
            "The gain of the bigram rule over the unigram rule grows with k and shrinks with "
            "alpha.",
            "gain_k5 > gain_k3 > gain_a4 and gain_k3 > gain_k2",
            "a task sampler whose gains do not follow the number of states and the prior",
        ),
        Claim(
            "variations.archive_median_order",
            "In the archive the median switch steps follow the gains: k = 5 before k = 3 "
            "before k = 2 before alpha = 4.",
            "arch_median_order == sorted(arch_median_order) and len(set(arch_median_order)) == 4",
            "an archive whose median switches do not follow the gains",
        ),
        Claim(
            "variations.small_gains_later",
            "With every archived seed, k = 2 and alpha = 4 switch later than k = 3.",
            "small_gain_later_min > 0",
            "a seed on which a small-gain task switches with or before k = 3",
        ),
        Claim(
            "variations.live_k3",
            "The chapter's k = 3 run switches within 400 steps of the archived seeds' range "
            "(both in the CPU configuration).",
            "live_k3 is not None and arch_range_k3 is not None "
            "and arch_range_k3[0] - 400 <= live_k3 <= arch_range_k3[1] + 400",
            "a library or training change that moves the switch far from the archived runs, "
            "or removes it",
            scale="cpu",
        ),
        Claim(
            "variations.live_k5",
            "The chapter's k = 5 run switches within 400 steps of the archived seeds' range "
            "(both in the CPU configuration).",
            "live_k5 is not None and arch_range_k5 is not None "
            "and arch_range_k5[0] - 400 <= live_k5 <= arch_range_k5[1] + 400",
            "a library or training change that moves the switch far from the archived runs, "
            "or removes it",
            scale="cpu",
        ),
        # ------------------------------------------------------------------ doubly stochastic
        Claim(
            "doubly_stochastic.no_unigram_signal",
            "On doubly stochastic chains the unigram rule is no better than the uniform guess.",
            "ds_unigram_excess > -0.01",
            "a Sinkhorn rescaling that leaves a unigram signal",
        ),
        # ------------------------------------------------------------------ graded prior
        Claim(
            "graded.signal_shrinks",
            "The unigram rule's advantage over the uniform guess shrinks as the share p of "
            "doubly stochastic chains grows.",
            "min(graded_adv_drops) > 0",
            "a graded sampler that does not mix the two kinds of chain in these proportions",
        ),
        Claim(
            "graded.signal_ends",
            "The advantage is large at p = 0.25 (over 0.1 nats) and about zero at p = 1 "
            "(under 0.02).",
            "graded_adv[0] > 0.1 and graded_adv[-1] < 0.02",
            "i.i.d. chains missing from the mixture, or doubly stochastic chains with a "
            "unigram signal",
        ),
        Claim(
            "graded.later_when_diluted",
            "In the archived sweep the median switch comes no earlier as the share p of "
            "doubly stochastic chains falls, and later at p = 0.25 than at p = 1.",
            "min(graded_med_drops) >= 0 and graded_med_list[0] > graded_med_list[-1]",
            "a median switch that comes earlier at a smaller share p",
        ),
        Claim(
            "graded.more_seen_at_low_p",
            "At p = 0.25 at least two of the three archived seeds see more doubly stochastic "
            "sequences before the switch (or the budget) than at p = 1.",
            "graded_more_lo >= 2",
            "runs at p = 0.25 that need no more doubly stochastic sequences than at p = 1",
        ),
        # ------------------------------------------------------------------ trigram
        Claim(
            "trigram.same_setup",
            "The archived trigram runs used the library's TRIGRAM_SETUP (CPU size).",
            "tri_setup_matches",
            "a TRIGRAM_SETUP that differs from the one the archive trained",
        ),
        Claim(
            "trigram.same_task",
            "Fresh second-order sequences give the bigram and trigram rules the archived "
            "losses, within sampling error.",
            "max(tri_live_excess) < 0.005",
            "a second-order source or n-gram rule that differs from the archived one",
        ),
        # ------------------------------------------------------------------ minimal model
        Claim(
            "minimal.layer1_gradient_vanishes",
            "At the minimal model's initialisation (W = 0) layer 1's gradient is exactly zero.",
            "max(grad_w) == 0",
            "a minimal model in which w reaches the output other than through W",
        ),
        Claim(
            "minimal.layer2_gradient",
            "Layer 2's gradient at initialisation is not zero: the start is not a "
            "stationary point.",
            "min(grad_W) > 1e-4",
            "a start that is a stationary point",
        ),
        Claim(
            "minimal.ds_starts_worse",
            "On doubly stochastic chains the minimal model starts above the uniform loss "
            "ln 3, on Dirichlet chains below it.",
            "min_loss0_ds > ln_k > min_loss0_dir",
            "two priors that start alike",
        ),
        Claim(
            "minimal.ds_direction",
            "On doubly stochastic chains the first step of layer 2 points almost along the "
            "bigram direction I - 11^T/k (cosine above 0.85).",
            "ds_share > 0.85",
            "a first step on W that does not favour the diagonal without a unigram signal",
        ),
        Claim(
            "minimal.stronger_push",
            "Its layer-2 gradient at initialisation is larger on doubly stochastic chains.",
            "min_grad_ratio > 1.3",
            "two priors whose initial gradients are alike (ratio under 1.3)",
        ),
        Claim(
            "minimal.learns",
            "Both minimal-model runs at the same learning rate learn, and so does the control "
            "at the smaller rate: each loss falls by more than 0.05 nats.",
            "min(loss_drop) > 0.05",
            "SGD that does not leave the initialisation",
        ),
        Claim(
            "minimal.layer2_first",
            "In every run layer 2's diagonal contrast reaches 0.25 before layer 1 puts half "
            "its weight on distance 1 (the control, at its smaller rate, may not escape within "
            "the 600 steps). That layer 2 starts first holds by construction (layer 1's "
            "gradient is zero while W = 0); the check compares two different thresholds.",
            "None not in w_first and None not in escape[:2] "
            "and all(v is None or v > 0 for v in w_lead)",
            "a layer 1 that reaches its threshold first, or a layer that never moves",
        ),
        Claim(
            "minimal.plateau",
            "The Dirichlet run's loss barely moves in its first 100 steps.",
            "plateau_drop < 0.01",
            "a minimal model without a plateau",
        ),
        Claim(
            "minimal.ds_sooner",
            "At the same learning rate the doubly stochastic run escapes sooner.",
            "None not in (esc_ds, esc_dir) and esc_ds < esc_dir",
            "a doubly stochastic run that escapes no earlier",
        ),
        Claim(
            "minimal.control_rescaled",
            "With its learning rate divided by the ratio of the initial gradients, the doubly "
            "stochastic run escapes about when slowing the whole equal-rate run by that ratio "
            "predicts (within 20 %; after the 600 steps where that prediction lies beyond 500).",
            "esc_ds_scaled is not None and ((esc_ds_lr is None and esc_ds_scaled > 500) or "
            "(esc_ds_lr is not None and 0.8 < esc_ds_lr / esc_ds_scaled < 1.2))",
            "a control that escapes much sooner than the rescaled run, as if the smaller step "
            "size did not slow its start",
        ),
        # ------------------------------------------------------------------ depth
        Claim(
            "depth.same_task",
            "Fresh sequences of each order give the Bayes rule the archived loss, within "
            "sampling error.",
            "max(depth_live_excess) < 0.005",
            "sources or a Bayes rule that differ from the archived ones",
        ),
        Claim(
            "depth.mlp_reaches_bayes",
            "The three-layer model with MLPs ends within 0.05 nats of the Bayes rule at "
            "orders 1 to 3 on every archived seed.",
            "depth_mlp_max < 0.05",
            "a three-layer MLP model that has not converged at some order",
        ),
        Claim(
            "depth.two_layers_fall_behind",
            "Two attention-only layers fall further behind the three-layer MLP model as the "
            "order grows (the gap between median final KLs grows from order 1 to 3).",
            "depth_gap2[0] < depth_gap2[1] < depth_gap2[2]",
            "a two-layer attention-only model that keeps pace at higher orders",
        ),
        Claim(
            "depth.four_layers_between",
            "At order 3, four attention-only layers are behind the MLP model and ahead of "
            "two attention-only layers on every seed.",
            "depth_four_behind_m3 > 0 and depth_four_ahead_m3 > 0",
            "seeds of the four-layer model that catch the MLP model or fall to two layers",
        ),
        Claim(
            "depth.layernorm_speeds",
            "Without LayerNorm, two and four attention-only layers end further from the Bayes "
            "rule than with it, seed by seed at every order.",
            "ln_gain_min > 0",
            "a seed or order at which the model without LayerNorm is as close as with it",
        ),
        Claim(
            "depth.four_ahead_without_layernorm",
            "Without LayerNorm, four layers end closer to the Bayes rule than two at orders 1 "
            "and 2 on every seed, and about level at order 3 (medians within 0.01).",
            "noln4_ahead_min > 0 and noln4_level_m3 < 0.01",
            "a two-layer model without LayerNorm that matches four layers at order 1 or 2, or "
            "a clear gap at order 3",
        ),
        Claim(
            "depth.live_follows_archive",
            "Retrained here, the first 200 steps of the three-layer MLP model at order 1 "
            "follow the archived seeds (within half their minimum and twice their maximum).",
            "live_steps == [0, 100, 200] and min(live_over_lo[1:]) >= 0.5 "
            "and max(live_over_hi[1:]) <= 2",
            "a change in learning rate, clipping or initialisation that makes training twice "
            "as fast or as slow",
        ),
        # ------------------------------------------------------------------ exercise 5
        Claim(
            "exercise.peaked_plateau_less_clean",
            "With peaked rows (alpha = 0.25) the model comes less close to the unigram rule "
            "before its switch than the main run (alpha = 1): its smallest KL from the "
            "unigram rule, in nats, is larger.",
            "ex5_peaked_kl > ex5_main_kl",
            "a peaked-rows run that rests on the unigram rule as closely as the main run",
        ),
        Claim(
            "exercise.peaked_plateau_shorter",
            "With peaked rows there is still a unigram phase before the switch; over the "
            "recorded base seeds it is shorter than the main run's on at least three in four "
            "(one seed each: switch steps move by hundreds from seed to seed, so on one base "
            "seed the two can tie or swap).",
            "0 < ex5_peaked_len and ex5_shorter_share >= 0.75",
            "no unigram phase with peaked rows, or a record in which the peaked-rows phase "
            "is shorter on fewer than three in four base seeds",
        ),
    ],
)
claims = TABLE.claims_for


# ----------------------------------------------------------------------------- helpers
def archived_setup(setup: dict) -> ICLSetup:
    """The :class:`~seqtheory.incontext.ICLSetup` an archive records as JSON (its lists,
    such as ``betas`` or ``n_heads``, back to tuples)."""
    return ICLSetup(**{k: tuple(v) if isinstance(v, list) else v for k, v in setup.items()})


def switch_range(switches) -> list | None:
    """[min, max] of the switch steps that are not None (None if no run switched)."""
    ok = [v for v in switches if v is not None]
    return [min(ok), max(ok)] if ok else None


def switch_text(live_switch: dict, label: str, runs: dict) -> str:
    """The live run's switch step for the variations table: the step, "no switch in N
    steps" when the run trained N steps without one, "-" when the task was not run live."""
    if label not in runs:
        return "-"
    step = live_switch.get(label)
    return str(step) if step is not None else f"no switch in {runs[label].setup.steps} steps"


def archived_switches(archive: dict) -> dict:
    """Task -> archived switch step per seed (None: no switch) of ``icl_variations.json``."""
    out: dict = {}
    for r in archive["runs"]:
        out.setdefault(r["variant"], []).append(r["switch"])
    return out


def switches_by_seed(archive: dict) -> dict:
    """Seed -> task -> archived switch step (None: no switch) of ``icl_variations.json``."""
    out: dict = {}
    for r in archive["runs"]:
        out.setdefault(r["seed"], {})[r["variant"]] = r["switch"]
    return out


def unigram_plateaus(runs) -> list:
    """Steps from the first visit of the unigram rule to the switch, per archived run."""
    return [
        r["switch"]
        - first_visits(phases(r["steps"], {n: r[f"KL({n}||model)"] for n in STRATS}))["unigram"]
        for r in runs
    ]


def graded_summary(graded: dict) -> dict:
    """The archived graded-prior sweep (``icl_graded.json``) per p (ascending): switch steps
    per seed (``switch``, None: no switch; ``steps``, where a run without a switch counts as
    the budget), their medians, and the doubly stochastic sequences seen before the switch
    (``seen``: p x 64 x switch step). A switch at a run's last evaluation is one evaluation
    closer to the bigram rule, not a switch that lasts, and counts as none (``late``: how
    many runs that turns)."""
    fracs = sorted(graded["meta"]["fractions"])
    budget = graded["meta"]["setup"]["steps"]
    switch: dict = {}
    late = 0
    for r in sorted(graded["runs"], key=lambda r: r["ds_fraction"]):
        sw = r["switch"]
        if sw is not None and sw >= r["steps"][-1]:
            sw, late = None, late + 1
        switch.setdefault(r["seed"], []).append(sw)
    steps = {
        s: np.array([budget if v is None else v for v in sw], float) for s, sw in switch.items()
    }
    seen = {s: np.array(fracs) * 64 * v for s, v in steps.items()}
    return {
        "fracs": fracs,
        "budget": budget,
        "switch": switch,
        "steps": steps,
        "seen": seen,
        "med_switch": np.median(np.array(list(steps.values())), axis=0),
        "med_seen": np.median(np.array(list(seen.values())), axis=0),
        "seen_lo_vs_hi": [v[0] > v[-1] for v in seen.values()],
        "late": late,
    }


def trigram_summary(archive: dict) -> dict:
    """Per archived trigram run (``icl_trigram.json``): the phases among the first three
    rules, the steps closest to the bigram rule, its smallest KL, the switch to the trigram
    rule, the final loss above the trigram rule's and the final KLs to both rules; ``seed``
    and ``history`` (:func:`~seqtheory.incontext.history_from_record`) name each run."""
    every = archive["meta"]["setup"]["eval_every"]
    out: dict = {
        k: []
        for k in (
            "seed",
            "history",
            "visited",
            "first",
            "bigram_len",
            "bigram_min",
            "switch",
            "gap",
            "kl_trigram_final",
            "kl_bigram_final",
        )
    }
    for r in archive["runs"]:
        h = history_from_record(r, TRI)
        out["seed"].append(r["seed"])
        out["history"].append(h)
        st = h.metric("loss")[0]
        kl = {n: h.metric(f"KL({n}||model)")[1] for n in TRI}
        ph = phases(st, kl)
        first = first_visits(ph)
        out["visited"].append([n for n in TRI[:3] if n in first])
        out["first"].append([first.get(n) for n in TRI[:3]])
        out["bigram_len"].append(sum(last - f + every for n, f, last in ph if n == "bigram"))
        out["bigram_min"].append(kl["bigram"].min())
        out["switch"].append(switch_step(h, "trigram", "bigram"))
        out["gap"].append(r["loss"][-1] - r["reference_loss"]["trigram"])
        out["kl_trigram_final"].append(r["KL(trigram||model)"][-1])
        out["kl_bigram_final"].append(r["KL(bigram||model)"][-1])
    return out


def final_kl_runs(depth: dict) -> dict:
    """(order, architecture) -> final KL from the Bayes rule per seed (ascending), from
    ``icl_depth.json``."""
    out: dict = {}
    for r in sorted(depth["runs"], key=lambda r: r.get("seed", 0)):
        out.setdefault((r["order"], r["architecture"]), []).append(r["kl_bayes"][-1])
    return {key: np.array(v) for key, v in out.items()}


def archived_kl_at(
    depth: dict, steps, order: int = 1, architecture: str = "3 layers, MLP"
) -> np.ndarray:
    """The archived KL from the Bayes rule of each seed of one depth model
    (``icl_depth.json``) at the given steps, shape (seeds, steps); NaN where a run was not
    evaluated."""
    runs = [r for r in depth["runs"] if r["order"] == order and r["architecture"] == architecture]
    return np.array(
        [
            [r["kl_bayes"][r["steps"].index(s)] if s in r["steps"] else np.nan for s in steps]
            for r in runs
        ]
    )


def live_excess(live: dict, archived: dict) -> list:
    """Per rule, how far a fresh loss lies from the archived one beyond 4 standard errors:
    |loss now - archived| - 4 se, with ``live`` mapping a rule to (loss now, standard error)
    and ``archived`` to the archived loss (below 0.005 nats: the same within sampling
    error)."""
    return [abs(now - archived[n]) - 4 * se for n, (now, se) in live.items()]


# ----------------------------------------------------------------------------- sections
@TABLE.computes("reference")
def _reference(ref) -> dict:
    """``ref``: k -> strategy -> (mean, standard error), from ``reference_losses``."""
    rows = [(k, name) for k in QUOTED for name in QUOTED[k]]
    return {"ref_excess": [abs(ref[k][n][0] - QUOTED[k][n]) - 4 * ref[k][n][1] for k, n in rows]}


@TABLE.computes("phases")
def _phases(history, evaluator) -> dict:
    """The main run's phases, plateau, switch and final distances."""
    steps = history.metric("loss")[0]
    kl = {n: history.metric(f"KL({n}||model)")[1] for n in STRATS}
    ph = phases(steps, kl)
    first = first_visits(ph)
    switch = switch_step(history)
    plateau = plateau_index(history)
    uni_start = first.get("unigram", np.inf)
    width = switch_width(steps, kl["bigram"], ph)
    return {
        "uni_start": float(uni_start),
        "plateau_len": None if switch is None else float(switch - uni_start),
        "switch": None if switch is None else float(switch),
        "switch_width": None if width is None else float(width),
        "gap": bigram_gap(history, evaluator),
        "kl_uniform_start": kl["uniform"][0],
        "visited": [n for n in STRATS if n in first],
        "first_visits": [first.get(n) for n in STRATS],
        "last_phase": ph[-1][0],
        "plateau_step": int(steps[plateau]),
        "kl_plateau": [kl[n][plateau] for n in STRATS],
        "kl_final": [kl[n][-1] for n in STRATS],
        "kl_P_mean": history.final("KL(P||model)"),
        "kl_P_last": history.final("KL(P||model) @last"),
    }


@TABLE.computes("one_layer")
def _one_layer(history) -> dict:
    """The one-layer control (:data:`ONE_LAYER`): its switch and final KL to each rule."""
    switch = switch_step(history)
    return {
        "one_switch": None if switch is None else float(switch),
        "one_kl_unigram": history.final("KL(unigram||model)"),
        "one_kl_bigram": history.final("KL(bigram||model)"),
    }


@TABLE.computes("paper")
def _paper(paper: dict, cpu_switch, paper_live: dict) -> dict:
    """The archived paper-scale runs (``icl_paper.json``), the CPU configuration's archived
    switch steps, and ``paper_live``: rule -> (loss on fresh sequences, standard error)."""
    pmeta = paper["meta"]
    setup = archived_setup(pmeta["setup"])
    paper_switch = [r["switch"] for r in paper["runs"]]
    return {
        "paper_switch": spread(paper_switch, 0),
        "paper_cpu_switch": spread(cpu_switch, 0),
        "paper_nseeds": float(len(paper["runs"])),
        "paper_steps": float(pmeta["setup"]["steps"]),
        "paper_date": pmeta["date"],
        "paper_device": pmeta["device"],
        "paper_torch": pmeta["torch"],
        "paper_concurrent": float(pmeta["concurrent"]),
        "paper_seconds": float(np.median([r["seconds"] for r in paper["runs"]])),
        "paper_ratio": float(np.median(paper_switch) / np.median(cpu_switch)),
        "paper_setup_matches": setup == PAPER,
        "paper_live_excess": live_excess(paper_live, paper["runs"][0]["reference_loss"]),
    }


@TABLE.computes("mechanism")
def _mechanism(history) -> dict:
    """Both layers' attention statistics at the plateau and at the end, and the steps at
    which each has covered half of its rise, relative to the switch."""
    steps = history.metric("KL(unigram||model)")[0]
    plateau = plateau_index(history)
    switch = switch_step(history)
    prev = history.metric("layer-1 previous-token attention")[1]
    ind = history.metric("layer-2 induction attention")[1]
    rise_prev = rise_step(steps, prev, plateau)
    rise_ind = rise_step(steps, ind, plateau)
    return {
        "prev_plateau": float(prev[plateau]),
        "prev_final": float(prev[-1]),
        "ind_plateau": float(ind[plateau]),
        "ind_final": float(ind[-1]),
        "rise_prev": None if rise_prev is None else float(rise_prev),
        "rise_ind": None if rise_ind is None else float(rise_ind),
        "prev_start": prev[0],
        "ind_start": float(ind[0]),
        "ind_lead": None if None in (rise_ind, switch) else rise_ind - switch,
        "prev_lag": None if None in (rise_prev, switch) else rise_prev - switch,
        "rec_seeds": TABLE.seeds_text(),
    }


@TABLE.computes("knockout")
def _knockout(by_offset, prev_at, knock: dict, ref: dict) -> dict:
    """Layer 1's weight by distance (``by_offset``: offsets 0-4, then further) and by query
    position (``prev_at``), the knock-out losses and the rules' losses."""
    names = {
        "ko_none": "none",
        "ko_l1_prev": "layer 1: no previous-token weight",
        "ko_l1_self": "layer 1: no weight on itself (control)",
        "ko_l1_mean": "layer 1: mean pattern",
        "ko_l1_unif": "layer 1: uniform",
        "ko_l2_mean": "layer 2: mean pattern",
        "ko_l2_unif": "layer 2: uniform",
    }
    return {
        "off_self": float(by_offset[0]),
        "off_near": float(by_offset[2:5].sum()),
        "off_far": float(by_offset[5]),
        **layer1_profile(prev_at),
        **{key: knock[name] for key, name in names.items()},
        "ref_uniform": ref["uniform"],
        "ref_unigram": ref["unigram"],
        "ref_bigram": ref["bigram"],
    }


@TABLE.computes("relative")
def _relative(history, prev_at, knock: dict, ref: dict, full_run: dict) -> dict:
    """The relative-position run (:data:`RELATIVE`): its switch, layer 1's weight on the
    previous token by query position (``prev_at``), its knock-out losses and the rules'
    losses on its held-out sequences; ``full_run``: the archived FULL=1 run of
    :data:`PAPER` (``icl_paper_full_run.json``)."""
    switch = switch_step(history)
    profile = layer1_profile(prev_at)
    fr, fmeta = full_run["values"], full_run["meta"]
    return {
        "fr_prev_late_ratio": fr["prev_late_ratio"],
        "fr_ko_l1_prev": fr["knock"]["layer 1: no previous-token weight"],
        "fr_ko_l2_mean": fr["knock"]["layer 2: mean pattern"],
        "fr_unigram": fr["unigram"],
        "fr_uniform": float(np.log(PAPER.k)),
        "fr_switch": float(fr["switch"]),
        "fr_ind_after": float(fr["rise_ind"] - fr["switch"]),
        "fr_prev_after": float(fr["rise_prev"] - fr["switch"]),
        "fr_device": fmeta["device"].split(" (")[0],
        "fr_date": fmeta["date"],
        "rel_switch": None if switch is None else float(switch),
        "rel_prev_early": profile["prev_early"],
        "rel_prev_late_ratio": profile["prev_late_ratio"],
        "rel_ko_none": knock["none"],
        "rel_ko_l1_prev": knock["layer 1: no previous-token weight"],
        "rel_ko_l2_mean": knock["layer 2: mean pattern"],
        "rel_ko_l2_unif": knock["layer 2: uniform"],
        "rel_uniform": ref["uniform"],
        "rel_unigram": ref["unigram"],
    }


@TABLE.computes("variations")
def _variations(gains: dict, archive: dict, live_switch: dict) -> dict:
    """The tasks' gains, the archived switch steps (``icl_variations.json``) and this
    chapter's live runs' switch steps (task -> step)."""
    ameta = archive["meta"]
    arch = archived_switches(archive)
    k3 = [r for r in archive["runs"] if r["variant"] == "k=3, α=1"]
    out = {f"gain_{VARIANTS[label]}": g for label, g in gains.items()}
    # a run without a switch is never the earlier one
    k5_earlier = sum(
        a is not None and (b is None or a < b)
        for a, b in zip(arch["k=5, α=1"], arch["k=3, α=1"], strict=True)
    )
    by_seed = switches_by_seed(archive)
    med = {
        key: float(np.median([v for v in arch[label] if v is not None] or [np.inf]))
        for label, key in VARIANTS.items()
        if label != "doubly stochastic"
    }
    # how much later than k = 3 each seed's k = 2 and alpha = 4 runs switch (a run that
    # never switches counts as later)
    later = [
        (v[label] if v[label] is not None else np.inf) - v["k=3, α=1"]
        for v in by_seed.values()
        if v["k=3, α=1"] is not None
        for label in ("k=2, α=1", "k=3, α=4")
    ]
    out.update(
        {
            "arch_median_order": [med["k5"], med["k3"], med["k2"], med["a4"]],
            "small_gain_later_min": float(min(later)),
            "k5_earlier": float(k5_earlier),
            "arch_nseeds": float(len(ameta["seeds"])),
            "arch_device": ameta["device"],
            "arch_torch": ameta["torch"],
            "arch_date": ameta["date"],
        }
    )
    for label, key in VARIANTS.items():
        ok = [v for v in arch[label] if v is not None]
        out[f"arch_switch_{key}"] = spread(ok, 0) if ok else "none"
    out["arch_plateau_k3"] = spread(unigram_plateaus(k3), 0)
    for label, mine in live_switch.items():
        key = VARIANTS[label]
        out[f"live_{key}"] = None if mine is None else float(mine)
        out[f"arch_range_{key}"] = switch_range(arch[label])
    return out


@TABLE.computes("doubly_stochastic")
def _doubly_stochastic(ds_ref: dict, archive: dict) -> dict:
    """The doubly stochastic task's reference losses and the archived comparison with the
    Dirichlet task, seed by seed."""
    by_seed = switches_by_seed(archive)
    earlier = [
        v["doubly stochastic"] is not None and v["doubly stochastic"] < v["k=3, α=1"]
        for v in by_seed.values()
    ]
    return {
        "ds_earlier": float(sum(earlier)),
        "ds_none": float(sum(v["doubly stochastic"] is None for v in by_seed.values())),
        "ds_n": float(len(earlier)),
        "ds_unigram_excess": ds_ref["unigram"] - ds_ref["uniform"],
    }


@TABLE.computes("graded")
def _graded(graded_ref: dict, graded: dict) -> dict:
    """The graded prior's reference losses (p -> losses) and the archived sweep
    (``icl_graded.json``)."""
    gmeta = graded["meta"]
    s = graded_summary(graded)
    fracs = s["fracs"]
    adv = [graded_ref[f]["uniform"] - graded_ref[f]["unigram"] for f in sorted(graded_ref)]
    return {
        "graded_adv": adv,
        "graded_adv_drops": [a - b for a, b in zip(adv, adv[1:], strict=False)],
        "graded_adv_hi": adv[0],
        "graded_adv_lo": adv[-1],
        "graded_fracs": ", ".join(f"{f:g}" for f in fracs),
        "graded_nseeds": float(len(s["switch"])),
        "graded_budget": float(s["budget"]),
        "graded_date": gmeta["date"],
        "graded_device": gmeta["device"],
        "graded_torch": gmeta["torch"],
        "graded_med_sw": "; ".join(
            f"p = {f:g}: " + (f"≥ {m:,.0f}" if m >= s["budget"] else f"{m:,.0f}")
            for f, m in zip(fracs[::-1], s["med_switch"][::-1], strict=True)
        ),
        "graded_med_list": [float(m) for m in s["med_switch"]],  # ascending p
        "graded_med_drops": [float(d) for d in -np.diff(s["med_switch"])],
        "graded_unswitched": float(sum(v is None for sw in s["switch"].values() for v in sw)),
        "graded_late": float(s["late"]),
        "graded_med_seen": "; ".join(
            f"p = {f:g}: {m:,.0f}" for f, m in zip(fracs[::-1], s["med_seen"][::-1], strict=True)
        ),
        "graded_more_lo": float(sum(s["seen_lo_vs_hi"])),
    }


@TABLE.computes("trigram")
def _trigram(archive: dict, tri_live: dict) -> dict:
    """The archived trigram runs (``icl_trigram.json``) and ``tri_live``: rule -> (loss on
    fresh sequences, standard error, archived loss)."""
    tmeta = archive["meta"]
    setup = archived_setup(tmeta["setup"])
    s = trigram_summary(archive)
    reached = [v for v in s["switch"] if v is not None]
    return {
        "tri_switch": spread(reached, 0),
        "tri_gap": spread(s["gap"], 3),
        "tri_nseeds": float(len(archive["runs"])),
        "tri_budget": float(tmeta["setup"]["steps"]),
        "tri_date": tmeta["date"],
        "tri_device": tmeta["device"],
        "tri_torch": tmeta["torch"],
        "tri_bigram_len": spread(s["bigram_len"], 0),
        "tri_bigram_min": spread(s["bigram_min"], 3),
        "tri_n_reached": float(len(reached)),
        "tri_cpu_per_k": float(np.median([r["cpu_seconds"] for r in archive["runs"]]))
        / tmeta["setup"]["steps"]
        * 1000,
        "tri_setup_matches": setup == TRIGRAM_SETUP.pick("cpu"),
        "tri_live_excess": live_excess(
            {n: v[:2] for n, v in tri_live.items()}, {n: v[2] for n, v in tri_live.items()}
        ),
    }


@TABLE.computes("minimal")
def _minimal(init: dict, minimal: dict, grad_ratio: float, k: int) -> dict:
    """The minimal model: ``init`` (prior -> loss, |grad w|, |grad W| at initialisation),
    the ratio of the initial layer-2 gradients, and the SGD runs (label -> History)."""
    matched = "doubly stochastic, lr / ratio"
    escape, w_first = escape_steps(minimal), layer2_steps(minimal)
    losses = {p: h.metric("loss")[1] for p, h in minimal.items()}
    esc_ds = escape["doubly_stochastic"]

    def as_float(v):
        return None if v is None else float(v)

    return {
        "min_loss0_dir": init["dirichlet"][0],
        "min_loss0_ds": init["doubly_stochastic"][0],
        "min_grad_ratio": grad_ratio,
        "ds_share": init["doubly_stochastic"][3],
        "dir_share": init["dirichlet"][3],
        "ln_k": float(np.log(k)),
        "grad_w": [v[1] for v in init.values()],
        "grad_W": [v[2] for v in init.values()],
        "esc_dir": as_float(escape["dirichlet"]),
        "esc_ds": as_float(esc_ds),
        "esc_ds_lr": as_float(escape[matched]),
        "esc_ds_scaled": None if esc_ds is None else float(esc_ds * grad_ratio),
        "escape": list(escape.values()),
        "w_first": list(w_first.values()),
        "w_lead": [
            None if None in (e, w) else e - w
            for e, w in zip(escape.values(), w_first.values(), strict=True)
        ],
        "loss_drop": [v[0] - v[-1] for v in losses.values()],
        "plateau_drop": losses["dirichlet"][0] - losses["dirichlet"][4],
        **recorded_controls(),
        **recorded_directions(),
    }


def recorded_directions() -> dict:
    """Over the recorded base seeds: the cosines of the first layer-2 step with the bigram
    direction on each prior (median [min, max]) and on how many seeds the doubly stochastic
    one is the larger ("not recorded" before a record has them)."""
    try:
        ds = TABLE.over_seeds("minimal", "ds_share")
        dirichlet = TABLE.over_seeds("minimal", "dir_share")
    except KeyError:
        return {k: "not recorded" for k in ("share_ds_range", "share_dir_range", "share_ds_more")}
    more = sum(a > b for a, b in zip(ds, dirichlet, strict=True))
    return {
        "share_ds_range": spread(ds, 2),
        "share_dir_range": spread(dirichlet, 2),
        "share_ds_more": f"{more} of {len(ds)}",
    }


def recorded_controls() -> dict:
    """Over the recorded base seeds: the seeds whose control run (doubly stochastic, learning
    rate divided by the gradient ratio) did not escape within its steps, and how many
    controls escaped later than the Dirichlet run (not escaping counts as later)."""
    runs = TABLE.recorded()["runs"]
    esc_lr = TABLE.over_seeds("minimal", "esc_ds_lr")
    esc_dir = TABLE.over_seeds("minimal", "esc_dir")
    none = [s for s, r in runs.items() if r["minimal"]["esc_ds_lr"] is None]
    return {
        "ctrl_none_seeds": f"seed{'s' * (len(none) > 1)} {', '.join(none)}" if none else "none",
        "ctrl_none_n": float(len(none)),
        "ctrl_later_n": float(
            sum(c is None or c > d for c, d in zip(esc_lr, esc_dir, strict=True))
        ),
        "ctrl_n": float(len(esc_lr)),
    }


def depth_comparisons(final_runs: dict) -> dict:
    """The depth archive's comparisons, from :func:`final_kl_runs`: the MLP model's largest
    final KL, the median gap of two attention-only layers over it per order, where four
    layers sit at order 3, and what LayerNorm changes, seed by seed."""
    orders = (1, 2, 3)
    mlp = {m: final_runs[m, "3 layers, MLP"] for m in orders}
    two = {m: final_runs[m, "2 layers, attention-only"] for m in orders}
    four = {m: final_runs[m, "4 layers, attention-only"] for m in orders}
    two_noln = {m: final_runs[m, NO_LN["2 layers, attention-only"]] for m in orders}
    four_noln = {m: final_runs[m, NO_LN["4 layers, attention-only"]] for m in orders}
    return {
        "depth_mlp_max": float(max(v.max() for v in mlp.values())),
        "depth_gap2": [float(np.median(two[m]) - np.median(mlp[m])) for m in orders],
        "depth_four_behind_m3": float(four[3].min() - mlp[3].max()),
        "depth_four_ahead_m3": float(two[3].min() - four[3].max()),
        # without minus with LayerNorm, seed by seed, both depths and every order
        "ln_gain_min": float(
            min(min((two_noln[m] - two[m]).min(), (four_noln[m] - four[m]).min()) for m in orders)
        ),
        "noln4_ahead_min": float(min((two_noln[m] - four_noln[m]).min() for m in (1, 2))),
        "noln4_level_m3": float(abs(np.median(two_noln[3]) - np.median(four_noln[3]))),
    }


@TABLE.computes("depth")
def _depth(depth: dict, live_ref: dict, live_history) -> dict:
    """The archived depth runs (``icl_depth.json``), ``live_ref`` (order -> Bayes-rule loss
    on fresh sequences, standard error, archived loss) and the live run's History."""
    meta = depth["meta"]
    final_runs = final_kl_runs(depth)
    with_ln = [p for p in meta["parts"] if not any("no LayerNorm" in a for a in p["architectures"])]
    new_part = next(p for p in with_ln if p["date"] != "not recorded")
    no_ln = [p for p in meta["parts"] if any("no LayerNorm" in a for a in p["architectures"])]
    no_ln4 = [p for p in no_ln if NO_LN["4 layers, attention-only"] in p["architectures"]]
    out = {
        "depth_torch": meta["torch"],
        "depth_when": f"{new_part['date']} ({new_part['device']})",
        "noln_when": f"{no_ln[0]['date']} ({no_ln[0]['device']})",
        "noln4_when": f"{no_ln4[0]['date']} ({no_ln4[0]['device']})",
    }
    for m in (1, 2, 3):
        for key, arch in (("ln2", "2 layers, attention-only"), ("ln4", "4 layers, attention-only")):
            out[f"{key}_m{m}"] = spread(final_runs[m, arch], 3)
            out[f"no{key}_m{m}"] = spread(final_runs[m, NO_LN[arch]], 3)
    out.update(depth_comparisons(final_runs))
    steps, kl = live_history.metric("KL(bigram||model)")
    at = archived_kl_at(depth, steps)  # (seeds, steps)
    return {
        **out,
        "depth_live_excess": live_excess(
            {m: v[:2] for m, v in live_ref.items()}, {m: v[2] for m, v in live_ref.items()}
        ),
        "depth_live_steps": float(steps[-1]),
        "live_steps": steps,
        "live_over_lo": kl / at.min(0),
        "live_over_hi": kl / at.max(0),
    }


@TABLE.computes("exercise")
def _exercise(main_history, peaked_history) -> dict:
    """Exercise "Peaked rows": the unigram plateau (:func:`unigram_plateau`) of the main
    run and of the same run with peaked rows (alpha = 0.25)."""
    out = {}
    for key, h in (("main", main_history), ("peaked", peaked_history)):
        p = unigram_plateau(h)
        out.update(
            {
                f"ex5_{key}_len": p["length"],
                f"ex5_{key}_kl": p["kl_min"],
                f"ex5_{key}_switch": p["switch"],
            }
        )
    return out | recorded_peaked()


def recorded_peaked() -> dict:
    """Over the recorded base seeds: on how many the peaked-rows unigram phase was shorter
    than the main run's, as text and as a share (None before a record has them)."""
    try:
        peaked = TABLE.over_seeds("exercise", "ex5_peaked_len")
        main = TABLE.over_seeds("exercise", "ex5_main_len")
    except KeyError:
        return {"ex5_shorter": "not recorded", "ex5_shorter_share": None}
    shorter = sum(a < b for a, b in zip(peaked, main, strict=True))
    return {
        "ex5_shorter": f"{shorter} of {len(peaked)}",
        "ex5_shorter_share": shorter / len(peaked),
    }


# ------------------------------------------------------------------ coding labs
LABS = LabTable(
    "induction_heads",
    [
        Lab(
            "ex-induction-heads-6",
            expects="the share of chains (k = 3, two tokens each) whose second token repeats "
            "the first",
            quantity="P(x_2 = x_1) - 1/3",
            measure=lambda share: share - 1 / 3,
            low=0.045,
            high=0.095,
            because="states with a large self-transition P_ii hold the chain longer and so "
            "carry more stationary mass: a first token drawn from the stationary law "
            "is more often a sticky one, which the bigram rule's uniform 1/k ignores",
            hint="sample the chapter's task (k = 3) with icl_mc_batch, whose first state is "
            "stationary, and count the chains with x[:, 1] == x[:, 0].",
        ),
        Lab(
            "ex-induction-heads-7",
            expects="KL(bigram || model) at the last position (nats) of the hand-set minimal model",
            quantity="KL(bigram rule || hand-set model) at the last position",
            low=0.002,
            high=0.03,
            because="layer 1 on distance 1 writes the previous token into each key and W = c I "
            "then keeps only the keys whose previous token is the query's token: the "
            "model averages what followed earlier copies of x_t, the bigram rule without "
            "its pseudo-counts",
            hint="put the large logit c on distance 1 in net.w, set net.W = c * I, and take c "
            "large enough that e^c dwarfs the ~100 keys (c around 10).",
        ),
        Lab(
            "ex-induction-heads-8",
            expects="the mean of t times the bigram rule's excess loss over the oracle, over "
            "t = 50..99 (k = 3)",
            quantity="t x (bigram loss - oracle loss), averaged over t = 50..99",
            low=2.3,
            high=2.85,
            because="each row of P is learned from about pi_i t transitions at an excess of "
            "about (k - 1)/(2 pi_i t), so the excess is about k(k - 1)/(2t) = 3/t; at "
            "a few dozen visits per state it is still below that asymptote",
            hint="subtract the oracle's sequence_loss from the bigram rule's, average over the "
            "chains, multiply column t by t and average columns 50..99 (k = 3, 8,000 "
            "chains).",
        ),
    ],
)
feedback = LABS.feedback
