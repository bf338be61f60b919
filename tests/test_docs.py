"""README.md and docs/: every relative link points to a file that exists, every #anchor to a heading."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target "title")
CODE_SPAN = re.compile(r"`[^`]*`")
EXTERNAL = ("http:", "https:", "mailto:")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, lowercase, every character that is not a letter,
    digit, space, hyphen or underscore dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(text):
        if match := HEADING.match(line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            found.add(f"{base}-{count}" if count else base)
            seen[base] = count + 1
    return found


@cache
def anchors_of(path: Path) -> frozenset[str]:
    return frozenset(anchors(path.read_text()))


def link_targets(text: str) -> list[str]:
    """The targets of inline links and images outside code (fenced blocks and code spans)."""
    return [t for line in prose_lines(text) for t in LINK.findall(CODE_SPAN.sub("", line))]


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """What is wrong with the relative links of the page at path (its text read from disk unless given)."""
    text = path.read_text() if text is None else text
    own = anchors(text)
    problems = []
    for target in link_targets(text):
        if target.startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve()
        if file_part and not dest.exists():
            problems.append(f"{target}: no such file or directory")
        elif anchor and (not file_part or dest.suffix == ".md"):
            known = own if not file_part else anchors_of(dest)
            if anchor not in known:
                problems.append(f"{target}: no heading with anchor #{anchor}")
    return problems


def test_slug_follows_github() -> None:
    assert slug("Calibration and 'not a digit'") == "calibration-and-not-a-digit"
    assert slug("A form's box (`form_field`)") == "a-forms-box-form_field"
    assert anchors("# A\n## A\n```\n# A\n```\n### A\n") == {"a", "a-1", "a-2"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    problems = broken_links(page)
    assert not problems, "broken links:\n" + "\n".join(problems)
