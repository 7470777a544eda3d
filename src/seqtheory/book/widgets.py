"""Interactive explorers and animations that also work on the static (published) page.

* :func:`explorer` turns a pure function ``fn(**params) -> Figure`` into an ipywidgets
  explorer.  In Jupyter or Colab it shows live controls.  When the book is built (there is
  no kernel behind the published page) its output also carries a self-contained HTML
  player: ``fn`` is evaluated once per point of a small grid of the controls' values and
  the page swaps between those precomputed images as the reader moves HTML controls
  (:func:`static_grid`, :meth:`Explorer.static_player`).
* :func:`animate` / :func:`animate_snapshots` turn a sequence of frames (e.g. weight
  snapshots taken during training) into a ``to_jshtml`` animation that plays without a kernel.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_lib
import io
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from ..core.validate import check_int
from .session import STATIC_PROGRESS_ENV, smoke_steps

__all__ = [
    "Explorer",
    "explorer",
    "static_grid",
    "static_target",
    "animate",
    "animate_snapshots",
    "subsample",
    "offline_player",
]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATIC_ENV = "SEQTHEORY_STATIC_EXPLORERS"
STATIC_FRAMES = 24  # default cap on the precomputed images of one explorer
MAX_STATIC_FRAMES = 48  # page-size guard: check_site allows 3 MB per page
PRODUCT_MAX = 16  # every combination of values when there are at most this many
MAX_CANDIDATES = 1001  # a slider with more steps is first thinned to this many values
STATIC_DPI = 80


def _figure_png(fig, dpi: int = STATIC_DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def _small_png(png: bytes) -> bytes:
    """``png`` re-encoded with a 256-colour palette: plots lose nothing visible and the
    page carries a half to a third of the bytes."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        out = io.BytesIO()
        im.convert("RGB").quantize(colors=256).save(out, format="png", optimize=True)
    return out.getvalue() if out.tell() < len(png) else png


def static_target() -> bool:
    """Whether outputs are rendered for the static site (the book build, the notebook tests).

    ``SEQTHEORY_STATIC_EXPLORERS=1``/``0`` decides; unset, it follows
    ``SEQTHEORY_STATIC_PROGRESS=1``, which the build and ``pytest`` set for their kernels.
    A reader's Jupyter or Colab has neither, so it spends no time on the static player.
    """
    flag = os.environ.get(STATIC_ENV)
    if flag is not None:
        return flag.strip() == "1"
    return os.environ.get(STATIC_PROGRESS_ENV) == "1"


# --------------------------------------------------------------------------- the grid


def _spread(n: int, default: int, m: int) -> list[int]:
    """At most ``m`` of ``range(n)``, evenly spread: the two ends (``m >= 2``) and ``default``."""
    if n <= m:
        return list(range(n))
    if m == 1:
        return [default]
    picked = sorted({int(i) for i in np.linspace(0, n - 1, m).round()})
    if default not in picked:
        inner = [i for i in picked if i not in (0, n - 1)] or picked
        picked.remove(min(inner, key=lambda i: (abs(i - default), i)))
        picked = sorted([*picked, default])
    return picked


def static_grid(sizes: Sequence[int], defaults: Sequence[int], cap: int = STATIC_FRAMES):
    """Which values of each control an explorer's static player precomputes.

    ``sizes[i]`` is how many values control ``i`` can take and ``defaults[i]`` the index of
    its default.  Returns ``(mode, chosen, points)``: ``chosen[i]`` lists the indices of
    control ``i`` that the player offers (evenly spread, ends and default included) and
    ``points`` the index tuples to render.  ``mode`` is ``"product"`` (every combination,
    when that is at most ``min(16, cap)`` images) or ``"star"`` (one control at a time
    around the defaults, ``cap`` images at most, shared out evenly among the controls).
    """
    cap = check_int("cap", cap, minimum=1)
    if len(sizes) != len(defaults):
        raise ValueError(
            f"sizes and defaults must have the same length, got {len(sizes)} and {len(defaults)}"
        )
    for i, (n, d) in enumerate(zip(sizes, defaults, strict=True)):
        check_int(f"sizes[{i}]", n, minimum=1)
        if not 0 <= d < n:
            raise ValueError(f"defaults[{i}] must be in [0, {n}), got {d}")
    chosen = [_spread(n, d, cap) for n, d in zip(sizes, defaults, strict=True)]
    if int(np.prod([len(c) for c in chosen])) <= min(PRODUCT_MAX, cap):
        return "product", chosen, list(itertools.product(*chosen))
    extra, budget = [0] * len(sizes), cap - 1
    while budget > 0:  # round robin: every control gets its share in turn
        grew = False
        for i, c in enumerate(chosen):
            if budget > 0 and extra[i] < len(c) - 1:
                extra[i] += 1
                budget -= 1
                grew = True
        if not grew:
            break
    chosen = [_spread(n, d, e + 1) for n, d, e in zip(sizes, defaults, extra, strict=True)]
    center = tuple(defaults)
    points = [center] + [
        center[:i] + (v,) + center[i + 1 :]
        for i, c in enumerate(chosen)
        for v in c
        if v != defaults[i]
    ]
    return "star", chosen, points


