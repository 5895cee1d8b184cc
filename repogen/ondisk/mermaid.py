"""``repogen inspect --mermaid``: the repository's call graph as a Mermaid flowchart.

Rendered by GitHub and most Markdown viewers, so a pull request that changes an ensemble shows
the new wiring. Solid edges are ensemble steps (labelled with their tensor mappings); dotted
edges are BLS calls, once model.json records them (see ``describe.bls_calls``).
"""

from __future__ import annotations

from typing import Any

from .describe import mapping_label


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(description: dict[str, Any]) -> str:
    models = description["models"]
    ids = {m["name"]: f"m{i}" for i, m in enumerate(models)}
    lines = ["flowchart LR"]
    for model in models:
        name = _label(model["name"])
        if model.get("steps") is not None:
            lines.append(f'  {ids[model["name"]]}[["{name} (ensemble)"]]')
        else:
            lines.append(f'  {ids[model["name"]]}["{name}"]')
    for model in models:
        source = ids[model["name"]]
        for index, step in enumerate(model.get("steps", []), start=1):
            target = ids.get(step["model_name"])
            if target is None:  # a step naming a missing model: draw it so the gap is visible
                target = f"missing{len(ids)}"
                ids[f"\0{step['model_name']}"] = target
                lines.append(f'  {target}["{_label(step["model_name"])} (missing)"]')
            lines.append(f'  {source} -->|"{index}. {_label(mapping_label(step))}"| {target}')
        for call in model.get("bls_calls", []):
            if call in ids:
                lines.append(f'  {source} -.->|"BLS"| {ids[call]}')
    return "\n".join(lines) + "\n"
