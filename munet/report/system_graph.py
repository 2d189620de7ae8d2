"""The report's system graph section: each task's best path as a strip of components, coloured
by how the task got each one, and a task x component-owner matrix."""

from __future__ import annotations

from collections import Counter
from html import escape

from munet.report.collect import CLONED, OWNED, SHARED, SUBPATH, PathView, SystemView
from munet.report.svg import fmt_number

STATUS_TEXT = {
    OWNED: "owned (the task's own, from scratch or the root model)",
    CLONED: "cloned from another task, then trained",
    SHARED: "shared, frozen (another agent's)",
    SUBPATH: "whole path of another task (frozen)",
}
SLOT_ABBREVIATIONS = {
    "embedding": "emb",
    "cls": "cls",
    "posembed_input": "pos",
    "encoder_norm": "norm",
    "head": "head",
    "multipath_router": "router",
}


def slot_label(slot: str) -> str:
    """A component slot's short label in the strips: `b3` for encoderblock_3, `stem` and
    `s1`, `s2`, ... for a hybrid's stem_root and stem_block1, ..."""
    if slot.startswith("encoderblock_"):
        return "b" + slot.rpartition("_")[2]
    if slot == "stem_root":
        return "stem"
    if slot.startswith("stem_block") and slot.removeprefix("stem_block").isdigit():
        return "s" + slot.removeprefix("stem_block")
    if slot.startswith("head_adapter_path_"):
        return "adapt" + slot.rpartition("_")[2]
    if slot.startswith("path_"):
        return "p" + slot.rpartition("_")[2]
    return SLOT_ABBREVIATIONS.get(slot, slot[:6])


def _strip(path: PathView, view: SystemView, labels: dict[str, str]) -> str:
    boxes = []
    for use in path.components:
        origin = labels.get(use.origin, use.origin)
        tip = (
            f"{use.key}\n{STATUS_TEXT[use.status]}"
            + (f" ({origin})" if use.status in (CLONED, SHARED) else "")
            + f"\n{fmt_number(use.num_params)} params"
        )
        boxes.append(
            f'<span class="comp {use.status}" title="{escape(tip)}">{slot_label(use.slot)}'
            f"<small>{fmt_number(use.num_params)}</small></span>"
        )
    for slot, sub_id in path.subpaths:
        sub = view.paths.get(sub_id)
        agent = sub_id.rpartition(":")[0]
        params = sum(u.num_params for u in sub.components) if sub else 0
        tip = f"{slot} -> {sub_id} ({labels.get(agent, agent)})\n{fmt_number(params)} params"
        boxes.append(
            f'<span class="comp {SUBPATH}" title="{escape(tip)}">{slot_label(slot)}'
            f"<small>{escape(labels.get(agent, agent))}</small></span>"
        )
    return f'<div class="strip">{"".join(boxes)}</div>'


def graph_body(view: SystemView, labels: dict[str, str]) -> str:
    """Each task's best path as a strip of its components (colour: how the task got it), then
    a task x owner matrix: for each task, the components and parameters it holds per agent."""
    tasks = [a for a in view.tasks if a.best is not None]
    if not tasks:
        return '<p class="empty">No task has a published path yet.</p>'
    legend = '<p class="legend">' + "".join(
        f'<span class="sw {s}"></span>{escape(t)} ' for s, t in STATUS_TEXT.items()
    ) + "</p>"  # fmt: skip
    strips = "".join(
        f'<tr><th title="{escape(a.agent_id)}">{escape(labels[a.agent_id])}</th>'
        f"<td>{_strip(a.best, view, labels)}</td></tr>"
        for a in tasks
    )
    # The matrix: rows are tasks, columns the agents their best paths take components from.
    cells: dict[tuple[str, str], Counter] = {}
    params: Counter = Counter()
    for agent in tasks:
        for use in agent.best.components:
            cells.setdefault((agent.agent_id, use.origin), Counter())[use.status] += 1
            params[(agent.agent_id, use.origin)] += use.num_params
        for _slot, sub_id in agent.best.subpaths:
            origin = sub_id.rpartition(":")[0]
            cells.setdefault((agent.agent_id, origin), Counter())[SUBPATH] += 1
            sub = view.paths.get(sub_id)
            params[(agent.agent_id, origin)] += (
                sum(u.num_params for u in sub.components) if sub else 0
            )
    owners = sorted({o for _, o in cells}, key=lambda o: (not o.count("~root_model~"), o))
    head = "".join(
        f'<th class="rot" title="{escape(o)}"><div>{escape(labels.get(o, o))}</div></th>'
        for o in owners
    )
    rows = []
    for agent in tasks:
        row = []
        for owner in owners:
            counts = cells.get((agent.agent_id, owner))
            if not counts:
                row.append("<td></td>")
                continue
            status = counts.most_common(1)[0][0]
            text = ", ".join(f"{n} {s}" for s, n in counts.most_common())
            tip = f"{labels[agent.agent_id]} <- {labels.get(owner, owner)}: {text}, " + (
                f"{fmt_number(params[(agent.agent_id, owner)])} params"
            )
            row.append(
                f'<td class="cell {status}" title="{escape(tip)}">'
                f"{sum(counts.values())}<small>{fmt_number(params[(agent.agent_id, owner)])}"
                "</small></td>"
            )
        rows.append(
            f'<tr><th title="{escape(agent.agent_id)}">{escape(labels[agent.agent_id])}</th>'
            f"{''.join(row)}</tr>"
        )
    matrix = (
        '<h3>Task x component owner</h3><p class="note">Components of each task\'s best path '
        "by the agent they come from (the cell's colour: the most common way), with their "
        "parameters.</p>"
        f'<div class="scroll"><table class="matrix"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    body = (
        legend + '<h3>Best path of each task</h3><div class="scroll"><table class="strips">'
        f"<tbody>{strips}</tbody></table></div>{matrix}"
    )
    return body
