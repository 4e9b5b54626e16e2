"""The HTML of the test web's normal pages (``/`` and ``/p/{i}.html``), rendered from the seed.

Each page links the next two (wrapping to ``/``), random same-host pages in mixed forms
(relative, ``../``, absolute-path, absolute URL, under a ``<base href>`` on some pages), 1-3
other hosts, the special paths of its bundle (``SPECIAL_BUNDLES``) and links hidden where a
crawler must not find them (a comment, a script, a form); ``rich`` pages are the size and
shape of real ones instead. Deterministic from the seed and the port (absolute links carry
it). Kept apart from the server (``demo.web``) and the special paths (``demo.site``): this
is the part a test reads to know which links a page has.
"""

from __future__ import annotations

import random
from typing import Protocol

__all__ = ["SPECIAL_BUNDLES", "PageSource", "page", "render_page"]


class PageSource(Protocol):
    """What rendering reads of a test web (``demo.web.TestWeb`` is one)."""

    hosts: list[str]
    pages_per_host: int
    seed: int
    plain: bool
    rich: bool

    def url(self, host: str, path: str = "/") -> str: ...


SPECIAL_BUNDLES: tuple[tuple[str, ...], ...] = (
    ("/redirect/2", "/gz.html", "/noindex.html", "/img/photo.jpg", "/files/doc.pdf"),
    ("/status/404", "/status/410", "/status/403", "/status/500", "/loop", "/cross",
     "/private/secret.html"),
    ("/status/503", "/status/429", "/redirect/5", "/meta-nofollow.html", "/xrobots.html",
     "/bin/data", "/private/x.html"),
)  # fmt: skip
"""Special links, by bundle; bundle k sits on page ``/p/{2k+1}.html`` (wrapped)."""

_WORD_TEXT = (
    "garden river harbor lantern meadow orchard pebble quarry ribbon saddle timber valley "
    "willow anchor beacon canyon delta ember falcon glacier hollow island jasmine kettle "
    "ledger marble nectar oasis prairie quill raven summit thicket umber velvet wander "
    "yonder zephyr bridge candle drift echo fable grove heron inlet juniper kiln lagoon "
    "mosaic north ochre pillar quiet ridge spruce tide upland vessel wharf amber basalt "
    "cedar dune estuary fern granite heath ivory jetty kelp lichen mill nook osprey "
    "the a of and to in is was for on with as by at from that this which their our"
)
_WORDS = _WORD_TEXT.split()

_TOPICS = (
    "Gardening", "Rivers", "Lighthouses", "Orchards", "Quarries", "Timber", "Glaciers",
    "Islands", "Harbors", "Meadows", "Canyons", "Falcons", "Lagoons", "Mosaics", "Basalt",
)  # fmt: skip


def page(title: str, body: str, head: str = "") -> str:
    """A small complete HTML document."""
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{head}</head>\n<body>\n<h1>{title}</h1>\n{body}\n"
        "</body>\n</html>\n"
    )


def _page_href(web: PageSource, idx: int, target: int, style: int, root_dir: bool) -> str:
    """A link to page ``target`` in one of four forms, relative to the effective base."""
    path = "/" if target == 0 else f"/p/{target}.html"
    if style == 0:
        return web.url(web.hosts[idx], path)
    if style == 1:
        return path
    if root_dir:
        return "./" if target == 0 else ("p/" if style == 2 else "./p/") + f"{target}.html"
    if target == 0:
        return "../"
    return f"{target}.html" if style == 2 else f"../p/{target}.html"


