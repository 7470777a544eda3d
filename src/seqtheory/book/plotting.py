"""One plotting style for the whole book, and the figures every chapter reuses."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..core.runtime import to_numpy

__all__ = [
    "draw_transformer",
    "key_figure",
    "log_ticks",
    "markdown_table",
    "set_style",
    "palette",
    "smooth",
    "plot_history",
    "plot_attention",
    "reference_lines",
]

PALETTE_NAME = "colorblind"  # seaborn's colour-blind-safe qualitative palette
SEQUENTIAL_CMAP = "viridis"  # perceptually uniform and colour-blind safe, for heatmaps


def set_style(context: str = "notebook", dpi: int = 100) -> None:
    """Apply the book's style: seaborn whitegrid, colour-blind palette, readable sizes."""
    import seaborn as sns  # with scipy about 1.5 s to import: only once a page draws

    sns.set_theme(context=context, style="whitegrid", palette=PALETTE_NAME)
    plt.rcParams.update(
        {
            "figure.dpi": dpi,
            "savefig.dpi": dpi,
            "figure.figsize": (6.4, 3.8),
            "axes.titleweight": "bold",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "legend.frameon": False,
            "image.cmap": SEQUENTIAL_CMAP,
        }
    )
    if os.environ.get("SEQTHEORY_SVG_FIGURES", "").strip() == "1":
        _svg_too()
    _png_records_text_size()


def _svg_too() -> None:
    """In a kernel, each figure's output also carries an SVG copy: the book's build sets
    ``SEQTHEORY_SVG_FIGURES=1`` so the lecture decks (booktools.slides) show sharp figures,
    while the pages keep the PNG (the build's mime priority)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("png", "svg")


MIN_TEXT_KEY = "seqtheory:min-text-px"


def png_with_text_size(fig) -> bytes | None:
    """``fig`` as the PNG a notebook shows, carrying the size of its smallest drawn text.

    The size (pixels at the PNG's own scale: points × dpi / 72, over every non-empty text
    the Agg renderer draws) goes into a PNG ``tEXt`` chunk named ``MIN_TEXT_KEY``; the book's
    browser check (booktools.check_site) scales it by how wide the page shows the image."""
    from IPython.core.pylabtools import print_figure
    from matplotlib.backends.backend_agg import RendererAgg

    sizes: list[float] = []
    draw_text = RendererAgg.draw_text

    def recording(self, gc, x, y, s, prop, *args, **kwargs):
        if str(s).strip():
            sizes.append(prop.get_size_in_points() * self.dpi / 72)
        return draw_text(self, gc, x, y, s, prop, *args, **kwargs)

    RendererAgg.draw_text = recording
    try:
        data = print_figure(fig, "png")
    finally:
        RendererAgg.draw_text = draw_text
    if not data or not sizes:
        return data
    return png_add_text(data, MIN_TEXT_KEY, f"{min(sizes):.2f}")


def png_add_text(data: bytes, key: str, value: str) -> bytes:
    """``data`` (a PNG) with a ``tEXt`` chunk ``key``/``value`` after its header chunk."""
    import struct
    import zlib

    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data: not a PNG file")
    body = key.encode("latin-1") + b"\0" + value.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + body) & 0xFFFFFFFF)
    end = 8 + 12 + struct.unpack(">I", data[8:12])[0]  # signature, then IHDR
    return data[:end] + chunk + data[end:]


def _png_records_text_size() -> None:
    """In a kernel, figures render through ``png_with_text_size``."""
    try:
        import matplotlib_inline.backend_inline  # noqa: F401  (sets up its formatters first)
        from IPython import get_ipython
        from matplotlib.figure import Figure
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(Figure, png_with_text_size)


def palette(n: int = 10) -> list:
    """The book's ``n`` qualitative colours (colour-blind safe)."""
    import seaborn as sns  # (see set_style)

    return sns.color_palette(PALETTE_NAME, n)


