"""A local *topical* test web: thousands of hosts, a few about one topic, with ground truth.

For the adaptive crawler (../shared/seeds/004, "crawling models"): a relevance function and a
learned link prioritiser are only testable on a web where relevant pages are rare, clustered
and found through informative-but-noisy links. Like ``testweb.TestWeb`` it serves virtual
hosts by Host header on 127.0.0.1 (``--resolve "*.topic:PORT:127.0.0.1"``), everything
deterministic from ``seed``; ``page(url)`` serves the same bytes without HTTP for offline
simulation (``bench/focus_sim.py``).

The world (host kinds by share of ``n_hosts``):

* **topical** (``topical_share``, 0.8%): sites about the topic ("Ashby Steam Railway"); the home
  page and ~75% of the other pages are relevant, the rest are shop/contact/cafe pages.
* **mixed** (``mixed_share``, 2%): news and travel blogs with 1-2 relevant posts among
  their pages ("Our day out on the steam line").
* **hub** (3%): directories. The home page lists category pages ("Transport & Engineering"),
  each of which lists 15-25 sites of that category by name. Topical sites sit in the same
  category as near-miss topics (rail travel, model railways, car engines, ...).
* **ordinary**: the rest, each about one of 30 other topics, some of which share words with the
  topic (coffee machines and saunas say "steam", model railways say "locomotive").

Relevant pages are 2-3 hops behind irrelevant hub pages (seed hub -> category page -> topical
home -> its pages) and link to each other (topical pages link mostly to other topical sites),
so they form clusters. Anchor text is the target's title 65% of the time, otherwise generic
("read more") or the site's name; URL paths carry title words except for 20% of pages; 20%
of relevant pages are only weakly on topic and ~5% of irrelevant pages mention a topic word.
The base rate is about 1% of all pages (``base_rate()``); ``relevant`` is the ground truth.
Seeds (``seed_urls``) are hub and ordinary home pages, never topical or mixed sites.

Sizing: 40x the base rate in a 1000-fetch window needs at least 40,000 pages in all (the
window cannot hold more than every relevant page), so the default is 10,000 hosts x ~10 pages;
pages are generated on demand and cached, so an unvisited host costs a few hundred bytes.
robots.txt allows everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aiohttp import web
from loopbackweb import LoopbackWeb

from politecrawl.demo.accesslog import AccessEntry
from politecrawl.demo.web import serve_until_signal

__all__ = ["DEFAULT_TOPIC_WORDS", "HostSpec", "PageSpec", "TopicWeb", "main"]

_TOPIC_TEXT = (
    "steam;locomotive;railway;boiler;firebox;tender;footplate;heritage;steam engine;tank engine;"
    "branch line;viaduct;engine shed;whistle;smokebox;valve gear;coal;fireman;driver;signal box;"
    "carriage;restoration;preserved;steam locomotive;heritage railway;narrow gauge"
)
DEFAULT_TOPIC_WORDS: tuple[str, ...] = tuple(_TOPIC_TEXT.split(";"))
"""Words and phrases of the default topic (steam railways, the seed article's example)."""

_NEAR_MISS = ("coffee", "cars", "rail travel", "model railways", "saunas")
_TOPICS: dict[str, str] = {
    "cooking": "recipe oven flour butter sauce garlic simmer dough pastry spice roast kitchen onion bake dessert chef",  # noqa: E501
    "gardening": "soil compost seedling prune shrub perennial mulch greenhouse bulb hedge lawn blossom trowel weed harvest orchard",  # noqa: E501
    "football": "goal striker league referee penalty midfield stadium keeper match tackle season transfer coach fans derby offside",  # noqa: E501
    "finance": "interest mortgage savings pension dividend portfolio budget loan inflation tax invest equity bond credit broker fund",  # noqa: E501
    "fitness": "workout muscle cardio squat stretch protein gym reps endurance sprint yoga weights core posture recovery trainer",  # noqa: E501
    "pets": "puppy kitten leash vet grooming litter breed collar treats fur aquarium hamster parrot kennel walkies paws",  # noqa: E501
    "astronomy": "telescope galaxy nebula orbit planet comet eclipse meteor star lunar solar constellation observatory asteroid cosmos crater",  # noqa: E501
    "music": "guitar chord melody drummer album concert lyrics tempo rhythm piano band vocals studio gig bass tune",  # noqa: E501
    "photography": "lens aperture shutter exposure tripod portrait pixel zoom flash sensor landscape focus filter camera print frame",  # noqa: E501
    "knitting": "yarn needle stitch wool pattern purl scarf sweater cable skein crochet mitten cardigan loop knit cast",  # noqa: E501
    "wine": "vineyard grape vintage cellar cork tannin merlot barrel sommelier bottle harvest red white tasting oak rose",  # noqa: E501
    "chess": "pawn bishop knight rook queen checkmate opening gambit endgame castle board tournament grandmaster move blitz rating",  # noqa: E501
    "fashion": "dress fabric runway designer tailor denim collection boutique jacket style trend silk seam heels outfit vogue",  # noqa: E501
    "programming": "code compiler function variable debug python server database loop syntax library commit deploy api thread bug",  # noqa: E501
    "real estate": "property tenant landlord lease apartment agent listing deposit viewing freehold survey rent estate valuation bedroom garden",  # noqa: E501
    "politics": "election parliament minister vote policy campaign party senate debate reform candidate ballot coalition budget council mayor",  # noqa: E501
    "health": "doctor clinic symptom vaccine nurse diet sleep blood pressure therapy patient hospital allergy vitamin fever cough",  # noqa: E501
    "film": "director actor scene cinema premiere script trailer sequel studio screen drama comedy cast festival oscar reel",  # noqa: E501
    "hiking": "trail summit backpack boots ridge map compass valley campsite tent path peak ascent hut waterfall ramble",  # noqa: E501
    "fishing": "rod reel bait trout salmon angler lake hook fly catch river carp tackle boat line pike",  # noqa: E501
    "birds": "warbler nest feather migration heron owl sparrow binoculars hide wing song robin raptor wetland flock egg",  # noqa: E501
    "history": "castle medieval king battle empire archive century manuscript ruins dynasty revolution museum knight treaty abbey siege",  # noqa: E501
    "crafts": "glue paper scissors bead paint clay pottery kiln sewing quilt ribbon stencil frame card craft brush",  # noqa: E501
    "aviation": "aircraft pilot runway cockpit wing airport flight jet propeller hangar altitude airline glider radar landing cabin",  # noqa: E501
    "shipping": "ship port cargo vessel harbour crane container sailor dock tanker ferry captain voyage anchor deck hull",  # noqa: E501
    "cycling": "bicycle pedal saddle gear chain helmet sprint peloton tyre frame ride climb cyclist race wheel spokes",  # noqa: E501
    "coffee": "espresso milk steam boiler pressure grinder bean roast barista latte crema cup machine frother brew cafe",  # noqa: E501
    "cars": "engine piston fuel gearbox clutch tyre brake exhaust mileage diesel turbo garage mechanic valve horsepower driver",  # noqa: E501
    "rail travel": "train ticket station platform journey timetable railway commuter fare delay carriage seat express route conductor rail",  # noqa: E501
    "model railways": "model layout scale track locomotive gauge hobby scenery wagon diorama points baseboard kit digital club miniature",  # noqa: E501
    "saunas": "sauna steam heat relax spa towel bath wellness massage pool cabin sweat cold plunge wood stove",  # noqa: E501
}  # fmt: skip
_MIXED_TOPICS: dict[str, str] = {
    "local news": "council town residents report weekend community event school road police market festival charity library mayor",  # noqa: E501
    "travel": "hotel beach holiday tour guide city museum itinerary luggage passport resort sightseeing hostel island cruise",  # noqa: E501
    "family": "kids weekend picnic birthday grandparents school holiday outing lunch park rainy day trip fun memories",  # noqa: E501
}  # fmt: skip
TARGET = "target"
_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Transport & Engineering": (TARGET, "cars", "rail travel", "model railways", "aviation",
                                "shipping", "cycling"),
    "Food & Drink": ("cooking", "wine", "coffee"),
    "Home & Garden": ("gardening", "real estate", "crafts", "knitting", "pets"),
    "Sports & Outdoors": ("football", "fitness", "hiking", "fishing", "chess"),
    "Science & Nature": ("astronomy", "birds", "health"),
    "Arts & Media": ("music", "film", "photography", "fashion"),
    "Society & Money": ("politics", "history", "finance", "programming"),
    "Leisure & News": ("saunas", "local news", "travel", "family"),
}  # fmt: skip
_FILLER_TEXT = (
    "the a of and to in is was for on with as by at from that this which their our we you it "
    "they be have has had will can more most some many new old good great small large first "
    "last long little own other right big high different local early young important public "
    "people year day time way week place world life work part number group area story "
    "visit open today people family friends look find make take come see know think use "
    "also just very well still even back much after before over under again never always "
    "here there when where why how all each every both few same such only then than about"
)
_FILLER = _FILLER_TEXT.split()
_PLACES_TEXT = (
    "Ashby Bramley Coldwater Dunmore Elmstead Farleigh Glenrock Hartwell Ivybridge Kestrel "
    "Longmoor Marston Northcote Oakhurst Pendle Queensbury Ravensworth Stanton Thornbury Upwood "
    "Valemont Westbury Yarrow Alderley Birchfield Carrick Dalby Easton Foxley Greystone Holme"
)
_PLACES = _PLACES_TEXT.split()
_TOPICAL_NAMES = (
    "Steam Railway", "Locomotive Trust", "Heritage Line", "Steam Society",
    "Railway Preservation Society", "Engine Shed", "Light Railway", "Valley Line",
)  # fmt: skip
_SITE_KINDS = (
    "Club", "Society", "Shop", "Blog", "Online", "Guide", "Times", "Works", "Hub", "Journal",
    "Corner", "Network",
)  # fmt: skip
_SERVICE_PAGES = (
    "Contact us", "Gift shop vouchers", "Membership fees", "Cafe opening hours",
    "Car park and directions", "Volunteer rota", "Privacy policy", "Job vacancies",
)  # fmt: skip
_SERVICE_TEXT = (
    "opening hours email phone address parking tickets price card shop gift voucher volunteer "
    "form privacy cookies staff team"
)
_SERVICE_WORDS = _SERVICE_TEXT.split()
_GENERIC_ANCHORS = ("read more", "click here", "this page", "more", "link", "website", "here")
_RELEVANT_TITLES = ("A day out on the {w}", "Riding the {w} at last", "Our trip to see the {w}",
                    "Weekend {w} adventure", "Why the {w} is worth a visit")  # fmt: skip