@dataclass(frozen=True)
class _Axis:
    """The values of one control that a static player can show."""

    name: str  # the parameter of fn
    label: str  # the control's description
    kind: str  # "range" (ordered: a slider), "select" (options) or "fixed"
    values: tuple  # candidate values, passed to fn
    labels: tuple  # how each value reads on the page
    default: int  # index of the control's value in values


def _readout(control, value) -> str:
    fmt = getattr(control, "readout_format", None)
    try:
        return format(value, fmt) if fmt else f"{value:g}"
    except (TypeError, ValueError):
        return str(value)


def _axis(name: str, control, override: Sequence | None = None) -> _Axis:
    """The candidate values of ``control`` (or ``override``, a list the author chose)."""
    import ipywidgets as widgets

    label = control.description or name
    slider = isinstance(
        control,
        (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, widgets.SelectionSlider),
    )
    if override is not None:
        values = list(dict.fromkeys(override))
        if control.value not in values:
            values.insert(0, control.value)
        kind = "range" if slider and len(values) > 1 else "select"
        labels = [_readout(control, v) if isinstance(v, float) else str(v) for v in values]
        return _Axis(name, label, kind, tuple(values), tuple(labels), values.index(control.value))
    options = getattr(control, "_options_values", None)
    if options is not None and isinstance(getattr(control, "index", None), int):
        return _Axis(
            name,
            label,
            "range" if slider else "select",
            tuple(options),
            tuple(control._options_labels),
            control.index,
        )
    if isinstance(control, (widgets.Checkbox, widgets.ToggleButton)):
        return _Axis(name, label, "select", (False, True), ("off", "on"), int(control.value))
    value = control.value
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if numeric and all(hasattr(control, a) for a in ("min", "max", "step")) and control.step:
        lo, hi, step = control.min, control.max, control.step
        count = int(np.floor((hi - lo) / step + 1e-9)) + 1
        grid = (
            lo + step * np.arange(count)
            if count <= MAX_CANDIDATES
            else lo + step * np.unique(np.linspace(0, count - 1, MAX_CANDIDATES).round())
        )
        if isinstance(control, widgets.FloatLogSlider):
            grid, value = control.base**grid, control.value
        if isinstance(value, int):
            values = sorted({int(round(v)) for v in grid} | {value})
        else:
            values = sorted({round(float(v), 12) for v in grid} | {float(value)})
            close = [v for v in values if np.isclose(v, value, rtol=1e-9, atol=1e-12)]
            values = [v for v in values if v not in close or v == float(value)]
        return _Axis(
            name,
            label,
            "range",
            tuple(values),
            tuple(_readout(control, v) for v in values),
            values.index(value),
        )
    shown = value if isinstance(value, str) else _readout(control, value)
    return _Axis(name, label, "fixed", (value,), (str(shown),), 0)


# --------------------------------------------------------------------------- the player

_PLAYER_CSS = """
.sqx-explorer{margin:.5em 0 1em}
.sqx-controls{display:flex;flex-wrap:wrap;gap:.3em 1.6em;font-size:.9em;margin:0 0 .5em}
.sqx-controls label{display:inline-flex;align-items:center;gap:.45em}
.sqx-controls output{min-width:3.5em;font-variant-numeric:tabular-nums}
.sqx-controls input[type=text]{width:14em}
.sqx-image{max-width:100%;height:auto;display:block}
.sqx-note{font-size:.8em;opacity:.75;margin:.3em 0 0}
"""

