"""relevance: nugget functions, loading a user's function, and page extraction."""

from __future__ import annotations

import re
import sys
import types
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from politecrawl.errors import ConfigError
from politecrawl.focus.relevance import (
    CascadeScorer,
    Document,
    EmbeddingScorer,
    KeywordScorer,
    RegexScorer,
    extract_document,
    extract_page,
    load_callable,
    stem,
    tokens,
)

pytestmark = pytest.mark.unit

TOPIC = "steam locomotive, heritage railway"
FILLER = "the people of the town came to see it on a sunny day and stayed for lunch "


def doc(text: str, title: str = "", headings: list[str] | None = None) -> Document:
    return Document("http://x.test/", title, text, headings or [], "utf-8", 1)


RELEVANT = doc(
    "The steam locomotive was restored by the heritage railway. Its boiler was rebuilt and "
    "the locomotive now hauls trains on the railway every weekend. " + FILLER * 3,
    title="Steam locomotives at the heritage railway",
    headings=["Our steam locomotive"],
)
IRRELEVANT = doc(
    "Boil the pasta, then steam the vegetables for five minutes. " + FILLER * 5,
    title="Cooking pasta",
    headings=["Pasta"],
)


def test_stem_folds_plurals_only() -> None:
    assert [stem(w) for w in ("railways", "bodies", "boxes", "churches", "class", "bus")] == [
        "railway", "body", "box", "church", "class", "bus"]  # fmt: skip
    assert tokens("Steam-Locomotives, «heritage» railway’s") == [
        "steam", "locomotives", "heritage", "railway", "s"]  # fmt: skip


def test_keyword_scorer_separates_relevant_from_irrelevant() -> None:
    k = KeywordScorer(TOPIC)
    assert k(RELEVANT) > 0.7
    assert k(IRRELEVANT) < 0.2
    assert k(doc(FILLER * 10, title="Lunch")) == 0.0


def test_plurals_match_the_topic() -> None:
    k = KeywordScorer("steam locomotives")
    assert k(doc("a steam locomotive " + FILLER)) == k(doc("a steam locomotives " + FILLER))


def test_title_and_headings_weigh_in() -> None:
    k = KeywordScorer(TOPIC)
    body = "a steam locomotive on the heritage railway " + FILLER * 4
    plain = k(doc(body, title="News"))
    titled = k(doc(body, title="Steam locomotive"))
    headed = k(doc(body, title="Steam locomotive", headings=["Heritage railway"]))
    assert plain < titled < headed


def test_the_urls_path_words_weigh_in_as_a_title_does() -> None:
    """``sql-createtable.html`` names its page: the path's words count, the host's do not."""
    k = KeywordScorer("sql statements, select queries")
    body = "creates a new table in the current database; the columns and constraints " * 4

    def at(url: str) -> float:
        return k(Document(url, "CREATE TABLE", body, [], "utf-8", 1))

    plain = at("http://docs.test/html/createtable.html")
    named = at("http://docs.test/html/sql-createtable.html")
    assert named == pytest.approx(plain + 0.2 * 0.5)  # half the phrase "sql statement"
    assert at("http://sql.test/html/createtable.html") == pytest.approx(plain)  # host
    assert at("http://docs.test/html/createtable.html?sql=select") == pytest.approx(plain)
    off = KeywordScorer("sql statements, select queries", url_weight=0.0)
    assert off(Document("http://docs.test/sql-select.html", "x", body)) == off(
        Document("http://docs.test/x.html", "x", body)
    )


def test_repetition_saturates() -> None:
    """Boilerplate that repeats a keyword 200 times does not make a page relevant."""
    k = KeywordScorer(TOPIC)
    spam = k(doc("steam " * 200 + FILLER * 3, title="Menu"))
    assert spam < 0.4
    assert k(doc("steam " * 200)) - k(doc("steam " * 20)) < 0.05


