"""Unit tests for seqtheory.book.plotting and seqtheory.book.widgets (figures are built, not looked
at)."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from seqtheory import Transformer, seed_everything, train  # noqa: E402
from seqtheory.book.plotting import palette, plot_attention, plot_history, set_style, smooth
from seqtheory.book.widgets import Explorer, animate, animate_snapshots, explorer, subsample
from seqtheory.core.training import History
from seqtheory.tasks import previous_token_batch  # noqa: E402


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


def _draw(k=2, name="a"):
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot(range(k))
    ax.set_title(name)
    return fig


def test_explorer_has_live_widget_and_static_png():
    ex = explorer(_draw, k=(1, 5), name=["a", "b"])
    assert isinstance(ex, Explorer) and set(ex.controls) == {"k", "name"}
    bundle = ex._repr_mimebundle_()
    assert {"image/png", "text/plain", "application/vnd.jupyter.widget-view+json"} <= set(bundle)
    assert ex.static_png.startswith(b"\x89PNG")
    before = ex.image.value
    ex.controls["k"].value = 5  # moving a control redraws the image
    assert ex.image.value != before
    assert ex.static_png == before  # the static view stays the default
    assert plt.get_fignums() == []  # no figures leak


def test_explorer_errors():
    with pytest.raises(TypeError, match="callable"):
        explorer(3, k=(1, 2))
    with pytest.raises(ValueError, match="at least one control"):
        explorer(_draw)
    with pytest.raises(ValueError, match="cannot make a control"):
        explorer(_draw, k=object())
    assert isinstance(
        explorer(_draw, k=widgets.IntSlider(2, 1, 4)).controls["k"], widgets.IntSlider
    )


def test_subsample_keeps_ends():
    assert subsample(range(10), 3) == [0, 4, 9] or subsample(range(10), 3) == [0, 5, 9]
    assert subsample(range(3), 10) == [0, 1, 2]


def test_animate_limits_frames_and_returns_html():
    seen = []

    def draw(fig, frame):
        seen.append(frame)
        fig.add_subplot().plot([0, frame])

    html = animate(range(100), draw, max_frames=5, dpi=40)
    assert "<script" in html.data and len(set(seen)) == 5
    with pytest.raises(ValueError, match="<= 60"):
        animate(range(3), draw, max_frames=61)
    with pytest.raises(ValueError, match="at least one frame"):
        animate([], draw)


def test_animate_snapshots_restores_weights():
    seed_everything(0)
    model = Transformer(vocab_size=5, max_len=8, n_layers=1, d_model=8)
    hist = train(
        model,
        lambda s: previous_token_batch(8, 8, 5),
        steps=4,
        progress=False,
        snapshot_steps=(0, 4),
        lr=0.1,
    )
    after = {k: v.clone() for k, v in model.state_dict().items()}
    steps = []
    animate_snapshots(model, hist, lambda fig, m, step: steps.append(step), dpi=30)
    assert sorted(set(steps)) == [0, 4]
    assert all(torch.equal(after[k], v) for k, v in model.state_dict().items())
    with pytest.raises(KeyError, match="available"):
        animate_snapshots(model, hist, lambda *a: None, steps=[2])
    with pytest.raises(ValueError, match="no snapshots"):
        animate_snapshots(model, History(), lambda *a: None)


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


def test_offline_player_needs_no_network_and_describes_itself():
    from seqtheory.book.widgets import offline_player

    html = animate(
        range(3), lambda fig, f: fig.add_subplot().plot([0, f]), dpi=20, alt='weights "over" time'
    ).data
    assert "font-awesome" not in html and 'class="fa ' not in html
    assert 'alt="weights &quot;over&quot; time" id="_anim_img' in html
    assert "&#9654;" in html  # the play button is a text symbol
    with pytest.raises(ValueError, match="alt"):
        offline_player(html, alt=" ")


def test_progress_bar_is_static_text_when_building_the_book(monkeypatch, capsys):
    from seqtheory import progress_bar

    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")
    assert list(progress_bar(range(5), desc="demo")) == list(range(5))
    out = capsys.readouterr().out
    assert out.count("demo: 100%") == 1 and "5/5" in out
    for _ in progress_bar(range(5), desc="hidden", leave=False):
        pass
    assert "hidden" not in capsys.readouterr().out
    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "0")
    assert list(progress_bar(range(3), disable=True)) == [0, 1, 2]


def test_a_bar_closed_early_says_where_and_why(monkeypatch, capsys):
    """A run that meets its stop rule ends its static bar with a final note, not at 1-48 %
    (a reader would take that for a crash)."""
    from seqtheory import progress_bar

    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")
    bar = progress_bar(range(100), desc="k=2")
    for i in bar:
        if i == 9:
            bar.stopped_at, bar.stop_note = 10, "solved"
            break
    bar.close()
    out = capsys.readouterr().out
    assert "k=2: stopped at 10 of 100: solved" in out and "%" not in out


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
