"""The report's per-class section: per task agent, its best path's confusion matrix on the test
split as a heat map, and its per-class accuracy (worst classes first).

The numbers come in `SystemView.class_metrics` (agent id -> (path full id, `ClassMetrics`)),
evaluated by whoever
asked for the report (`munet report` evaluates each best path once; the report itself reads no
tensors). Without them the section is left out.
"""

from __future__ import annotations

from html import escape

from munet.report.collect import SystemView
from munet.report.svg import fmt_number

SECTION_ID = "classes"
# Class names and counts are written in the heat map up to these many classes.
MAX_LABELLED = 20
MAX_COUNTS = 12
MAX_LISTED = 12


def heat_map(metrics, size: int = 300) -> str:
    """The confusion matrix as an SVG heat map: rows true classes, columns predicted; each
    cell's shade is its share of the row (blue on the diagonal, red off it), with a tooltip.

    Args:
        metrics: a `munet.models.class_metrics.ClassMetrics`.
        size: the matrix's side in px (cells are at least 3 px).
    """
    count = metrics.num_classes
    cell = max(3.0, min(28.0, size / count))
    labelled = count <= MAX_LABELLED
    names = [metrics.name(i) for i in range(count)]
    room = 8 + 6.2 * max(len(n) for n in names) if labelled else 14
    room = min(room, 110)
    side = cell * count
    width = int(room + side + 6)
    height = int(room + side + 6)
    parts = [
        f'<svg class="heat" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="confusion matrix">'
    ]
    support = metrics.support
    for true, row in enumerate(metrics.confusion):
        for predicted, value in enumerate(row):
            share = value / support[true] if support[true] else 0.0
            css = "hit" if true == predicted else "miss"
            x, y = room + predicted * cell, room + true * cell
            tip = (
                f"true {names[true]} -> predicted {names[predicted]}: {value} of "
                f"{support[true]} ({share:.1%})"
            )
            opacity = 0.04 + 0.96 * share if value else 0.0
            parts.append(
                f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{cell:.1f}" '
                f'height="{cell:.1f}" fill-opacity="{opacity:.3f}"><title>{escape(tip)}</title>'
                "</rect>"
            )
            if count <= MAX_COUNTS and value:
                shade = "light" if share > 0.55 else "dark"
                parts.append(
                    f'<text class="heat-count {shade}" x="{x + cell / 2:.1f}" '
                    f'y="{y + cell / 2 + 3.5:.1f}" text-anchor="middle">{value}</text>'
                )
    parts.append(
        f'<rect class="heat-frame" x="{room:.1f}" y="{room:.1f}" width="{side:.1f}" '
        f'height="{side:.1f}"/>'
    )
    if labelled:
        for index, name in enumerate(names):
            centre = room + (index + 0.5) * cell
            parts.append(
                f'<text class="tick" x="{room - 4:.1f}" y="{centre + 3:.1f}" '
                f'text-anchor="end">{escape(name)}</text>'
                f'<text class="tick" transform="translate({centre + 3:.1f} {room - 4:.1f}) '
                f'rotate(-90)">{escape(name)}</text>'
            )
    else:
        parts.append(
            f'<text class="label" x="{room + side / 2:.1f}" y="10" text-anchor="middle">'
            f"predicted ({count} classes)</text>"
            f'<text class="label" transform="translate(10 {room + side / 2:.1f}) rotate(-90)" '
            'text-anchor="middle">true</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _class_list(metrics) -> str:
    """Per-class accuracy, worst first (at most 12 rows; the rest summed up)."""
    order = sorted(
        range(metrics.num_classes),
        key=lambda i: (metrics.per_class_accuracy[i] is None, metrics.per_class_accuracy[i] or 0),
    )
    rows = []
    for i in order[:MAX_LISTED]:
        accuracy = metrics.per_class_accuracy[i]
        shown = "-" if accuracy is None else f"{accuracy:.4f}"
        rows.append(
            f"<tr><td>{escape(metrics.name(i))}</td>"
            f'<td class="num">{metrics.support[i]}</td><td class="num">{shown}</td></tr>'
        )
    more = len(order) - MAX_LISTED
    tail = ""
    if more > 0:
        tail = f'<p class="note">+ {more} more classes (munet test --format json)</p>'
    return (
        '<table class="per-class"><thead><tr><th>class (worst first)</th><th>examples</th>'
        f"<th>accuracy</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{tail}"
    )


def per_class(view: SystemView, labels: dict[str, str]) -> str:
    """The section (empty string when the report has no class metrics)."""
    cards = []
    for agent in view.tasks:
        entry = view.class_metrics.get(agent.agent_id)
        if entry is None:
            continue
        full_id, metrics = entry
        top5 = metrics.top5_accuracy
        facts = (
            f"{full_id} · {metrics.num_examples} test examples · accuracy "
            f"{metrics.accuracy:.4f}" + (f" · top-5 {top5:.4f}" if top5 is not None else "")
        )
        cards.append(
            f'<div class="card class-card" id="classes-{_slug(agent.agent_id)}">'
            f'<h3 title="{escape(agent.agent_id)}">{escape(labels[agent.agent_id])}</h3>'
            f'<p class="facts">{escape(facts)}</p><div class="plots">{heat_map(metrics)}'
            f"{_class_list(metrics)}</div></div>"
        )
    if not cards:
        return ""
    legend = (
        '<p class="legend"><span class="sw hit"></span>correct (share of the true class) '
        '<span class="sw miss"></span>confused (share of the true class) · rows: true class, '
        "columns: predicted class; hover a cell for its count</p>"
    )
    return (
        f'<section id="{SECTION_ID}"><h2>Per-class test accuracy</h2>'
        f'<p class="note">Each task agent\'s best path on its test split ({fmt_number(len(cards))} '
        f"evaluated when the report was written).</p>{legend}"
        f'<div class="cards">{"".join(cards)}</div></section>'
    )


def _slug(agent_id: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in agent_id)