def test_longer_pages_need_more_mentions() -> None:
    k = KeywordScorer(TOPIC)
    mention = "a steam locomotive on the heritage railway. "
    assert k(doc(mention + FILLER * 2)) > k(doc(mention + FILLER * 40))


def test_phrases_count_more_than_scattered_words() -> None:
    k = KeywordScorer(TOPIC)
    together = k(doc("steam locomotive and heritage railway " + FILLER * 3))
    apart = k(doc("locomotive steam and railway heritage " + FILLER * 3))
    assert together > apart


def test_a_phrases_words_near_each_other_count_as_part_of_the_phrase() -> None:
    """Users write phrases the page does not say word for word: "delete rows" is "deletes
    the matching rows" there. Near, in any order, counts; far apart does not."""
    k = KeywordScorer("sql statements, insert update and delete rows")
    near = k(doc("this deletes the matching rows. " + FILLER * 3))
    far = k(doc("this deletes. " + FILLER * 3 + " rows."))
    verbatim = k(doc("insert update delete rows. " + FILLER * 3))
    assert near > far
    assert verbatim > near


def test_a_topic_is_read_as_a_user_writes_it() -> None:
    """Semicolons, bars and new lines separate phrases as commas do; a question's frame at a
    phrase's start ("how do I") and possessives ("my") are no keywords, while the same words
    elsewhere may be the topic's own ("I/O", "CAN bus"). A letter of a compound stays:
    "b-tree" is the phrase (b, tree), whose words near each other are the compound, where
    "tree" alone is every tree."""
    k = KeywordScorer("SMTP servers; IMAP | b-tree\nHow do I set up TLS certificates?")
    assert k.phrases == [
        ("smtp", "server"), ("imap",), ("b", "tree"), ("set", "up", "tls", "certificate")
    ]
    asked = KeywordScorer("how can we back up our database, what is a b-tree, how to parse args")
    assert asked.phrases == [("back", "up", "database"), ("b", "tree"), ("parse", "arg")]
    assert KeywordScorer("I/O performance, CAN bus, what's new").phrases == [
        ("i", "o", "performance"), ("can", "bus"), ("s", "new")
    ]
    assert KeywordScorer("sql statements, select queries").phrases == [
        ("sql", "statement"), ("select", "query")
    ]


_QUESTION_WORDS = ("how", "what", "which", "who", "why", "when", "where")


@settings(max_examples=200, deadline=None)
@given(
    topic=st.lists(
        st.sampled_from(
            ["how", "do", "i", "what", "is", "the", "a", "my", "can", "b-tree", "I/O", "tls",
             "backups", "time", "zones", ",", ";", "|", "\n", "?", "e-mail", "does"]
        )
        | st.text(max_size=12),
        max_size=12,
    ).map(" ".join)
)
def test_any_topic_has_keywords_or_is_refused(topic: str) -> None:
    """Whatever a user types: a ConfigError, or at most one phrase per part (parts split at
    , ; | and new lines), each keyword a word of the topic (plural-folded), no possessive, no
    question word; and a page of the topic's own words scores within [0, 1]."""
    parts = re.split(r"[,;|\n]", topic)
    try:
        k = KeywordScorer(topic)
    except ConfigError:
        return
    words = {stem(w) for w in tokens(topic)}
    assert 0 < len(k.phrases) <= len(parts)
    for phrase in k.phrases:
        assert phrase and set(phrase) <= words
        assert not {"my", "our", "your", *_QUESTION_WORDS} & set(phrase)
    assert 0.0 <= k(Document("http://x.test/", topic, topic)) <= 1.0


def test_topic_without_keywords_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        KeywordScorer("the, of, and")


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400), title=st.text(max_size=40))
def test_keyword_scores_stay_in_unit_interval(text: str, title: str) -> None:
    assert 0.0 <= KeywordScorer(TOPIC)(doc(text, title, [title])) <= 1.0


