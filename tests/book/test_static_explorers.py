"""The static explorer player (seqtheory.book.widgets): its grid, its HTML, and its cost."""

import matplotlib

matplotlib.use("Agg")

import base64  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from PIL import Image  # noqa: E402

from seqtheory.book.widgets import (
    PRODUCT_MAX,
    STATIC_DPI,
    WIDGET_MIME,
    explorer,
    static_grid,
    static_target,
)


def _tiny(text: str, size: float = 1.0):
    """A small, quick figure showing ``text``."""
    fig = plt.figure(figsize=(size, size))
    ax = fig.add_axes([0, 0, 1, 1])
    ax.axis("off")
    ax.text(0.1, 0.5, text, fontsize=7)
    return fig


class Draw:
    """``fn(**params)`` that records its calls; every parameter set draws a distinct figure."""

    def __init__(self):
        self.calls = []

    def __call__(self, **params):
        self.calls.append(params)
        return _tiny(" ".join(f"{k}={v}" for k, v in sorted(params.items())))


def _data(html: str) -> dict:
    raw = re.search(
        r'<script type="application/json" class="sqx-data">(.*?)</script>', html, re.S
    ).group(1)
    return json.loads(raw)


# --------------------------------------------------------------------------- the grid


def test_small_grids_are_a_full_product_with_the_default():
    mode, chosen, points = static_grid([3, 2], [1, 0])
    assert mode == "product"
    assert chosen == [[0, 1, 2], [0, 1]]
    assert sorted(points) == [(i, j) for i in range(3) for j in range(2)]
    mode, _, points = static_grid([4, 4], [0, 3])  # 16 images: still a product
    assert mode == "product" and len(points) == PRODUCT_MAX


def test_large_grids_vary_one_control_at_a_time_around_the_defaults():
    mode, chosen, points = static_grid([50, 3, 10], [10, 0, 9], cap=24)
    assert mode == "star" and len(points) <= 24
    center = (10, 0, 9)
    assert points[0] == center and len(set(points)) == len(points)
    assert all(sum(a != b for a, b in zip(p, center, strict=True)) == 1 for p in points[1:])
    assert chosen[1] == [0, 1, 2]  # a small control keeps every value
    assert chosen[0][0] == 0 and chosen[0][-1] == 49 and 10 in chosen[0]  # ends and default
    assert chosen[2][0] == 0 and chosen[2][-1] == 9
    assert len(points) == 1 + sum(len(c) - 1 for c in chosen)


def test_the_cap_bounds_every_grid():
    assert static_grid([1000], [17], cap=24)[2][0] == (17,)
    assert len(static_grid([1000], [17], cap=24)[2]) == 24
    assert static_grid([5, 5, 5], [2, 2, 2], cap=1) == ("product", [[2], [2], [2]], [(2, 2, 2)])
    mode, _, points = static_grid([3, 3], [1, 1], cap=8)  # 9 > 8: a product is too big
    assert mode == "star" and len(points) == 5
    mode, chosen, points = static_grid([6] * 30, [0] * 30, cap=10)  # more controls than cap
    assert len(points) == 10 and sum(len(c) > 1 for c in chosen) == 9


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=6).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes), st.tuples(*[st.integers(0, n - 1) for n in sizes]), st.integers(1, 48)
        )
    )
)
def test_grid_invariants(args):
    sizes, defaults, cap = args
    mode, chosen, points = static_grid(sizes, list(defaults), cap)
    assert 1 <= len(points) <= cap and tuple(defaults) in points
    assert len(set(points)) == len(points)
    for n, d, c in zip(sizes, defaults, chosen, strict=True):
        assert d in c and c == sorted(set(c)) and all(0 <= v < n for v in c)
    assert all(p[i] in chosen[i] for p in points for i in range(len(sizes)))
    if mode == "product":
        assert len(points) == math.prod(len(c) for c in chosen) <= min(PRODUCT_MAX, cap)
    else:
        assert all(sum(a != b for a, b in zip(p, defaults, strict=True)) <= 1 for p in points)
        assert len(points) == 1 + sum(len(c) - 1 for c in chosen)
        # nothing left unused: either the cap is reached or every value is offered
        assert len(points) == cap or all(
            len(c) == min(n, cap) for n, c in zip(sizes, chosen, strict=True)
        )