# Swaps the precomputed image when a control moves; in a "star" grid it first puts the
# other controls back to their defaults, which is the only combination it has.
_PLAYER_JS = """
(function () {
  var root = document.getElementById("%(id)s");
  if (!root) { return; }
  var data = JSON.parse(root.querySelector("script.sqx-data").textContent);
  var img = root.querySelector("img.sqx-image");
  var first = img.getAttribute("src");
  var controls = root.querySelectorAll("[data-sqx-control]");
  var state = data.defaults.slice();
  function show(moved) {
    var parts = [];
    for (var j = 0; j < state.length; j++) {
      if (data.star && j !== moved) { state[j] = data.defaults[j]; }
      var el = controls[j], text = data.labels[j][state[j]];
      if (String(el.value) !== String(state[j])) { el.value = String(state[j]); }
      if (el.type === "range") { el.setAttribute("aria-valuetext", text); }  // a menu says it
      var out = root.querySelector('output[data-sqx-readout="' + j + '"]');
      if (out) { out.textContent = text; }
      parts.push(data.names[j] + " " + text);
    }
    var k = data.frames[state.join(",")];
    if (k === undefined) {
      throw new Error("seqtheory explorer: no precomputed view for " + parts.join(", "));
    }
    img.setAttribute("src", data.images[k] || first);
    img.setAttribute("alt", data.alt + (parts.length ? " (" + parts.join(", ") + ")" : ""));
  }
  for (var j = 0; j < controls.length; j++) {
    (function (j) {
      var handler = function () { state[j] = parseInt(controls[j].value, 10); show(j); };
      controls[j].addEventListener("input", handler);
      controls[j].addEventListener("change", handler);
    })(j);
  }
})();
"""

_counter = itertools.count()


def _player_field(axis: _Axis, c: list[int], moving: list[int], i: int) -> str:
    """The HTML control of axis ``i`` (values ``c``): a slider or a menu when it moves, else
    a disabled field showing its one value."""
    esc = html_lib.escape
    current = esc(axis.labels[axis.default])
    if i not in moving:
        why = "fixed on this page" if axis.kind == "fixed" else "one value on this page"
        if axis.kind == "fixed" and isinstance(axis.values[0], str):
            return f'<input type="text" value="{esc(axis.values[0])}" disabled title="{why}">'
        return f'<output title="{why}">{current}</output>'
    j = moving.index(i)
    if axis.kind == "range":
        return (
            f'<input type="range" min="0" max="{len(c) - 1}" step="1" '
            f'value="{c.index(axis.default)}" data-sqx-control="{j}" '
            f'aria-valuetext="{current}"><output data-sqx-readout="{j}">'
            f"{current}</output>"
        )
    opts = "".join(
        f'<option value="{k}"{" selected" if v == axis.default else ""}>'
        f"{esc(axis.labels[v])}</option>"
        for k, v in enumerate(c)
    )
    return f'<select data-sqx-control="{j}">{opts}</select>'


def _player_data(
    alt: str,
    axes: list[_Axis],
    mode: str,
    chosen: list[list[int]],
    frames: dict,
    images: list[bytes],
    default_image: int,
) -> str:
    """The player's inline JSON: control names and labels, which image each combination of
    the moving controls shows, and every image but the default one as a data: URI."""
    moving = [i for i, c in enumerate(chosen) if len(c) > 1]
    payload = {
        "alt": alt,
        "star": mode == "star",
        "names": [axes[i].label for i in moving],
        "labels": [[axes[i].labels[v] for v in chosen[i]] for i in moving],
        "defaults": [chosen[i].index(axes[i].default) for i in moving],
        "frames": {
            ",".join(str(chosen[i].index(p[i])) for i in moving): k for p, k in frames.items()
        },
        "images": [
            ""
            if k == default_image
            else "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            for k, png in enumerate(images)
        ],
    }
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return data.replace("<", "\\u003c")  # nothing in it can close the <script>


def _player_note(mode: str, moving: list[int], views: int) -> str:
    """The line under the player's image: how many views it holds and how they combine."""
    if not moving:
        note = "One precomputed view."
    elif mode == "star":
        note = (
            f"{views} precomputed views: moving one control puts the others back to their defaults."
        )
    else:
        note = f"{views} precomputed views: every combination of the values shown."
    return note + " For every value and any combination, open this chapter in Colab or Jupyter."