def test_regex_scorer() -> None:
    yes_no = RegexScorer(r"\bsteam\s+locomotives?\b")
    assert yes_no(RELEVANT) == 1.0
    assert yes_no(IRRELEVANT) == 0.0
    graded = RegexScorer("steam", full_at=4)
    assert graded(doc("steam steam")) == 0.5
    assert graded(doc("steam " * 9)) == 1.0
    with pytest.raises(ConfigError):
        RegexScorer("(unclosed")
    with pytest.raises(ConfigError):
        RegexScorer("x", full_at=0)


def user_nugget(document: Document) -> float:
    return 1.0 if "steam" in document.text else 0.0


def test_load_callable() -> None:
    f = load_callable(f"{__name__}:user_nugget")
    assert f(RELEVANT) == 1.0
    loaded: object = load_callable("politecrawl.focus.relevance:KeywordScorer")
    assert loaded is KeywordScorer


@pytest.mark.parametrize(
    "spec",
    ["no_colon", ":f", "mod:", "politecrawl.no_such_module:f",
     "politecrawl.focus.relevance:nothing", "politecrawl.focus.relevance:_CHROME"],
)  # fmt: skip
def test_load_callable_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ConfigError, match="nugget function"):
        load_callable(spec)


def test_embedding_scorer_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    with pytest.raises(ConfigError, match="pip install"):
        EmbeddingScorer("steam trains")


def test_embedding_scorer_with_a_stand_in_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lazy path, with a fake module: one vector per 'is it about steam' bit."""
    seen: list[str] = []

    class FakeModel:
        def __init__(self, name: str, device: str) -> None:
            assert device == "cpu"

        def encode(self, texts: list[str], normalize_embeddings: bool) -> list[list[float]]:
            seen.extend(texts)
            return [[1.0, 0.0] if "steam" in t.lower() else [0.0, 1.0] for t in texts]

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    e = EmbeddingScorer("steam trains", max_chars=50)
    assert e(RELEVANT) == 1.0
    assert e(doc("pasta", "Cooking")) == 0.0
    assert all(len(t) <= 50 for t in seen[1:])


def test_cascade_calls_the_expensive_scorer_only_when_unsure() -> None:
    calls: list[Document] = []

    def expensive(d: Document) -> float:
        calls.append(d)
        return 0.99

    c = CascadeScorer(KeywordScorer(TOPIC), expensive, low=0.2, high=0.7)
    assert c(IRRELEVANT) < 0.2 and c(RELEVANT) > 0.7
    assert calls == []
    unsure = doc("a steam locomotive " + FILLER * 2)
    assert 0.2 <= KeywordScorer(TOPIC)(unsure) <= 0.7
    assert c(unsure) == 0.99 and c.expensive_calls == 1


HTML = """<!DOCTYPE html><html><head><meta charset="iso-8859-1">
<title>Les locomotives à vapeur</title><base href="/base/"><style>.x{color:red}</style></head>
<body><nav><a href="/">Home</a> menu menu</nav>
<h1>Locomotives</h1><h2>Été 1905</h2><h4>not a heading</h4>
<p>The boiler was rebuilt in 1905. Read <a href="castle.html">the Castle class story</a> for
the whole history of the engine shed.</p>
<script>var hidden = "script words";</script><noscript>noscript words</noscript>
<aside>sidebar words</aside><footer>footer words</footer></body></html>"""


def test_extract_document() -> None:
    d = extract_document(HTML.encode("latin-1"), "http://x.test/a/b.html", "text/html", 2)
    assert d.title == "Les locomotives à vapeur"
    assert d.headings == ["Locomotives", "Été 1905"]
    assert "boiler was rebuilt" in d.text and "the Castle class story" in d.text
    for chrome in ("menu", "script words", "noscript words", "sidebar", "footer", "color"):
        assert chrome not in d.text
    assert (d.url, d.depth, d.charset) == ("http://x.test/a/b.html", 2, "cp1252")


def test_extract_page_link_contexts() -> None:
    _doc, ctx = extract_page(HTML.encode("latin-1"), "http://x.test/a/b.html", "text/html")
    around = ctx["http://x.test/base/castle.html"]  # resolved against <base href>
    assert "boiler was rebuilt" in around and "engine shed" in around
    assert ctx["http://x.test/"] == "Home menu menu"
    _doc, none = extract_page(HTML.encode("latin-1"), "http://x.test/", None, contexts=False)
    assert none == {}


def test_extract_survives_garbage() -> None:
    d = extract_document(b"\xff\xfe<<<>>>\x00 not html", "http://x.test/", None)
    assert isinstance(d.text, str) and d.title == ""


def test_symbols_and_emoji_are_no_keywords() -> None:
    """A token with no letter or digit is no keyword: "🚀 database indexes 🚀" read as
    ('🚀', 'database', 'index', '🚀') halved every page's score (outside probe, F1)."""
    plain = KeywordScorer("database indexes")
    assert KeywordScorer("🚀 database indexes 🚀").phrases == plain.phrases == [
        ("database", "index")
    ]
    assert KeywordScorer("★ ☆, b-tree").phrases == [("b", "tree")]
    page = doc("A database index speeds up queries; the database keeps each index sorted.")
    assert KeywordScorer("🚀 database indexes 🚀")(page) == plain(page)