def smooth(values: Sequence[float], window: int = 25) -> np.ndarray:
    """Trailing moving average (the first points average over what exists so far)."""
    v = np.asarray(values, dtype=float)
    if window <= 1 or v.size == 0:
        return v
    c = np.cumsum(np.insert(v, 0, 0.0))
    idx = np.arange(1, v.size + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def _to_numpy(x) -> np.ndarray:
    """A tensor (any device or dtype) or array-like as a float NumPy array."""
    return np.asarray(to_numpy(x.float() if isinstance(x, torch.Tensor) else x), dtype=float)


def reference_lines(ax, refs: Mapping[str, float], colors: Sequence | None = None) -> None:
    """Dashed horizontal lines at named values (e.g. the loss of a reference predictor)."""
    colors = list(colors) if colors is not None else ["0.35"] * len(refs)
    if len(colors) != len(refs):
        raise ValueError(f"got {len(colors)} colors for {len(refs)} reference lines")
    for (name, y), c in zip(refs.items(), colors, strict=True):
        ax.axhline(y, ls="--", lw=1.2, color=c, zorder=1)
        ax.annotate(
            f"{name} ({y:.3f})",
            xy=(1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(-4, 3),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize="small",
            color=c,
        )


def plot_history(
    hist,
    metrics: Sequence[str] | None = None,
    *,
    ax=None,
    train_loss: bool = True,
    window: int = 25,
    refs: Mapping[str, float] | None = None,
    ylabel: str = "loss (nats)",
    logx: bool = False,
    title: str | None = None,
):
    """Plot the (smoothed) training loss and evaluated ``metrics`` of a History; return ax."""
    if ax is None:
        _, ax = plt.subplots()
    colors = palette()
    if train_loss and hist.loss:
        ax.plot(hist.steps, hist.loss, color=colors[0], alpha=0.2, lw=0.8)
        ax.plot(
            hist.steps,
            smooth(hist.loss, window),
            color=colors[0],
            lw=1.8,
            label="training loss" + (f" (moving avg. {window})" if window > 1 else ""),
        )
    for i, name in enumerate(metrics if metrics is not None else hist.metric_names):
        steps, values = hist.metric(name)
        ax.plot(
            steps, values, marker="o", ms=3, lw=1.5, color=colors[(i + 1) % len(colors)], label=name
        )
    if refs:
        reference_lines(ax, refs)
    if logx:
        ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper right" if not refs else "center right")
    return ax


def plot_attention(
    pattern,
    *,
    ax=None,
    tokens: Sequence | None = None,
    title: str | None = None,
    colorbar: bool = True,
    vmax: float | None = 1.0,
):
    """Heatmap of one attention pattern (T, T): rows are queries, columns are keys."""
    a = _to_numpy(pattern)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"pattern must be a square (T, T) array, got shape {a.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    im = ax.imshow(a, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=vmax, interpolation="nearest")
    ax.grid(False)
    T = a.shape[0]
    if tokens is not None:
        if len(tokens) != T:
            raise ValueError(f"got {len(tokens)} tokens for a pattern of length {T}")
        labels = [str(t) for t in tokens]
        step = max(1, T // 24)
        ticks = np.arange(0, T, step)
        ax.set_xticks(ticks, [labels[i] for i in ticks], fontsize="x-small")
        ax.set_yticks(ticks, [labels[i] for i in ticks], fontsize="x-small")
    what = "token" if tokens is not None else "position"
    ax.set_xlabel(f"key {what} (attended to)")
    ax.set_ylabel(f"query {what}")
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    return ax


def markdown_table(header: Sequence[str], rows: Sequence[Sequence], digits: int = 3):
    """A computed table as Markdown (rendered as an HTML table in the notebook and book);
    floats are rounded to ``digits`` decimals."""
    from IPython.display import Markdown

    def cell(c) -> str:  # a "|" inside a cell would end it: escape it
        text = f"{c:.{digits}f}" if isinstance(c, (float, np.floating)) else str(c)
        return text.replace("|", "\\|")

    header = [cell(h) for h in header]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"every row needs {len(header)} cells, got {len(row)}: {row!r}")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return Markdown("\n".join(lines))


def _diagram_box(ax, x, y, w, h, text, color):
    """A rounded box of width ``w`` and height ``h`` centred on ``(x, y)``, labelled ``text``."""
    from matplotlib.patches import FancyBboxPatch

    style = "round,pad=0.02,rounding_size=0.15"
    corner = (x - w / 2, y - h / 2)
    ax.add_patch(FancyBboxPatch(corner, w, h, boxstyle=style, fc=color, ec="0.25", alpha=0.25))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _diagram_arrow(ax, a, b, **kw):
    """An arrow from point ``a`` to point ``b``."""
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=12, color="0.25", lw=1.2, **kw)
    )