_MAX_CACHED_PAGES = 50_000  # ~100 MB of rendered pages at most
Kind = Literal["topical", "mixed", "hub", "ordinary"]


@dataclass(frozen=True, slots=True)
class HostSpec:
    """One host of the topical web."""

    index: int
    name: str  # host name, e.g. "ashby-steam-railway-17.topic"
    site: str  # site title, e.g. "Ashby Steam Railway"
    kind: Kind
    topic: str  # TARGET, a key of the topic tables, or a category name for hubs
    n_pages: int


@dataclass(frozen=True, slots=True)
class PageSpec:
    """One page: its path, title and ground truth."""

    host: int
    num: int  # 0 = home
    path: str
    title: str
    relevant: bool
    weak: bool  # relevant but only lightly on topic, or irrelevant with a stray topic word


def _slug(text: str) -> str:
    return "-".join("".join(c for c in w.lower() if c.isalnum()) for w in text.split()).strip("-")


def _cap(words: Sequence[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:]


class TopicWeb(LoopbackWeb):
    """The topical web: metadata up front, pages rendered on first request and cached."""

    __test__ = False

    def __init__(
        self,
        n_hosts: int = 10_000,
        pages_per_host: int = 10,
        seed: int = 1,
        topic_words: Sequence[str] = DEFAULT_TOPIC_WORDS,
        *,
        topical_share: float = 0.008,
        mixed_share: float = 0.02,
        hub_share: float = 0.03,
        suffix: str = "topic",
        port: int = 0,
        latency_s: float = 0.0,
    ) -> None:
        if n_hosts < 20 or pages_per_host < 3:
            raise ValueError("need n_hosts >= 20 and pages_per_host >= 3")
        if not topic_words:
            raise ValueError("need topic words")
        self.n_hosts, self.pages_per_host, self.seed = n_hosts, pages_per_host, seed
        self.topic_words = tuple(topic_words)
        self.suffix, self.port, self.latency_s = suffix, port, latency_s
        self.access_log: list[AccessEntry] = []
        self._cache: dict[tuple[int, int], bytes] = {}
        self._specs: dict[tuple[int, int], PageSpec] = {}
        self._vocab: dict[str, list[str]] = {k: v.split() for k, v in _TOPICS.items()}
        self._vocab.update({k: v.split() for k, v in _MIXED_TOPICS.items()})
        self._vocab[TARGET] = [w for w in self.topic_words]
        self.hosts = self._make_hosts(topical_share, mixed_share, hub_share)
        self._by_name = {h.name: h.index for h in self.hosts}
        self._by_topic: dict[str, list[int]] = {}
        for h in self.hosts:
            self._by_topic.setdefault(h.topic if h.kind != "hub" else "hub", []).append(h.index)
        self._category_of = {t: c for c, ts in _CATEGORIES.items() for t in ts}

    # -- the world ---------------------------------------------------------------------------

    def _make_hosts(self, topical: float, mixed: float, hub: float) -> list[HostSpec]:
        rng = random.Random(f"topicweb/{self.seed}/hosts")
        n = self.n_hosts
        kinds: list[Kind] = ["ordinary"] * n
        order = list(range(n))
        rng.shuffle(order)
        n_top, n_mix, n_hub = (max(1, round(n * s)) for s in (topical, mixed, hub))
        for i in order[:n_top]:
            kinds[i] = "topical"
        for i in order[n_top : n_top + n_mix]:
            kinds[i] = "mixed"
        for i in order[n_top + n_mix : n_top + n_mix + n_hub]:
            kinds[i] = "hub"
        ordinary_topics = list(_TOPICS)
        hosts: list[HostSpec] = []
        for i, kind in enumerate(kinds):
            place = rng.choice(_PLACES)
            n_pages = max(3, self.pages_per_host + rng.randint(-3, 3))
            if kind == "topical":
                topic = TARGET
                site = f"{place} {rng.choice(_TOPICAL_NAMES)}"
                if rng.random() < 0.3:  # a name that says nothing about the topic
                    site = f"{place} {rng.choice(_SITE_KINDS)}"
            elif kind == "mixed":
                topic = rng.choice(list(_MIXED_TOPICS))
                site = f"{place} {topic.title()} {rng.choice(_SITE_KINDS)}"
            elif kind == "hub":
                topic = "hub"
                site = f"{place} {rng.choice(('Directory', 'Portal', 'Web Guide', 'Links'))}"
                n_pages = len(_CATEGORIES) + 1
            else:
                topic = rng.choice(ordinary_topics)
                word = rng.choice(self._vocab[topic]) if rng.random() < 0.6 else place
                site = f"{place if word != place else ''} {word.title()} {rng.choice(_SITE_KINDS)}"
            name = f"{_slug(site)}-{i}.{self.suffix}"
            hosts.append(HostSpec(i, name, site.strip(), kind, topic, n_pages))
        return hosts

    def page_spec(self, host: int, num: int) -> PageSpec:
        """Path, title and ground truth of page ``num`` of host ``host`` (0 = home)."""
        spec = self._specs.get((host, num))
        if spec is None:
            spec = self._specs[(host, num)] = self._make_spec(host, num)
        return spec

    def _make_spec(self, host: int, num: int) -> PageSpec:
        h = self.hosts[host]
        rng = random.Random(f"topicweb/{self.seed}/{host}/{num}/spec")
        relevant = weak = False
        if num == 0:
            return PageSpec(host, 0, "/", h.site, h.kind == "topical", False)
        if h.kind == "topical":
            relevant = rng.random() < 0.75
            if relevant:
                title = _cap([*rng.sample(self._vocab[TARGET], 2), rng.choice(_FILLER[40:80])])
                weak = rng.random() < 0.2
            else:
                title = rng.choice(_SERVICE_PAGES)
        elif h.kind == "mixed" and num in self._mixed_relevant(host):
            relevant = True
            weak = rng.random() < 0.2
            title = rng.choice(_RELEVANT_TITLES).format(w=rng.choice(self._vocab[TARGET]))
        elif h.kind == "hub":
            title = list(_CATEGORIES)[(num - 1) % len(_CATEGORIES)]
        else:
            title = _cap([*rng.sample(self._vocab[h.topic], 2), rng.choice(_FILLER[40:80])])
            weak = rng.random() < 0.05
        section = _slug(title.split()[0]) if rng.random() < 0.5 else "pages"
        if rng.random() < 0.2:
            path = f"/{section}/{num}.html"  # no words in the URL
        else:
            path = f"/{section}/{_slug(title)}-{num}.html"
        return PageSpec(host, num, path, title, relevant, weak)

    def _mixed_relevant(self, host: int) -> set[int]:
        rng = random.Random(f"topicweb/{self.seed}/{host}/mixed")
        n = self.hosts[host].n_pages
        return set(rng.sample(range(1, n), min(n - 1, rng.choice((1, 1, 2)))))

    def base_rate(self) -> float:
        """Relevant pages / all pages."""
        total = sum(h.n_pages for h in self.hosts)
        return len(self.relevant_specs()) / total

    def relevant_specs(self) -> list[PageSpec]:
        """Ground truth as page specs."""
        out: list[PageSpec] = []
        for h in self.hosts:
            if h.kind in ("topical", "mixed"):
                out += [s for j in range(h.n_pages) if (s := self.page_spec(h.index, j)).relevant]
        return out

    @property
    def relevant(self) -> set[str]:
        """URLs of the relevant pages (ground truth; uses the current port)."""
        return {self.url(self.hosts[s.host].name, s.path) for s in self.relevant_specs()}

    def n_pages(self) -> int:
        return sum(h.n_pages for h in self.hosts)

    # -- addresses -----------------------------------------------------------------------------

    def url(self, host: str, path: str = "/") -> str:
        """``http://HOST:PORT/path``."""
        return f"http://{host}:{self.port}{path}"

    def page_url(self, host: int, num: int) -> str:
        return self.url(self.hosts[host].name, self.page_spec(host, num).path)

    def resolve_arg(self) -> str:
        """The curl-style ``--resolve`` override: ``*.SUFFIX:PORT:127.0.0.1``."""
        return f"*.{self.suffix}:{self.port}:127.0.0.1"

    def seed_urls(self, n: int = 100) -> list[str]:
        """Home pages of hub and ordinary hosts (never topical or mixed), deterministic order."""
        rng = random.Random(f"topicweb/{self.seed}/seeds")
        hubs = list(self._by_topic.get("hub", []))
        ordinary = [h.index for h in self.hosts if h.kind == "ordinary"]
        rng.shuffle(hubs)
        rng.shuffle(ordinary)
        picked = hubs[: max(1, n // 5)]
        picked += ordinary[: n - len(picked)]
        return [self.url(self.hosts[i].name) for i in picked[:n]]

    def locate(self, url: str) -> PageSpec | None:
        """The page behind ``url`` (any port), or None."""
        rest = url.split("://", 1)[-1]
        hostport, _, path = rest.partition("/")
        idx = self._by_name.get(hostport.split(":", 1)[0].lower())
        if idx is None:
            return None
        path = "/" + path.split("#", 1)[0]
        if path == "/":
            return self.page_spec(idx, 0)
        num_s = path.rsplit("-", 1)[-1].rsplit("/", 1)[-1].removesuffix(".html")
        if not num_s.isdigit():
            return None
        num = int(num_s)
        if not 0 < num < self.hosts[idx].n_pages:
            return None
        spec = self.page_spec(idx, num)
        return spec if spec.path == path else None

    def is_relevant(self, url: str) -> bool:
        spec = self.locate(url)
        return spec is not None and spec.relevant

    # -- content -------------------------------------------------------------------------------

    def page(self, url: str) -> bytes | None:
        """The HTML of ``url`` (what the server sends), or None for a 404."""
        spec = self.locate(url)
        if spec is None:
            return None
        key = (spec.host, spec.num)
        body = self._cache.get(key)
        if body is None:
            if len(self._cache) >= _MAX_CACHED_PAGES:
                self._cache.clear()  # rendering is deterministic: a miss only costs time
            body = self._cache[key] = self._render(spec).encode("utf-8")
        return body

    def _pick_host(self, rng: random.Random, pool: str) -> int:
        hosts = self._by_topic.get(pool) or self._by_topic["hub"]
        return rng.choice(hosts)

    def _anchor(self, rng: random.Random, target: PageSpec) -> str:
        r = rng.random()
        if r < 0.65:
            return target.title
        if r < 0.80:
            return rng.choice(_GENERIC_ANCHORS)
        return f"visit {self.hosts[target.host].site}"

    def _cross_targets(self, rng: random.Random, spec: PageSpec) -> list[tuple[int, int]]:
        """(host, page) of the links to other hosts."""
        h = self.hosts[spec.host]
        out: list[tuple[int, int]] = []
        cat = self._category_of.get(h.topic)
        for _ in range(rng.randint(1, 3) + (1 if h.kind == "topical" else 0)):
            r = rng.random()
            if h.kind == "topical" or spec.relevant:
                pool = (TARGET if r < 0.55 else "mixed-relevant" if r < 0.70
                        else rng.choice(list(_TOPICS)))  # fmt: skip
            elif r < 0.70:
                pool = h.topic
            elif r < 0.88 and cat is not None:
                pool = rng.choice(_CATEGORIES[cat])
            elif r < 0.94:
                pool = "hub"
            else:
                pool = rng.choice([*_TOPICS, TARGET])  # the rare random link to anywhere
            if pool == "mixed-relevant":
                j = self._pick_host(rng, rng.choice(list(_MIXED_TOPICS)))
                out.append((j, rng.choice(sorted(self._mixed_relevant(j)))))
                continue
            j = self._pick_host(rng, pool)
            if j == spec.host:
                continue
            num = 0 if rng.random() < 0.5 else rng.randrange(self.hosts[j].n_pages)
            out.append((j, num))
        return out

    def _text(self, rng: random.Random, topic: str, density: float, words: int) -> str:
        vocab = self._vocab[topic]
        out = [rng.choice(vocab) if rng.random() < density else rng.choice(_FILLER)
               for _ in range(words)]  # fmt: skip
        sentences = [_cap(out[i : i + 12]) + "." for i in range(0, len(out), 12)]
        return " ".join(sentences)

    def _link(self, rng: random.Random, target: PageSpec) -> str:
        href = self.url(self.hosts[target.host].name, target.path)
        return f'<a href="{html.escape(href)}">{html.escape(self._anchor(rng, target))}</a>'

    def _render(self, spec: PageSpec) -> str:
        rng = random.Random(f"topicweb/{self.seed}/{spec.host}/{spec.num}/page")
        h = self.hosts[spec.host]
        if h.kind == "hub":
            return self._render_hub(rng, spec)
        if spec.relevant:
            topic, density = TARGET, (0.12 if spec.weak else 0.35)
        elif h.kind == "topical":
            topic, density = TARGET, 0.0  # a service page: words below
        else:
            topic, density = h.topic, 0.3
        paras: list[str] = []
        own = [self.page_spec(h.index, rng.randrange(h.n_pages)) for _ in range(rng.randint(2, 4))]
        cross = [self.page_spec(j, k) for j, k in self._cross_targets(rng, spec)]
        inline = [p for p in own + cross if p.num != spec.num or p.host != spec.host]
        rng.shuffle(inline)
        for _ in range(rng.randint(3, 4)):
            if density:
                text = self._text(rng, topic, density, rng.randint(30, 45))
            else:
                text = " ".join(rng.choice(_SERVICE_WORDS + _FILLER) for _ in range(35)) + "."
            if spec.weak and not spec.relevant and rng.random() < 0.5:
                text += f" {_cap([rng.choice(self._vocab[TARGET])])} was mentioned too."
            if inline:
                text += f" See {self._link(rng, inline.pop())}."
            paras.append(f"<p>{text}</p>")
        if inline:
            items = "".join(f"<li>{self._link(rng, p)}</li>" for p in inline)
            paras.append(f"<h2>Related</h2><ul>{items}</ul>")
        menu = [self.page_spec(h.index, k) for k in range(min(h.n_pages, 5))]
        nav = " | ".join(f'<a href="{m.path}">{html.escape(m.title)}</a>' for m in menu)
        hub = self.page_spec(self._pick_host(rng, "hub"), 0)
        footer = f"&copy; {html.escape(h.site)}. Listed in {self._link(rng, hub)}."
        return _document(spec.title, h.site, nav, "\n".join(paras), footer)

    def _render_hub(self, rng: random.Random, spec: PageSpec) -> str:
        h = self.hosts[spec.host]
        cats = list(_CATEGORIES)
        menu = [self.page_spec(h.index, k) for k in range(1, h.n_pages)]
        nav = " | ".join(f'<a href="{m.path}">{html.escape(m.title)}</a>' for m in menu)
        if spec.num == 0:
            others = [self.page_spec(self._pick_host(rng, "hub"), 0) for _ in range(3)]
            links = ", ".join(self._link(rng, o) for o in others)
            body = (
                f"<p>Welcome to {html.escape(h.site)}, a guide to the best sites.</p>"
                f"<p>Other directories: {links}</p>"
            )
            return _document(spec.title, h.site, nav, body, f"&copy; {html.escape(h.site)}")
        topics = _CATEGORIES[cats[(spec.num - 1) % len(cats)]]
        items: list[str] = []
        for _ in range(rng.randint(15, 25)):
            j = self._pick_host(rng, rng.choice(topics))
            target = self.page_spec(j, 0)
            items.append(f'<li><a href="{html.escape(self.url(self.hosts[j].name))}">'
                         f"{html.escape(target.title)}</a></li>")  # fmt: skip
        body = f"<p>Sites about {html.escape(spec.title.lower())}:</p><ul>{''.join(items)}</ul>"
        return _document(spec.title, h.site, nav, body, f"&copy; {html.escape(h.site)}")

    # -- serving -------------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start = time.time()
        host = request.headers.get("Host", "").lower().partition(":")[0].rstrip(".")
        status = 404
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            if host not in self._by_name:
                return web.Response(status=404, text="unknown host\n")
            if request.path == "/robots.txt":
                status = 200
                return web.Response(text="User-agent: *\nDisallow:\n", content_type="text/plain")
            body = self.page(self.url(host, request.path))
            if body is None:
                return web.Response(status=404, content_type="text/html", text="not found\n")
            status = 200
            return web.Response(body=body, headers={"Content-Type": "text/html; charset=utf-8"})
        finally:
            self.access_log.append(AccessEntry(
                host, request.raw_path, request.method, status, start, time.time(),
                request.headers.get("User-Agent", ""), {},
            ))  # fmt: skip


def _document(title: str, site: str, nav: str, body: str, footer: str) -> str:
    t = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{t}</title></head>'
        f"<body><nav>{nav}</nav>\n<h1>{t}</h1>\n{body}\n<footer>{footer}</footer></body></html>\n"
    )


async def _serve(args: argparse.Namespace) -> None:
    tw = TopicWeb(args.hosts, args.pages, args.seed, port=args.port, latency_s=args.latency)
    await serve_until_signal(
        tw,
        lambda: [
            f"serving {len(tw.hosts)} hosts on 127.0.0.1:{tw.port}",
            f"base rate {tw.base_rate():.4f}; seeds: {' '.join(tw.seed_urls(5))} ...",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    """``python tests/topicweb.py``: serve the topical web until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(prog="python tests/topicweb.py")
    p.add_argument("--hosts", type=int, default=10_000)
    p.add_argument("--pages", type=int, default=10, help="pages per host (about)")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