_SYMBOLS = st.text(
    alphabet=st.characters(categories=["So", "Sm", "Sc", "Sk", "Po", "Pd"]), min_size=1,
    max_size=3,
).filter(
    lambda s: not any(c.isalnum() or c in ",;|" for c in unicodedata.normalize("NFKC", s))
)  # fmt: skip  (phrase separators aside; a few symbols are letters once folded: ⻳ is 龟)


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(st.sampled_from(["database", "indexes", "b-tree", "scans", "tls"]),
                   min_size=1, max_size=4),
    symbols=st.lists(_SYMBOLS, min_size=1, max_size=3),
)  # fmt: skip
def test_symbols_anywhere_change_no_phrase(words: list[str], symbols: list[str]) -> None:
    """Symbols put between the words of a topic (emoji, stars, arrows) change none of its
    phrases."""
    mixed = [*symbols[:1], *words[:1], *symbols[1:], *words[1:]]
    assert KeywordScorer(" ".join(mixed)).phrases == KeywordScorer(" ".join(words)).phrases


@pytest.mark.parametrize(
    ("topic", "phrase"),
    [
        ("Should I use threads or asyncio?", ("use", "thread", "asyncio")),
        ("When should I use threads or asyncio?", ("use", "thread", "asyncio")),
        ("Can I use SQLite with Django?", ("use", "sqlite", "django")),
        ("Do I need a virtualenv?", ("need", "virtualenv")),
        ("Does asyncio support cancellation?", ("asyncio", "support", "cancellation")),
        ("Are there free hosting options?", ("free", "hosting", "option")),
        ("Could we cache query results", ("cache", "query", "result")),
        ("Would you recommend gunicorn?", ("recommend", "gunicorn")),
        ("Will they deprecate distutils?", ("deprecate", "distutil")),
        ("Python's GIL", ("python", "gil")),
    ],
)
def test_a_yes_no_questions_frame_is_no_keyword(topic: str, phrase: tuple[str, ...]) -> None:
    """A yes/no question's verb and subject at a phrase's start ("should I", "can I", "are
    there", "does ... ?") are no keywords, as "how do I" was not; nor a possessive 's."""
    assert KeywordScorer(topic).phrases == [phrase]


def test_a_question_after_a_comma_and_and_loses_its_frame_too() -> None:
    assert KeywordScorer("json files, and how do I parse them").phrases == [
        ("json", "file"), ("parse", "them")
    ]


