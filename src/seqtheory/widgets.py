"""Interactive explorers and animations that also work on the static (published) page.

* :func:`explorer` turns a pure function ``fn(**params) -> Figure`` into an ipywidgets
  explorer.  Its output also carries a PNG of the default view, so the published HTML (which
  has no kernel) shows a static figure where a live notebook shows the controls.
* :func:`animate` / :func:`animate_snapshots` turn a sequence of frames (e.g. weight
  snapshots taken during training) into a ``to_jshtml`` animation that plays without a kernel.
"""
from __future__ import annotations

import base64
import html as html_lib
import io
import re
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np

from .utils import check_int

__all__ = ["Explorer", "explorer", "animate", "animate_snapshots", "subsample", "offline_player"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _figure_png(fig, dpi: int = 80) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


class Explorer:
    """An ipywidgets explorer plus a static PNG of its default view.

    In Jupyter or Colab it displays as the live widget (controls above an image that is
    redrawn when a control changes); a renderer without widget support, such as the book's
    HTML build, shows the PNG instead.  ``.widget`` is the ipywidgets box, ``.controls``
    maps parameter names to controls, ``.update()`` redraws, ``.static_png`` is the fallback.
    """

    def __init__(self, fn, controls: dict, alt: str):
        import ipywidgets as widgets

        self.fn, self.controls, self.alt = fn, controls, alt
        self.static_png = self.render()
        self.image = widgets.Image(value=self.static_png, format="png")
        self.widget = widgets.VBox([*controls.values(), self.image])
        for control in controls.values():
            control.observe(lambda change: self.update(), names="value")

    @property
    def params(self) -> dict:
        """The current value of every control, by parameter name."""
        return {name: control.value for name, control in self.controls.items()}

    def render(self) -> bytes:
        """Call ``fn`` with the current parameters; return the figure as PNG bytes."""
        fig = self.fn(**self.params)
        fig = plt.gcf() if fig is None else fig
        try:
            return _figure_png(fig)
        finally:
            plt.close(fig)

    def update(self) -> None:
        """Redraw the image for the controls' current values."""
        self.image.value = self.render()

    def _repr_mimebundle_(self, include=None, exclude=None):
        view = {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        return {"text/plain": f"[{self.alt}: run the notebook to use the controls]",
                "image/png": base64.b64encode(self.static_png).decode("ascii"),
                WIDGET_MIME: view}


def explorer(fn: Callable[..., object], alt: str = "interactive figure", **controls) -> Explorer:
    """Build an explorer for ``fn(**params)``, which draws and returns a matplotlib Figure.

    ``controls`` are ipywidgets controls or ``interact`` abbreviations, e.g.
    ``explorer(draw, k=(2, 8), alpha=widgets.FloatLogSlider(value=1, min=-1, max=1))``.
    Each control's initial value gives the default view, also rendered as a static PNG.
    """
    import ipywidgets as widgets

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not controls:
        raise ValueError("explorer needs at least one control, e.g. k=(2, 8)")
    built = {}
    for name, spec in controls.items():
        control = spec if isinstance(spec, widgets.ValueWidget) else \
            widgets.interactive.widget_from_abbrev(spec)
        if control is None:
            raise ValueError(f"cannot make a control for {name}={spec!r}; pass an ipywidgets "
                             "control or an interact abbreviation such as (0, 10) or ['a', 'b']")
        if not control.description:
            control.description = name
        if hasattr(control, "continuous_update"):
            control.continuous_update = False  # redraw on release: figures take a moment
        built[name] = control
    return Explorer(fn, built, alt)


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
    """
    from IPython.display import HTML
    from matplotlib import animation

    max_frames = check_int("max_frames", max_frames, minimum=1)
    if max_frames > 60:
        raise ValueError(f"max_frames must be <= 60 to keep pages small, got {max_frames}")
    frames = subsample(frames, max_frames)
    if not frames:
        raise ValueError("animate needs at least one frame")
    own = fig is None
    fig = plt.figure(figsize=figsize, dpi=dpi) if own else fig
    fig.set_dpi(dpi)

    def update(i):
        fig.clf()
        draw(fig, frames[i])
        return []

    anim = animation.FuncAnimation(fig, update, frames=len(frames), interval=interval,
                                   blit=False)
    html = anim.to_jshtml(default_mode="once")
    plt.close(fig)
    return HTML(offline_player(html, alt))


# Text labels for the player's buttons, which matplotlib draws with Font Awesome 4 icons.
_BUTTON_LABELS = {"fast-backward": "|&#9664;&#9664;", "step-backward": "|&#9664;",
                  "play fa-flip-horizontal": "&#9664;", "pause": "&#10074;&#10074;",
                  "play": "&#9654;", "step-forward": "&#9654;|",
                  "fast-forward": "&#9654;&#9654;|", "minus": "&minus;", "plus": "+"}


def offline_player(jshtml: str, alt: str = "animation") -> str:
    """Make matplotlib's ``to_jshtml`` player work offline and describe it for screen readers.

    matplotlib's player loads Font Awesome from a CDN for its button icons, which fails
    without a network (the buttons go blank); this drops that stylesheet, draws the buttons
    with plain text symbols, and gives the frame image ``alt`` text.
    """
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError(f"alt must be a non-empty description of the animation, got {alt!r}")
    out = re.sub(r'<link rel="stylesheet"\s+href="[^"]*font-awesome[^"]*">', "", jshtml)
    out = re.sub(r'<i class="fa fa-([a-z -]+)"></i>',
                 lambda m: _BUTTON_LABELS.get(m.group(1), m.group(1)), out)
    return out.replace('<img id="_anim_img', f'<img alt="{html_lib.escape(alt)}" id="_anim_img', 1)


def animate_snapshots(model, history, draw: Callable, *, steps: Sequence[int] | None = None,
                      **kwargs):
    """Animate ``draw(fig, model, step)`` with ``model`` loaded from each weight snapshot.

    ``history.snapshots`` maps step -> state_dict (see :func:`seqtheory.training.train`).
    The model's own weights are restored afterwards.
    """
    from .training import copy_state

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
