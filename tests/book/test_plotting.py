"""seqtheory.book.plotting: figures are built and labelled (not looked at)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from seqtheory.book.plotting import palette, plot_attention, plot_history, set_style, smooth
from seqtheory.core.training import History


def test_smooth_is_a_trailing_mean():
    assert np.allclose(smooth([1, 3, 5, 7], window=2), [1, 2, 4, 6])
    assert np.allclose(smooth([1, 2], window=1), [1, 2])


def test_plot_history_labels_axes_and_reference_lines():
    set_style()
    h = History(
        steps=[1, 2, 3],
        loss=[3.0, 2.0, 1.0],
        evals=[{"step": 0, "kl": 1.0}, {"step": 3, "kl": 0.1}],
    )
    ax = plot_history(h, refs={"uniform": 2.0})
    assert ax.get_xlabel() == "training step" and "nats" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "kl" in labels and any("training loss" in s for s in labels)
    assert any("uniform" in t.get_text() for t in ax.texts)
    plt.close("all")


def test_plot_attention_checks_shape_and_labels():
    ax = plot_attention(torch.eye(4), tokens=[1, 2, 3, 4])
    assert ax.get_ylabel() == "query token"
    with pytest.raises(ValueError, match="square"):
        plot_attention(np.ones((3, 4)))
    with pytest.raises(ValueError, match="3 tokens"):
        plot_attention(np.eye(4), tokens=[1, 2, 3])
    ax = plot_attention(torch.eye(3, dtype=torch.bfloat16).requires_grad_())  # any dtype
    assert ax.images[0].get_array().shape == (3, 3)
    plt.close("all")


def test_palette_is_colour_blind_palette():
    import seaborn as sns

    assert palette(4) == sns.color_palette("colorblind", 4)
    assert len(set(palette(10))) == 10  # ten distinct colours


def test_markdown_table_and_log_ticks():
    import matplotlib.pyplot as plt

    from seqtheory.book.plotting import log_ticks, markdown_table

    md = markdown_table(["a", "b"], [[1, 0.12345], ["x", 2.0]], digits=2).data
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1 | 0.12 |", "| x | 2.00 |"]
    with pytest.raises(ValueError, match="2 cells"):
        markdown_table(["a", "b"], [[1]])
    fig, ax = plt.subplots()
    ax.plot([100, 1000], [1, 2])
    log_ticks(ax, [100, 300, 1000])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100", "300", "1,000"]
    with pytest.raises(ValueError):
        log_ticks(ax, [1], axis="z")
    plt.close(fig)


def test_markdown_table_escapes_pipes_in_cells():
    from seqtheory.book.plotting import markdown_table

    md = markdown_table(["|coef.|", "b"], [["a|b", 1.0]], digits=1).data
    assert md.splitlines()[0] == "| \\|coef.\\| | b |"
    assert md.splitlines()[2] == "| a\\|b | 1.0 |"


def test_key_figure_and_transformer_diagram():
    from seqtheory.book.plotting import draw_transformer, key_figure

    fig = plt.figure()
    assert key_figure(fig) is fig
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        key_figure(plt.gca())
    ax = draw_transformer(2, mlp=True)
    texts = [t.get_text() for t in ax.texts]
    assert sum("attention" in t for t in texts) == 2 and sum("MLP" in t for t in texts) == 2
    assert not any("MLP" in t for t in [t.get_text() for t in draw_transformer(1).texts])
    with pytest.raises(ValueError, match="n_layers must be between 1 and 4"):
        draw_transformer(0)
    with pytest.raises(TypeError, match="mlp must be a bool"):
        draw_transformer(1, mlp="yes")
    plt.close("all")
