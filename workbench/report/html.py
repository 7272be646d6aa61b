"""A small Markdown → HTML converter for the subset `render` writes.

Handles headings (``#``…``######``; each gets an id, and the page a table of contents of
its level-2 and level-3 headings after the title), paragraphs, ``- `` bullet lists, pipe tables (with an
alignment line), images on their own line ``![caption](path)``, ``**bold**``, ``_italic_``,
``[link](url)``, `` `code` `` and HTML comments (passed through). Images are embedded as base64 PNG data
URIs (relative to ``base_dir``), so the HTML file is self-contained.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_IMG = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")

CSS = """body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;
max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}
div.wide{overflow-x:auto;max-width:100%}p,li,figcaption{overflow-wrap:anywhere}
table{border-collapse:collapse;margin:0.6em 0 1.2em 0;font-size:0.85em}
th,td{border:1px solid #bbb;padding:2px 6px;text-align:center;white-space:nowrap}
td:first-child,th:first-child{text-align:left;font-weight:600}
figure{margin:1em 0 2em 0}figure img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:0.9em;color:#444;max-width:900px}
code{background:#f3f3f3;padding:0 3px}.timestamp{color:#777;font-size:0.85em}
nav.toc{border:1px solid #ddd;background:#fafafa;padding:0.4em 1.2em;margin:1em 0;
font-size:0.9em}nav.toc ul{margin:0.2em 0;padding-left:1.2em}"""


def _slug(text: str, used: set[str]) -> str:
    """A unique HTML id for a heading."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, k = base, 2
    while slug in used:
        slug, k = f"{base}-{k}", k + 1
    used.add(slug)
    return slug


def _toc(headings: list[tuple[int, str, str]]) -> str:
    """A nested list of links to the level-2 and level-3 headings."""
    out = ['<nav class="toc"><strong>Contents</strong>', "<ul>"]
    depth = 2  # the level of the list being written
    for i, (level, slug, text) in enumerate(headings):
        if i:
            if level > depth:
                out.append("<ul>")
            elif level < depth:
                out.append("</li></ul></li>")
            else:
                out.append("</li>")
        depth = level
        out.append(f'<li><a href="#{slug}">{inline(text)}</a>')
    out.append("</li></ul></li></ul></nav>" if depth == 3 else "</li></ul></nav>")
    return "\n".join(out)


def inline(text: str) -> str:
    """Escape text and apply the inline markup (bold, italic, code)."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"(?<![\w])_([^_]+)_(?![\w])", r"<em>\1</em>", out)
    return out


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]


def _image(src: str, alt: str, base_dir: Path | None) -> str:
    path = (base_dir / src) if base_dir is not None else Path(src)
    if src.lower().endswith(".png") and path.is_file():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        uri = f"data:image/png;base64,{data}"
    else:
        uri = html.escape(src)
    return f'<img src="{uri}" alt="{html.escape(alt)}">'


def markdown_to_html(md: str, title: str, base_dir: Path | None = None) -> str:
    """Convert the report's Markdown to a standalone HTML page."""
    lines = md.split("\n")
    body: list[str] = []
    i = 0
    para: list[str] = []
    headings: list[tuple[int, str, str]] = []
    used: set[str] = set()
    toc_at = 0  # after the page title

    def flush_para() -> None:
        if para:
            body.append("<p>" + inline(" ".join(para)) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            flush_para()
            i += 1
            continue
        if stripped.startswith("<!--") and stripped.endswith("-->"):
            flush_para()
            body.append(stripped)
            i += 1
            continue
        m = _HEADING.match(stripped)
        if m:
            flush_para()
            level = len(m.group(1))
            slug = _slug(m.group(2), used)
            body.append(f'<h{level} id="{slug}">{inline(m.group(2))}</h{level}>')
            if level == 1 and not headings:
                toc_at = len(body)
            elif level in (2, 3):
                headings.append((level, slug, m.group(2)))
            i += 1
            continue
        m = _IMG.match(stripped)
        if m:
            flush_para()
            # the caption is the following paragraph when it starts with _Figure_
            body.append("<figure>" + _image(m.group("src"), m.group("alt"), base_dir))
            j = i + 1
            if j < len(lines) and lines[j].strip().startswith("_Figure"):
                body.append("<figcaption>" + inline(lines[j].strip()) + "</figcaption>")
                i = j
            body.append("</figure>")
            i += 1
            continue
        if stripped.startswith("|"):
            flush_para()
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i])
                i += 1
            header = _cells(block[0])
            rows = [_cells(b) for b in block[2:]] if len(block) > 1 else []
            body.append('<div class="wide"><table>')  # wide tables scroll, not the page
            body.append("<thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in header)
                        + "</tr></thead>")
            body.append("<tbody>")
            for r in rows:
                body.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>")
            body.append("</tbody></table></div>")
            continue
        if stripped.startswith("- "):
            flush_para()
            body.append("<ul>")
            while i < len(lines) and lines[i].strip().startswith("- "):
                body.append("<li>" + inline(lines[i].strip()[2:]) + "</li>")
                i += 1
            body.append("</ul>")
            continue
        if "<!-- timestamp" in stripped:
            flush_para()
            text = stripped.split("<!--")[0].strip()
            body.append(f'<p class="timestamp">{inline(text)}</p> <!-- timestamp -->')
            i += 1
            continue
        para.append(stripped)
        i += 1
    flush_para()
    if len(headings) > 1:
        body.insert(toc_at, _toc(headings))
    head = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
    )
    return head + "\n".join(body) + "\n</body>\n</html>\n"