def test_words_that_are_a_topics_own_keep_their_place() -> None:
    """Section 17's caution: the frame's words elsewhere, or without a subject or a question
    mark after them, stay keywords; a contraction's "s" too ("what's new": the bed's)."""
    assert KeywordScorer("CAN bus?, US tax law, to-do lists, may day").phrases == [
        ("can", "bus"), ("us", "tax", "law"), ("do", "list"), ("may", "day")
    ]
    assert KeywordScorer("will writing, do lists").phrases == [("will", "writing"), ("do", "list")]


@settings(max_examples=150, deadline=None)
@given(
    verb=st.sampled_from(["do", "does", "can", "could", "should", "would", "will", "may", "are"]),
    subject=st.sampled_from(["I", "we", "you", "they", "there"]),
    rest=st.lists(st.sampled_from(["threads", "asyncio", "sqlite", "b-tree", "I/O", "tls"]),
                  min_size=1, max_size=4),
    mark=st.sampled_from(["", "?"]),
)  # fmt: skip
def test_any_yes_no_frame_leaves_the_rest(
    verb: str, subject: str, rest: list[str], mark: str
) -> None:
    body = " ".join(rest)
    asked = KeywordScorer(f"{verb.capitalize()} {subject} {body}{mark}")
    assert asked.phrases == KeywordScorer(body).phrases


def test_c_plus_plus_and_c_sharp_are_words_not_the_letter_c() -> None:
    """The topic "C++" read as the one letter 'c' found every C-API page (42 of 100
    "relevant"): it is the word c++ in the topic and the page alike."""
    cpp = KeywordScorer("C++")
    assert cpp.phrases == [("cpp",)]
    assert KeywordScorer("C#, F#").phrases == [("csharp",), ("fsharp",)]
    capi = doc("The C API: a C function, a C struct and C macros; see c for more on c.",
               title="C API reference")  # fmt: skip
    templates = doc("C++ templates: a C++ class template, and C++17 fold expressions.",
                    title="C++ templates")  # fmt: skip
    assert cpp(capi) == 0.0
    assert cpp(templates) >= 0.5
    assert KeywordScorer("C#")(templates) == 0.0
    assert tokens("a C++ class, c#, f# and abc++") == [
        "a", "cpp", "class", "csharp", "fsharp", "and", "abc"
    ]


def test_the_topic_is_said_as_read() -> None:
    from politecrawl.focus.topic import described, read_topic

    assert described(read_topic("database indexes, b-tree, index scans")) == (
        'topic read as: "database index", "b tree", "index scan"'
    )
    assert described(read_topic("C++, C#")) == 'topic read as: "c++", "c#"'
    assert "one letter, 'c'" in described(read_topic("C"))


_FULL_WIDTH = {c: c + 0xFEE0 for c in range(0x21, 0x7F)}


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(st.sampled_from(["Database", "indexes", "b-tree", "TLS", "C++", "scans"]),
                   min_size=1, max_size=4),
    cut=st.integers(1, 5),
)  # fmt: skip
def test_full_width_letters_and_soft_hyphens_read_as_plain_words(
    words: list[str], cut: int
) -> None:
    """Full-width ＦＵＬＬ letters are folded (NFKC) and soft hyphens removed, in the topic
    and the page text alike: the same phrases, and a page so written scores as plain."""
    plain = " ".join(words)
    wide = plain.translate(_FULL_WIDTH)
    shy = " ".join(w[:cut] + "\u00ad" + w[cut:] for w in words)
    k = KeywordScorer(plain)
    assert KeywordScorer(wide).phrases == KeywordScorer(shy).phrases == k.phrases
    assert tokens(wide) == tokens(shy) == tokens(plain)
    page = doc(f"{plain}. More on {plain} here.")
    assert k(doc(f"{wide}. More on {wide} here.")) == k(doc(f"{shy}. More on {shy} here.")) == k(
        page
    )
