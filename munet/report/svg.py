"""Small inline-SVG charts for the HTML report: scatter/line plots and horizontal bars.

Charts are strings of SVG markup styled by CSS classes of the page (so colours live in one
place, the report's stylesheet), with ``<title>`` tooltips. No JavaScript is needed to draw
them, and nothing outside the page is referenced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape


def fmt_number(value: float | None, digits: int = 3) -> str:
    """Compact number: ``12.3k``, ``4.5M``, ``0.812``; ``-`` for None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{unit}"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


# Notes (levels off the axis) sit on lines of their own between the title and the plot area,
# never over it: a learning curve climbs to the top right, where a corner note would hide it.
NOTE_LINE = 13  # px per note line (10 px text: 9 px above its baseline, 2 below, leading).
NOTE_GAP = 5  # px between the last note line and the plot area (room for a marker's radius).
NOTE_CHAR = 6.2  # px, a wide estimate of a 10 px character, to break lines that fit.


@dataclass
class Plot:
    """An x/y plot: add layers of points and lines (and notes), then :meth:`render`.

    Layers are drawn at :meth:`render`, so a note added after them still moves the plot area
    down below the notes' lines.

    Args:
        x_range, y_range: data domains (x_range widened when empty).
        width, height: size in px.
        title: text above the plot area.
        x_label, y_label: axis labels.
    """

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: int = 270
    height: int = 165
    title: str = ""
    x_label: str = ""
    y_label: str = ""
    layers: list[Callable[[], str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    margin: tuple[int, int, int, int] = (27, 8, 30, 40)  # top, right, bottom, left

    def __post_init__(self) -> None:
        low, high = self.x_range
        if high <= low:
            self.x_range = (low - 0.5, low + 0.5)
        low, high = self.y_range
        if high <= low:
            self.y_range = (low - 0.5, high + 0.5)

    def note_lines(self) -> list[str]:
        """The notes, joined by ", " into lines that fit the plot's width."""
        _, right, _, left = self.margin
        room = max(int((self.width - right - 4) / NOTE_CHAR), 1)
        lines: list[str] = []
        for text in self.notes:
            if lines and len(lines[-1]) + 2 + len(text) <= room:
                lines[-1] += ", " + text
            else:
                lines.append(text)
        return lines

    @property
    def area_top(self) -> float:
        """The y of the plot area's top edge: below the title and the notes' lines."""
        lines = len(self.note_lines())
        return self.margin[0] + (NOTE_LINE * lines + NOTE_GAP if lines else 0)

    def x(self, value: float) -> float:
        top, right, bottom, left = self.margin
        low, high = self.x_range
        return left + (value - low) / (high - low) * (self.width - left - right)

    def y(self, value: float) -> float:
        bottom = self.margin[2]
        low, high = self.y_range
        span = self.height - self.area_top - bottom
        return self.height - bottom - (value - low) / (high - low) * span

    def points(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        css: str,
        titles: Sequence[str] | None = None,
        radius: float = 3.2,
        shape: str = "circle",
    ) -> None:
        """Markers at (x, y); ``shape`` is ``circle`` or ``diamond``."""
        xs, ys = list(xs), list(ys)
        if len(xs) != len(ys):
            raise ValueError(f"points: {len(xs)} x values for {len(ys)} y values")
        titles = list(titles) if titles else None

        def draw() -> str:
            out = []
            for i, (xv, yv) in enumerate(zip(xs, ys, strict=True)):
                cx, cy = self.x(xv), self.y(yv)
                tip = f"<title>{escape(titles[i])}</title>" if titles else ""
                if shape == "diamond":
                    r = radius * 1.35
                    out.append(
                        f'<path class="{css}" d="M{cx:.1f} {cy - r:.1f}L{cx + r:.1f} {cy:.1f}'
                        f'L{cx:.1f} {cy + r:.1f}L{cx - r:.1f} {cy:.1f}Z">{tip}</path>'
                    )
                else:
                    out.append(
                        f'<circle class="{css}" cx="{cx:.1f}" cy="{cy:.1f}" r="{radius}">'
                        f"{tip}</circle>"
                    )
            return "".join(out)

        self.layers.append(draw)

    def line(
        self,
        xs: Sequence[float],
        ys: Sequence[float],
        css: str,
        step: bool = False,
        title: str = "",
    ) -> None:
        """A polyline through the points (``step``: horizontal then vertical segments;
        ``title``: its tooltip)."""
        if not xs:
            return
        xs, ys = list(xs), list(ys)
        if len(xs) != len(ys):
            raise ValueError(f"line: {len(xs)} x values for {len(ys)} y values")

        def draw() -> str:
            coords = []
            for i, (xv, yv) in enumerate(zip(xs, ys, strict=True)):
                if step and i:
                    coords.append(f"{self.x(xv):.1f},{self.y(ys[i - 1]):.1f}")
                coords.append(f"{self.x(xv):.1f},{self.y(yv):.1f}")
            tip = f"<title>{escape(title)}</title>" if title else ""
            if tip:
                return f'<polyline class="{css}" points="{" ".join(coords)}">{tip}</polyline>'
            return f'<polyline class="{css}" points="{" ".join(coords)}"/>'

        self.layers.append(draw)

    def note(self, text: str) -> None:
        """A short text on a line of its own above the plot area, right-aligned (e.g. a
        level off the axis: ``chance 0.1 (below)``); notes share lines while they fit."""
        self.notes.append(text)

    def render(self, x_ticks: Sequence[float] | None = None) -> str:
        """The SVG element."""
        _, right, bottom, left = self.margin
        top = self.area_top
        w, h = self.width, self.height
        parts = [
            f'<svg class="plot" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'role="img" aria-label="{escape(self.title)}">'
        ]
        if self.title:
            parts.append(f'<text class="plot-title" x="{left}" y="14">{escape(self.title)}</text>')
        for index, text in enumerate(self.note_lines()):
            parts.append(
                f'<text class="tick plot-note" x="{w - right}" '
                f'y="{self.margin[0] + 9 + NOTE_LINE * index}" text-anchor="end">'
                f"{escape(text)}</text>"
            )
        for tick in nice_ticks(*self.y_range, count=4):
            if not self.y_range[0] - 1e-9 <= tick <= self.y_range[1] + 1e-9:
                continue
            ty = self.y(tick)
            parts.append(
                f'<line class="grid" x1="{left}" x2="{w - right}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
                f'<text class="tick" x="{left - 4}" y="{ty + 3:.1f}" text-anchor="end">'
                f"{fmt_number(tick)}</text>"
            )
        if x_ticks is None:
            x_ticks = nice_ticks(*self.x_range, count=5)
        for tick in x_ticks:
            if not self.x_range[0] - 1e-9 <= tick <= self.x_range[1] + 1e-9:
                continue
            tx = self.x(tick)
            parts.append(
                f'<line class="axis" x1="{tx:.1f}" x2="{tx:.1f}" y1="{h - bottom}" '
                f'y2="{h - bottom + 3}"/><text class="tick" x="{tx:.1f}" y="{h - bottom + 13}" '
                f'text-anchor="middle">{fmt_number(tick)}</text>'
            )
        parts.append(
            f'<line class="axis" x1="{left}" x2="{w - right}" y1="{h - bottom}" y2="{h - bottom}"/>'
        )
        if self.x_label:
            parts.append(
                f'<text class="label" x="{(left + w - right) / 2:.0f}" y="{h - 3}" '
                f'text-anchor="middle">{escape(self.x_label)}</text>'
            )
        if self.y_label:
            cy = (top + h - bottom) / 2
            parts.append(
                f'<text class="label" transform="translate(10 {cy:.0f}) rotate(-90)" '
                f'text-anchor="middle">{escape(self.y_label)}</text>'
            )
        parts.extend(draw() for draw in self.layers)
        parts.append("</svg>")
        return "".join(parts)


def hbar_chart(
    labels: Sequence[str],
    stacks: Sequence[tuple[str, Sequence[float], str]],
    width: int = 640,
    bar_height: int = 16,
    label_width: int = 170,
    value_format=fmt_number,
) -> str:
    """Horizontal stacked bars, one row per label.

    Args:
        labels: row labels.
        stacks: (legend name, one value per row, css class) per stacked part.
        width: total width in px.
        bar_height: height of a row's bar.
        label_width: room for the labels on the left.
        value_format: formats the total printed after each bar.

    Returns:
        The SVG element.
    """
    gap = 5
    totals = [sum(values[i] for _, values, _ in stacks) for i in range(len(labels))]
    top = max(totals, default=0.0) or 1.0
    right_room = 56
    scale = (width - label_width - right_room) / top
    height = len(labels) * (bar_height + gap) + gap
    parts = [
        f'<svg class="bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img">'
    ]
    for i, label in enumerate(labels):
        y = gap + i * (bar_height + gap)
        parts.append(
            f'<text class="bar-label" x="{label_width - 6}" y="{y + bar_height - 4}" '
            f'text-anchor="end">{escape(label)}</text>'
        )
        x = float(label_width)
        for name, values, css in stacks:
            length = values[i] * scale
            if length <= 0:
                continue
            tip = f"{label}: {name} {value_format(values[i])}"
            parts.append(
                f'<rect class="{css}" x="{x:.1f}" y="{y}" width="{length:.1f}" '
                f'height="{bar_height}"><title>{escape(tip)}</title></rect>'
            )
            x += length
        parts.append(
            f'<text class="bar-value" x="{x + 4:.1f}" y="{y + bar_height - 4}">'
            f"{escape(value_format(totals[i]))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