def test_grid_rejects_bad_inputs():
    with pytest.raises(ValueError, match="cap must be >= 1"):
        static_grid([3], [0], cap=0)
    with pytest.raises(ValueError, match=r"defaults\[0\] must be in \[0, 3\), got 3"):
        static_grid([3], [3])
    with pytest.raises(ValueError, match="same length"):
        static_grid([3, 2], [0])


# --------------------------------------------------------------------------- the controls


def test_each_kind_of_control_offers_its_values():
    draw = Draw()
    ex = explorer(
        draw,
        alt="a test figure with every kind of control",
        i=widgets.IntSlider(value=4, min=0, max=10, step=2),
        f=widgets.FloatSlider(value=0.8, min=0.05, max=0.95, step=0.05),
        g=widgets.FloatLogSlider(value=1.0, min=-1, max=1, step=1),
        s=widgets.SelectionSlider(options=[512, 1024, 2048], value=1024),
        d=widgets.Dropdown(options=[("small", 1), ("large", 2)], value=2),
        b=widgets.Checkbox(value=False),
        t=widgets.Text(value="abc"),
    )
    axes = {a.name: a for a in ex.static_axes()}
    assert axes["i"].values == (0, 2, 4, 6, 8, 10) and axes["i"].default == 2
    assert axes["f"].values[0] == 0.05 and axes["f"].values[-1] == 0.95
    assert len(axes["f"].values) == 19 and axes["f"].values[axes["f"].default] == 0.8
    assert axes["f"].labels[axes["f"].default] == "0.80"
    assert [round(v, 9) for v in axes["g"].values] == [0.1, 1.0, 10.0]
    assert axes["s"].kind == "range" and axes["s"].labels == ("512", "1024", "2048")
    assert axes["d"].kind == "select" and axes["d"].values == (1, 2)
    assert axes["d"].labels == ("small", "large") and axes["d"].default == 1
    assert axes["b"].values == (False, True)
    assert axes["t"].kind == "fixed" and axes["t"].values == ("abc",)
    mode, grid = ex.static_grid()
    assert mode == "star" and len(grid) <= 24
    assert grid[0] == ex.params  # the default view first
    assert all(p["t"] == "abc" for p in grid)  # a text box stays as typed
    assert {p["d"] for p in grid} == {1, 2}  # fn gets values, not labels


def test_static_values_choose_a_controls_values():
    ex = explorer(
        Draw(),
        alt="a test figure of a typed string",
        static_values={"text": ["abcabd", "aaaa"]},
        text=widgets.Text("xyz"),
        model=["a", "b"],
    )
    axes = {a.name: a for a in ex.static_axes()}
    assert axes["text"].values == ("xyz", "abcabd", "aaaa") and axes["text"].kind == "select"
    mode, grid = ex.static_grid()
    assert mode == "product" and len(grid) == 6


def test_static_options_are_checked():
    with pytest.raises(ValueError, match="static_frames must be >= 1"):
        explorer(Draw(), k=(1, 3), static_frames=0)
    with pytest.raises(ValueError, match="static_frames must be <= 48"):
        explorer(Draw(), k=(1, 3), static_frames=100)
    with pytest.raises(ValueError, match="not a control"):
        explorer(Draw(), k=(1, 3), static_values={"j": [1]})
    with pytest.raises(ValueError, match="non-empty list"):
        explorer(Draw(), k=(1, 3), static_values={"k": []})


# --------------------------------------------------------------------------- the player


