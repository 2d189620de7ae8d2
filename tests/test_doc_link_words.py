"""A link whose text names a file links to that file (issue 53 item 4: a link read
`pretrain.md` and opened pretrain_log.md): the words a reader follows match where they go."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
FILE_NAME = re.compile(r"[\w./-]+\.(?:md|py|json|txt)")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return pages + sorted((ROOT / "experiments").rglob("*.md"))


def test_a_link_that_names_a_file_goes_to_that_file():
    wrong = []
    for page in _pages():
        for text, target in LINK.findall(page.read_text()):
            named = text.strip("`")
            linked = PurePosixPath(target.split("#", 1)[0]).name
            if FILE_NAME.fullmatch(named) and linked and PurePosixPath(named).name != linked:
                wrong.append(f"{page.relative_to(ROOT)}: [{text}]({target})")
    assert wrong == [], "\n".join(wrong)