def _player_html(
    alt: str,
    axes: list[_Axis],
    mode: str,
    chosen: list[list[int]],
    frames: dict,
    images: list[bytes],
    default_image: int,
) -> str:
    """The self-contained HTML player (controls, image, inline data and script)."""
    moving = [i for i, c in enumerate(chosen) if len(c) > 1]
    data = _player_data(alt, axes, mode, chosen, frames, images, default_image)
    uid = "sqx-" + hashlib.sha1(f"{next(_counter)}{os.getpid()}{data}".encode()).hexdigest()[:10]
    esc = html_lib.escape
    parts = [
        f"<label>{esc(axis.label)} {_player_field(axis, chosen[i], moving, i)}</label>"
        for i, axis in enumerate(axes)
    ]
    n = len(images)
    note = _player_note(mode, moving, len(frames))
    first_src = "data:image/png;base64," + base64.b64encode(images[default_image]).decode()
    default_alt = alt + (
        " (" + ", ".join(f"{axes[i].label} {axes[i].labels[axes[i].default]}" for i in moving) + ")"
        if moving
        else ""
    )
    return (
        f'<div class="sqx-explorer" id="{uid}" data-views="{len(frames)}" '
        f'data-images="{n}">'
        f"<style>{_PLAYER_CSS}</style>"
        f'<form class="sqx-controls" onsubmit="return false">{"".join(parts)}</form>'
        f'<img class="sqx-image" src="{first_src}" alt="{esc(default_alt)}">'
        f'<p class="sqx-note">{esc(note)}</p>'
        f'<script type="application/json" class="sqx-data">{data}</script>'
        f"<script>{_PLAYER_JS % {'id': uid}}</script></div>"
    )


# --------------------------------------------------------------------------- the explorer