def draw_transformer(n_layers: int = 1, mlp: bool = False, ax=None):
    """A block diagram of the book's decoder-only transformer: token and position embeddings
    write the residual stream; each layer's attention (and MLP, when ``mlp``) reads it and
    adds its output back; the unembedding turns the last vector into next-token
    probabilities. Returns the axes."""
    n_layers = int(n_layers)
    if n_layers < 1 or n_layers > 4:
        raise ValueError(f"n_layers must be between 1 and 4, got {n_layers}")
    if not isinstance(mlp, bool):
        raise TypeError(f"mlp must be a bool, got {type(mlp).__name__}")
    blocks = [("attention\n(heads side by side)", "C0")]
    if mlp:
        blocks.append(("MLP\n(each position)", "C1"))
    rows = n_layers * len(blocks)
    height = 3.0 + 1.1 * rows
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, min(0.55 * height + 0.6, 7.5)))
    ax.set(xlim=(0, 10), ylim=(-0.4, height), aspect="auto")
    ax.axis("off")
    x0 = 3.2  # the residual stream's column
    _diagram_box(ax, x0, 0.3, 4.6, 0.6, "tokens $x_1,\\dots,x_t$", "0.85")
    _diagram_box(ax, x0, 1.3, 4.6, 0.6, "token embedding + position", "C2")
    _diagram_arrow(ax, (x0, 0.6), (x0, 1.0))
    y = 2.0
    ax.text(
        x0 - 2.6,
        y + 0.55 * rows,
        "residual stream",
        rotation=90,
        ha="center",
        va="center",
        fontsize=10,
        color="0.3",
    )
    for layer in range(n_layers):
        for text, color in blocks:
            y_in, y_add = y + 0.1, y + 0.85
            _diagram_box(ax, 7.3, y + 0.45, 3.6, 0.75, f"layer {layer + 1}: {text}", color)
            _diagram_arrow(ax, (x0, y_in), (5.5, y + 0.45))  # read the stream
            _diagram_arrow(ax, (5.5, y + 0.45), (x0 + 0.12, y_add), connectionstyle="arc3,rad=0.0")
            ax.text(x0, y_add, "$\\oplus$", ha="center", va="center", fontsize=14)
            y += 1.1
    ax.plot([x0, x0], [1.6, y], color="0.25", lw=1.2, zorder=0)
    _diagram_box(ax, x0, y + 0.35, 4.6, 0.6, "unembedding, softmax", "C4")
    _diagram_arrow(ax, (x0, y), (x0, y + 0.05))
    ax.text(x0, y + 1.0, "$\\hat p(x_{t+1} \\mid x_{1:t})$", ha="center", va="center", fontsize=11)
    _diagram_arrow(ax, (x0, y + 0.65), (x0, y + 0.8))
    return ax


def key_figure(fig, name: str = "key_figure"):
    """Also show ``fig`` in the chapter's summary box at the top of the page
    (``{glue:figure} key_figure`` there); returns ``fig``."""
    from matplotlib.figure import Figure

    from .notebook import glue

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    glue(name, fig, display=False)
    return fig


def log_ticks(ax, ticks: Sequence[float], axis: str = "x", fmt: str = "{:,.0f}") -> None:
    """Log scale on ``axis`` with labelled major ticks exactly at ``ticks`` and unlabelled
    minor ticks (the default labels of a log axis overlap on short ranges)."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    ticks = [float(t) for t in ticks]
    target.set_major_locator(FixedLocator(ticks))
    target.set_ticklabels([fmt.format(t) for t in ticks])
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