def test_fn_is_called_once_per_grid_point_and_last_for_the_default(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STATIC_EXPLORERS", "1")  # as in the book build
    open_before = set(plt.get_fignums())  # other tests' figures
    draw = Draw()
    ex = explorer(draw, alt="a test figure of two sliders", a=(0, 9), b=(0, 9), static_frames=12)
    mode, grid = ex.static_grid()
    assert mode == "star" and len(grid) == 12
    assert len(draw.calls) == len(grid)  # built with the explorer
    assert sorted(map(repr, draw.calls)) == sorted(map(repr, grid))
    assert draw.calls[-1] == ex.params == grid[0]  # fn's side effects: default
    html = ex.static_player()
    assert ex.static_player() is html and len(draw.calls) == len(grid)  # cached
    assert ex.static_seconds is not None and ex.static_seconds >= 0
    assert set(plt.get_fignums()) == open_before  # every view's figure closed


def test_a_reader_pays_for_the_player_only_when_asking_for_it(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STATIC_EXPLORERS", "0")  # a reader's Jupyter or Colab
    draw = Draw()
    ex = explorer(draw, alt="a test figure of one slider", k=(1, 5))
    assert draw.calls == [{"k": 3}] and ex._player is None
    ex.static_player()  # 4 other views, then the default
    assert len(draw.calls) == 6 and draw.calls[-1] == {"k": 3}


def test_player_html_has_controls_images_and_alt_text_and_nothing_external():
    draw = Draw()
    ex = explorer(
        draw,
        alt="a test figure of a curve & its label",
        static_frames=20,
        k=widgets.IntSlider(value=2, min=1, max=5, description="order"),
        name=widgets.Dropdown(options=["a", "</script><b>x"], value="a"),
        note=widgets.Text("fixed text"),
    )
    html = ex.static_player()
    data = _data(html)
    assert data["names"] == ["order", "name"] and data["star"] is False  # 5 x 2: a product
    assert len(data["frames"]) == 10 and data["defaults"] == [1, 0]
    # one <img> shows the default; the other views are data: URIs swapped in by the script
    assert html.count("<img") == 1
    default_src = re.search(r'<img class="sqx-image" src="([^"]+)"', html).group(1)
    assert default_src.startswith("data:image/png;base64,")
    images = [u for u in data["images"] if u]
    assert len(images) == 9 and all(u.startswith("data:image/png;base64,") for u in images)
    assert sorted(data["frames"].values()) == list(range(10))
    # controls labelled with their description and current value; a text box is shown fixed
    assert re.search(
        r'<label>order <input type="range" min="0" max="4" step="1" value="1" '
        r'data-sqx-control="0" aria-valuetext="2"><output data-sqx-readout="0">2'
        r"</output></label>",
        html,
    )
    assert '<select data-sqx-control="1"><option value="0" selected>a</option>' in html
    assert '<input type="text" value="fixed text" disabled' in html
    assert 'alt="a test figure of a curve &amp; its label (order 2, name a)"' in html
    # self-contained: no URL outside the page, and option text cannot end the script early
    assert not re.search(r"https?://|\bsrc=\"(?!data:)|\bhref=|url\(|@import", html)
    assert html.count("</script>") == 2 and "</script><b>" not in html
    assert _data(html)["labels"][1] == ["a", "</script><b>x"]
    # images are rendered at STATIC_DPI: a 1-inch figure is that tall, plus tight-bbox padding
    png = base64.b64decode(default_src.split(",", 1)[1])
    with Image.open(io.BytesIO(png)) as im:
        assert im.height <= 1.2 * STATIC_DPI and im.mode == "P"  # palette PNG: small pages


def test_star_players_say_so_and_identical_images_are_stored_once():
    ex = explorer(
        lambda k, j: _tiny(f"k={k}"), alt="a test figure that ignores j", k=(0, 9), j=(0, 9)
    )
    data = _data(ex.static_player())
    assert data["star"] is True and "puts the others back" in ex.static_player()
    assert len(data["frames"]) == 19
    assert len(data["images"]) == 10  # j changes nothing: views share images


def test_a_failing_view_names_its_parameters(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STATIC_EXPLORERS", "1")

    def draw(k):
        if k == 3:
            raise ZeroDivisionError("boom")
        return _tiny(str(k))

    open_before = set(plt.get_fignums())  # other tests' figures
    with pytest.raises(RuntimeError, match=r"fails at k=3.*\{'k': 3\}.*boom"):
        explorer(draw, alt="a test figure that fails at k=3", k=(1, 3))
    assert set(plt.get_fignums()) == open_before


def test_the_bundle_carries_the_player_only_for_the_static_site(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STATIC_EXPLORERS", "0")
    assert not static_target()
    draw = Draw()
    ex = explorer(draw, alt="a test figure of one slider", k=(1, 3))
    bundle = ex._repr_mimebundle_()
    assert "text/html" not in bundle and len(draw.calls) == 1  # a reader pays nothing
    assert list(bundle)[0] == WIDGET_MIME and "image/png" in bundle
    monkeypatch.delenv("SEQTHEORY_STATIC_EXPLORERS")
    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "1")  # the build, the tests
    assert static_target()
    bundle = ex._repr_mimebundle_()
    assert list(bundle)[0] == WIDGET_MIME  # live widget first
    assert {"text/html", "image/png", "text/plain"} <= set(bundle)
    assert 'class="sqx-explorer"' in bundle["text/html"] and len(draw.calls) == 4
    monkeypatch.setenv("SEQTHEORY_STATIC_PROGRESS", "0")
    assert not static_target()
    monkeypatch.setenv("SEQTHEORY_STATIC_EXPLORERS", "1")
    assert static_target()