class Explorer:
    """An ipywidgets explorer, a static PNG of its default view and a static HTML player.

    In Jupyter or Colab it displays as the live widget (controls above an image that is
    redrawn when a control changes).  When rendered for the static site
    (:func:`static_target`) its output also carries :meth:`static_player`, which the book's
    HTML build shows.  ``.widget`` is the ipywidgets box, ``.controls`` maps parameter
    names to controls, ``.update()`` redraws, ``.static_png`` is the default view.
    """

    def __init__(
        self,
        fn,
        controls: dict,
        alt: str,
        *,
        static_frames: int = STATIC_FRAMES,
        static_values: Mapping[str, Sequence] | None = None,
    ):
        import ipywidgets as widgets

        static_frames = check_int("static_frames", static_frames, minimum=1)
        if static_frames > MAX_STATIC_FRAMES:
            raise ValueError(
                f"static_frames must be <= {MAX_STATIC_FRAMES} to keep pages "
                f"small, got {static_frames}"
            )
        static_values = dict(static_values or {})
        for name, values in static_values.items():
            if name not in controls:
                raise ValueError(
                    f"static_values names {name!r}, which is not a control "
                    f"(controls: {', '.join(controls)})"
                )
            if isinstance(values, str) or not isinstance(values, Sequence) or not values:
                raise ValueError(
                    f"static_values[{name!r}] must be a non-empty list of values, got {values!r}"
                )
        self.fn, self.controls, self.alt = fn, controls, alt
        self.static_frames, self.static_values = static_frames, static_values
        self.static_seconds: float | None = None  # time spent on the player's images
        self._player: str | None = None
        self.static_png: bytes | None = None
        if static_target():  # the build: every view now, the default one drawn last
            self.static_player()
        else:
            self.static_png = self.render()
        self.image = widgets.Image(value=self.static_png, format="png")
        self.widget = widgets.VBox([*controls.values(), self.image])
        for control in controls.values():
            control.observe(lambda change: self.update(), names="value")

    @property
    def params(self) -> dict:
        """The current value of every control, by parameter name."""
        return {name: control.value for name, control in self.controls.items()}

    def render(self, params: Mapping | None = None) -> bytes:
        """Call ``fn`` with ``params`` (default: the controls' values); return PNG bytes."""
        fig = self.fn(**(self.params if params is None else params))
        fig = plt.gcf() if fig is None else fig
        try:
            return _figure_png(fig)
        finally:
            plt.close(fig)

    def update(self) -> None:
        """Redraw the image for the controls' current values."""
        self.image.value = self.render()

    def static_axes(self) -> list[_Axis]:
        """Each control's candidate values for the static player."""
        return [_axis(name, c, self.static_values.get(name)) for name, c in self.controls.items()]

    def static_grid(self) -> tuple[str, list[dict]]:
        """``(mode, params)``: the parameter sets the static player shows, default first."""
        axes = self.static_axes()
        mode, _, points = static_grid(
            [len(a.values) for a in axes], [a.default for a in axes], self.static_frames
        )
        return mode, [{a.name: a.values[i] for a, i in zip(axes, p, strict=True)} for p in points]

    def static_player(self) -> str:
        """The self-contained HTML player (cached): ``fn`` is called once per grid point,
        the default view last, so that an ``fn`` with side effects (loading a snapshot into
        a model) leaves them as the default view does.  Identical images are stored once.
        Built with the explorer when :func:`static_target` holds; otherwise on first call,
        which draws the default view once more."""
        if self._player is not None:
            return self._player
        start = time.perf_counter()
        axes = self.static_axes()
        mode, chosen, points = static_grid(
            [len(a.values) for a in axes], [a.default for a in axes], self.static_frames
        )
        center = tuple(a.default for a in axes)
        pngs = {}
        for point in [p for p in points if p != center] + [center]:
            params = {a.name: a.values[i] for a, i in zip(axes, point, strict=True)}
            try:
                pngs[point] = self.render(params)
            except Exception as exc:
                raise RuntimeError(
                    f"explorer {self.alt!r}: fn failed for the static view {params}: {exc}"
                ) from exc
        self.static_png = pngs[center]
        images, index, frames = [], {}, {}
        for point in points:
            small = _small_png(pngs[point])
            if small not in index:
                index[small] = len(images)
                images.append(small)
            frames[point] = index[small]
        self._player = _player_html(self.alt, axes, mode, chosen, frames, images, frames[center])
        self.static_seconds = time.perf_counter() - start
        return self._player

    def _repr_mimebundle_(self, include=None, exclude=None):
        view = {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        bundle = {WIDGET_MIME: view}
        if static_target():
            bundle["text/html"] = self.static_player()
        bundle["image/png"] = base64.b64encode(self.static_png).decode("ascii")
        bundle["text/plain"] = f"[{self.alt}: run the notebook to use the controls]"
        return bundle


def explorer(
    fn: Callable[..., object],
    alt: str = "interactive figure",
    *,
    static_frames: int = STATIC_FRAMES,
    static_values: Mapping[str, Sequence] | None = None,
    **controls,
) -> Explorer:
    """Build an explorer for ``fn(**params)``, which draws and returns a matplotlib Figure.

    ``controls`` are ipywidgets controls or ``interact`` abbreviations, e.g.
    ``explorer(draw, k=(2, 8), alpha=widgets.FloatLogSlider(value=1, min=-1, max=1))``.
    Each control's initial value gives the default view.  On the static site the explorer
    is a player of at most ``static_frames`` precomputed images (:func:`static_grid`);
    ``static_values={"text": ["abc", "abcabd"]}`` chooses a control's values there (a text
    box otherwise stays at its value).
    """
    import ipywidgets as widgets

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not controls:
        raise ValueError("explorer needs at least one control, e.g. k=(2, 8)")
    built = {}
    for name, spec in controls.items():
        control = (
            spec
            if isinstance(spec, widgets.ValueWidget)
            else widgets.interactive.widget_from_abbrev(spec)
        )
        if control is None:
            raise ValueError(
                f"cannot make a control for {name}={spec!r}; pass an ipywidgets "
                "control or an interact abbreviation such as (0, 10) or ['a', 'b']"
            )
        if not control.description:
            control.description = name
        if hasattr(control, "continuous_update"):
            control.continuous_update = False  # redraw on release: figures take a moment
        built[name] = control
    return Explorer(fn, built, alt, static_frames=static_frames, static_values=static_values)


def subsample(items: Sequence, max_frames: int) -> list:
    """At most ``max_frames`` items, evenly spaced, always keeping the first and the last."""
    max_frames = check_int("max_frames", max_frames, minimum=1)
    items = list(items)
    if len(items) <= max_frames:
        return items
    idx = np.unique(np.linspace(0, len(items) - 1, max_frames).round().astype(int))
    return [items[i] for i in idx]


def animate(
    frames: Sequence,
    draw: Callable[[object, object], None],
    *,
    fig=None,
    figsize: tuple = (6.0, 3.6),
    max_frames: int = 60,
    interval: int = 250,
    dpi: int = 80,
    alt: str = "animation",
):
    """A ``to_jshtml`` animation (IPython HTML) of ``draw(fig, frame)`` over ``frames``.

    ``draw`` clears and redraws the figure for one frame.  At most ``max_frames`` (<= 60)
    evenly spaced frames are kept and images are rendered at ``dpi`` to keep pages small.
    The player is self-contained (see :func:`offline_player`); ``alt`` describes it.
    A smoke run (``SEQTHEORY_SMOKE``, which tests that cells run, not what they show) draws
    the first and last frames only.
    """
    from IPython.display import HTML
    from matplotlib import animation

    max_frames = check_int("max_frames", max_frames, minimum=1)
    if max_frames > 60:
        raise ValueError(f"max_frames must be <= 60 to keep pages small, got {max_frames}")
    frames = subsample(frames, min(max_frames, 2) if smoke_steps() else max_frames)
    if not frames:
        raise ValueError("animate needs at least one frame")
    own = fig is None
    fig = plt.figure(figsize=figsize, dpi=dpi) if own else fig
    fig.set_dpi(dpi)

    def update(i):
        fig.clf()
        draw(fig, frames[i])
        return []

    anim = animation.FuncAnimation(fig, update, frames=len(frames), interval=interval, blit=False)
    html = anim.to_jshtml(default_mode="once")
    plt.close(fig)
    return HTML(offline_player(html, alt))


# Text labels for the player's buttons, which matplotlib draws with Font Awesome 4 icons.
_BUTTON_LABELS = {
    "fast-backward": "|&#9664;&#9664;",
    "step-backward": "|&#9664;",
    "play fa-flip-horizontal": "&#9664;",
    "pause": "&#10074;&#10074;",
    "play": "&#9654;",
    "step-forward": "&#9654;|",
    "fast-forward": "&#9654;&#9654;|",
    "minus": "&minus;",
    "plus": "+",
}


def offline_player(jshtml: str, alt: str = "animation") -> str:
    """Make matplotlib's ``to_jshtml`` player work offline and describe it for screen readers.

    matplotlib's player loads Font Awesome from a CDN for its button icons, which fails
    without a network (the buttons go blank); this drops that stylesheet, draws the buttons
    with plain text symbols, and gives the frame image ``alt`` text.
    """
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(f"alt must be a non-empty description of the animation, got {alt!r}")
    out = re.sub(r'<link rel="stylesheet"\s+href="[^"]*font-awesome[^"]*">', "", jshtml)
    out = re.sub(
        r'<i class="fa fa-([a-z -]+)"></i>',
        lambda m: _BUTTON_LABELS.get(m.group(1), m.group(1)),
        out,
    )
    out = out.replace(
        '<input id="_anim_slider', '<input aria-label="animation frame" id="_anim_slider', 1
    )
    return out.replace('<img id="_anim_img', f'<img alt="{html_lib.escape(alt)}" id="_anim_img', 1)


def animate_snapshots(
    model, history, draw: Callable, *, steps: Sequence[int] | None = None, **kwargs
):
    """Animate ``draw(fig, model, step)`` with ``model`` loaded from each weight snapshot.

    ``history.snapshots`` maps step -> state_dict (see :func:`seqtheory.core.training.train`).
    The model's own weights are restored afterwards.
    """
    from ..core.training import copy_state

    available = sorted(history.snapshots)
    if not available:
        raise ValueError("history has no snapshots; pass snapshot_steps=... to train()")
    steps = available if steps is None else list(steps)
    missing = [s for s in steps if s not in history.snapshots]
    if missing:
        raise KeyError(f"no snapshots at steps {missing}; available: {available}")
    original = copy_state(model)

    def draw_step(fig, step):
        model.load_state_dict(history.snapshots[step])
        draw(fig, model, step)

    try:
        return animate(steps, draw_step, **kwargs)
    finally:
        model.load_state_dict(original)