def _render_rich(web: PageSource, idx: int, num: int) -> str:
    """A page the size and shape of a real one: styles, scripts, a menu, 30-100 links
    (three in five to the same site), a dozen paragraphs; 30-38 KB of markup (about the
    median HTML document of the HTTP Archive's crawls)."""
    rng = random.Random(f"rich/{web.seed}/{idx}/{num}")
    host, n, total = web.hosts[idx], web.pages_per_host, len(web.hosts)
    topic = _TOPICS[(idx * 7 + num + web.seed) % len(_TOPICS)]
    title = f"{topic}, part {num} ({host})"
    links: list[str] = []
    for _ in range(rng.randint(30, 100)):
        if rng.random() < 0.6 or total == 1:
            t = rng.randrange(n)
            links.append("/" if t == 0 else f"/p/{t}.html")
        else:
            j, t = rng.randrange(total), rng.randrange(n)
            links.append(web.url(web.hosts[j], "/" if t == 0 else f"/p/{t}.html"))
    menu = "".join(
        f'<li class="menu-item"><a class="menu-link" href="{href}">'
        f"{_TOPICS[k % len(_TOPICS)]}</a></li>\n"
        for k, href in enumerate(links[: len(links) // 3])
    )
    paras = []
    pending = links[len(links) // 3 :]
    for _ in range(rng.randint(10, 16)):
        words = rng.choices(_WORDS, k=rng.randint(60, 120))
        if pending:
            href = pending.pop()
            k = rng.randrange(len(words))
            words[k] = f'<a href="{href}" title="{words[k]}">{words[k]}</a>'
        paras.append('<p class="body-text">' + " ".join(words) + ".</p>")
    rest = "".join(f'<li><a href="{h}">{_WORDS[i % len(_WORDS)]}</a></li>' for i, h in
                   enumerate(pending))  # fmt: skip
    body = (
        f'<header class="site-header"><nav aria-label="main"><ul class="menu">\n{menu}</ul>'
        f"</nav></header>\n<main><article>\n{''.join(paras)}\n</article>\n"
        f'<aside><h2>Read more</h2><ul class="related">{rest}</ul></aside></main>\n'
        f'<footer class="site-footer"><p>&copy; {host}</p></footer>\n'
        f"<script>{_RICH_JS}</script>"
    )
    return page(title, body, f"<style>{_RICH_CSS}</style>\n")


def render_page(web: PageSource, idx: int, num: int) -> str:
    """The HTML of page ``num`` (0 = home) of host ``idx``."""
    if web.rich:
        return _render_rich(web, idx, num)
    rng = random.Random(f"{web.seed}/{idx}/{num}")
    host = web.hosts[idx]
    n = web.pages_per_host
    total = len(web.hosts)
    topic = _TOPICS[(idx * 7 + num + web.seed) % len(_TOPICS)]
    title = f"{topic} on {host}" if num == 0 else f"{topic}, part {num} ({host})"

    head = ""
    root_dir = num == 0
    if num == 0 and idx % 2 == 1:
        head = '<base href="/p/">\n'
        root_dir = False
    elif num % 4 == 3:
        head = f'<base href="{web.url(host, "/p/")}">\n'

    links: list[tuple[str, str, str]] = []  # (href, text, extra attributes)
    if n > 1:
        targets = [(num + 1) % n, (num + 2) % n]
        targets += [rng.randrange(n) for _ in range(rng.randint(3, 8))]
        for t in targets:
            href = _page_href(web, idx, t, rng.randrange(4), root_dir)
            if rng.random() < 0.1 and href.endswith(".html"):
                href += "#section-2"
            label = "the home page" if t == 0 else f"{_TOPICS[t % len(_TOPICS)].lower()} {t}"
            links.append((href, label, ""))
    if total > 1:
        for _ in range(rng.randint(1, 3)):
            j = rng.randrange(total - 1)
            j = j + 1 if j >= idx else j
            t = rng.randrange(n) if rng.random() < 0.5 else 0
            tpath = "/" if t == 0 else f"/p/{t}.html"
            links.append((web.url(web.hosts[j], tpath), f"a friend at h{j}", ""))
    for k, bundle in enumerate(() if web.plain else SPECIAL_BUNDLES):
        if num == (2 * k + 1) % n:
            links.extend((p, p.strip("/").replace("/", " "), "") for p in bundle)
            if k == 0:
                links.append(("/nofollow-target.html", "sponsored", ' rel="nofollow"'))
    rng.shuffle(links)

    paras: list[str] = []
    pending = list(links)
    inline = max(1, len(pending) // 5)  # links per paragraph; the rest go to a list
    for _ in range(rng.randint(3, 4)):
        words = rng.choices(_WORDS, k=rng.randint(25, 50))
        parts: list[str] = []
        for w_i in range(0, len(words), 10):
            sentence = " ".join(words[w_i : w_i + 10])
            parts.append(sentence[:1].upper() + sentence[1:] + ".")
            if pending and w_i // 10 < inline:
                href, text, attrs = pending.pop()
                parts.append(f'See <a href="{href}"{attrs}>{text}</a>.')
        paras.append("<p>" + " ".join(parts) + "</p>")
    related = "".join(
        f'<li><a href="{href}"{attrs}>{text}</a></li>\n' for href, text, attrs in pending
    )
    top = "" if head else ' | <a href="#top">Top</a>'  # "#top" would resolve via <base>
    nav = f'<nav><a href="/">Home</a>{top} | <a href="mailto:info@{host}">Contact</a></nav>'
    body = [nav, *paras]
    if related:
        body.append(f'<h2>Related</h2>\n<ul class="related">\n{related}</ul>')
    if num % 5 == 2 and not web.plain:
        body.append(
            '<img src="/img/map.png" usemap="#m" alt="map">\n<map name="m">'
            '<area shape="rect" coords="0,0,10,10" href="/only-from-area.html" alt="area">'
            "</map>"
        )
    body.append(
        '<!-- old navigation: <a href="/hidden-comment.html">archive</a> -->\n'
        '<script>var next = "/hidden-script.html";'
        " document.write('<a href=\"/hidden-script.html\">more</a>');</script>\n"
        '<form action="/hidden-form.html" method="get"><input name="q">'
        '<button type="submit">Search</button></form>'
    )
    body.append(f"<footer><p>&copy; {host}, seed {web.seed}.</p></footer>")
    return page(title, "\n".join(body), head)


# Static weight of a real page: a stylesheet and a script inline (about 6 KB and 14 KB).
_RICH_CSS = "".join(
    f".c{i} {{ margin: {i % 7}px {i % 5}px; padding: 0 {i % 3}em;"
    f" color: #{i * 2654435761 % 0xFFFFFF:06x}; font: {12 + i % 6}px/1.{i % 9} sans-serif; }}\n"
    for i in range(60)
)
_RICH_JS = "".join(
    f"function f{i}(a, b) {{ var x = a * {i} + b; if (x > {i * 7}) {{ return document"
    f'.querySelectorAll(".c{i}").length + x; }} return window.innerWidth - x; }}\n'
    for i in range(120)
)
