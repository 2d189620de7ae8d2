"""Levels off a quality plot's axis ("chance 0.1 (below)") are named on lines of their own
above the plot area, never over the data or the title (issue 53: the note sat in the top
right corner, where a learning curve ends). Checked geometrically on the SVG the report makes:
each note's box (a wide estimate of its text) against every marker, line vertex and title."""

import json
import xml.etree.ElementTree as ET

import pytest

from munet.report.baseline import load_baselines
from munet.report.collect import collect_system
from munet.report.html import render_report
from munet.report.svg import Plot
from munet.system import SystemStore
from tests.report.systems import _root, grow_agent

SVG = "{http://www.w3.org/2000/svg}"


def _parse(markup: str) -> ET.Element:
    """One inline <svg> element (the page leaves out the namespace, as HTML allows)."""
    return ET.fromstring(markup.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def _text_box(element: ET.Element, font_px: float, char_em: float) -> tuple:
    """(x0, y0, x1, y1) of a text element: `char_em` em a character (wider than the page's
    sans-serif), from its cap height above the baseline to its descenders below."""
    x, y = float(element.get("x")), float(element.get("y"))
    width = len(element.text or "") * char_em * font_px
    anchor = element.get("text-anchor", "start")
    x0 = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    return (x0, y - font_px, x0 + width, y + 0.3 * font_px)


def _marks(svg: ET.Element) -> list[tuple]:
    """Boxes of the data: every circle, every diamond and every line segment (chance and
    baseline lines included)."""
    boxes = []
    for element in svg.iter():
        tag = element.tag.removeprefix(SVG)
        if tag == "circle":
            cx, cy, r = (float(element.get(k)) for k in ("cx", "cy", "r"))
            boxes.append((cx - r, cy - r, cx + r, cy + r))
        elif tag == "path":
            numbers = [float(v) for v in element.get("d").replace("M", " ").replace("L", " ")
                       .replace("Z", " ").split()]  # fmt: skip
            xs, ys = numbers[0::2], numbers[1::2]
            boxes.append((min(xs), min(ys), max(xs), max(ys)))
        elif tag == "polyline":
            points = [tuple(float(v) for v in p.split(",")) for p in element.get("points").split()]
            for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
                boxes.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
    return boxes


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _check_notes(svg: ET.Element) -> list[str]:
    """The notes of one plot, after asserting none overlaps a mark, the title or the edge."""
    notes = [e for e in svg.iter(f"{SVG}text") if "plot-note" in e.get("class", "")]
    titles = [_text_box(e, 12, 0.68) for e in svg.iter(f"{SVG}text")
              if e.get("class") == "plot-title"]  # fmt: skip
    marks = _marks(svg)
    boxes = [_text_box(e, 10, 0.62) for e in notes]
    for note, box in zip(notes, boxes, strict=True):
        assert box[0] >= 0, f"note {note.text!r} runs off the plot's left edge"
        hits = [m for m in marks if _overlap(box, m)]
        assert not hits, f"note {note.text!r} {box} overlaps marks {hits}"
        assert not [t for t in titles if _overlap(box, t)], f"note {note.text!r} over the title"
    for i, a in enumerate(boxes):
        assert not [b for b in boxes[i + 1 :] if _overlap(a, b)], "notes overlap each other"
    return [n.text for n in notes]


def test_a_note_clears_data_in_the_top_right_corner():
    """The worst case: markers and a line at the corners of the plot area, several notes."""
    plot = Plot((0, 3), (0.8, 1.0), title="validation quality (lineage)", x_label="cycle")
    xs, ys = [0, 1.5, 3, 3], [1.0, 0.9, 1.0, 0.8]
    plot.line(xs, ys, "curve")
    plot.points(xs, ys, "admitted", radius=3.2)
    plot.points([3], [1.0], "test", shape="diamond")
    # Notes after the data (reference_lines may add them in any order): still above it.
    for text in ("chance 0.1 (below)", "cnn 0.52 (below)", "linear_probe 0.412 (below)"):
        plot.note(text)
    svg = _parse(plot.render())
    texts = _check_notes(svg)
    # Notes share a line while it fits the plot's width.
    assert texts == ["chance 0.1 (below), cnn 0.52 (below)", "linear_probe 0.412 (below)"]
    # The plot area keeps its bottom (the x axis of plots side by side stays level).
    assert plot.y(0.8) == pytest.approx(plot.height - plot.margin[2])


def test_no_note_no_band():
    plot = Plot((0, 1), (0, 1))
    assert plot.y(1.0) == plot.margin[0]


def test_report_notes_clear_every_plot(tmp_path):
    """A system whose qualities (0.7-1.05) lie far above chance (0.1), with a baseline among
    them (drawn as a line): each quality plot names chance above its area, clear of every
    marker, line and its title."""
    store = SystemStore(str(tmp_path / "state"))
    _root(store)
    grow_agent(store, "VitCpu~digits", 3, 0.75, curves=True)
    baselines = tmp_path / "baselines.json"
    baselines.write_text(json.dumps({"finetune": {"digits": 0.95}}))
    view = collect_system(str(tmp_path / "state"))
    view.baselines = load_baselines([baselines])
    page = render_report(view)
    checked = []
    start = 0
    while (start := page.find('<svg class="plot"', start)) >= 0:
        end = page.index("</svg>", start) + len("</svg>")
        svg = _parse(page[start:end])
        notes = _check_notes(svg)
        if notes:
            checked.append((svg.get("aria-label"), notes))
        start = end
    assert sorted(checked) == [
        ("validation quality", ["chance 0.1 (below)"]),
        ("validation quality (lineage)", ["chance 0.1 (below)"]),
    ]
    assert page.count('class="baseline-line baseline-0"') == 2
