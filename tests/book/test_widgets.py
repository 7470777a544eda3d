"""seqtheory.book.widgets: explorers, animations and the offline player."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from seqtheory import Transformer, seed_everything, train  # noqa: E402
from seqtheory.book.widgets import Explorer, animate, animate_snapshots, explorer, subsample
from seqtheory.core.training import History
from seqtheory.tasks import previous_token_batch  # noqa: E402


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


def test_a_smoke_run_animates_the_first_and_last_frames_only(monkeypatch):
    seen = []

    def draw(fig, frame):
        seen.append(frame)
        fig.add_subplot().plot([0, frame])

    monkeypatch.setenv("SEQTHEORY_SMOKE", "2")
    animate(range(100), draw, max_frames=5, dpi=40)
    assert sorted(set(seen)) == [0, 99]


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


def test_offline_player_needs_no_network_and_describes_itself():
    from seqtheory.book.widgets import offline_player

    html = animate(
        range(3), lambda fig, f: fig.add_subplot().plot([0, f]), dpi=20, alt='weights "over" time'
    ).data
    assert "font-awesome" not in html and 'class="fa ' not in html
    assert 'alt="weights &quot;over&quot; time" id="_anim_img' in html
    assert "&#9654;" in html  # the play button is a text symbol
    assert '<input aria-label="animation frame" id="_anim_slider' in html  # a named control
    with pytest.raises(ValueError, match="alt"):
        offline_player(html, alt=" ")
