"""Named things in a text, found offline and in any language written in a cased script: people,
places, organisations, products, identifiers. A pure function of the text (no model, no
network), used by the store's graph part at write time and by search for a query's names.

How a name is found, in order of the evidence it carries:

- a run of capitalised words, with the lowercase joiners names contain between them ("Bank of
  America", "Universidad de Sevilla", "Ludwig van Beethoven"); a title in front ("Dr.",
  "Frau", "Sra.") makes it a person and stays out of its key, so "Dr. Feld" and "Feld" are one;
- an identifier: a word with digits and capitals or a ``#`` ("DSP-430", "PR #301",
  "RE-2025-014");
- a possessive ("Theo's") ends a name.

- a quoted title ("The Salt Orchard", «Mareas de sal») is one name, a work.

A single word that names a month, a weekday, a language or a holiday (as CLDR and the
``holidays`` package write them capitalised in the European languages: ``calendar_words.txt``)
is not a name, unless a title or a possessive says it is ("Aunt April", "April's").

A mention is *strong* when its position says it is a name: inside a sentence, or several words
long, or with a title, a possessive or an identifier's shape. A single capitalised word that
opens a sentence is strong when the tokenizer finds it far likelier capitalised ("Netflix") or
it is a common given name ("Marta": ``first_names.txt``); otherwise ("Never", "Submitted") it
is *weak*: the graph keeps it, and counts it as an entity only once some strong mention of the
same name confirms it. German capitalises every noun, so in German text a single word inside a
sentence is strong only after a preposition, as a given name, as a street or a lake, or
written as no noun is ("TÜV", "MediaMarkt"); a German genitive ("Annas Geburtstag") names its
owner, and "von" after a given name begins a family name ("Henrik von Laufen"). The few
closed-class words that open sentences (articles, pronouns, question words) are never names,
nor are they inside a sentence, unless they are common given names ("with Ella"). An
identifier is a name of its own, with no joiner ("F-12 de Seguros Nube"). A country or a city
(``place_names.txt``) is a place. The figures (precision, recall and kinds on the entities
dev set, held out by note) are in docs/entities.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from . import language
from .casing import casing, common_word
from .name_words import (
    BARE_TITLES,
    DATES,
    EVENTS,
    GERMAN,
    JOINERS,
    NAME_BEFORE,
    NAMED_ENDINGS,
    NEVER,
    NOBLE,
    ORGS,
    PERSON_BEFORE,
    PLACE_BEFORE,
    PLACE_ENDINGS,
    PLACES,
    SHARED,
    TITLES,
    function_word_names,
    given_names,
    place_names,
)

__all__ = ["Mention", "extract", "key_of", "without"]


@dataclass(frozen=True, slots=True)
class Mention:
    name: str  #: as written, without title or possessive
    key: str  #: what makes two mentions one entity (``key_of``)
    #: person, place, organization, event, work, id, date, thing (a word in capitals) or name
    #: (the words do not tell: the worker reads those two from the embedder, cognition.kinds)
    kind: str
    strong: bool  #: whether its position alone says it is a name


#: words (with the full stop that follows one: "Dr.", "room."), and the marks that end a
#: name or a sentence
_TOKEN = re.compile(r"#?\w[\w'’.&-]*|&|[.!?;:,()\[\]\"“”„«»‹›\n—–|/]")
#: a word, an apostrophe and an ending ("I'm", "O'Brien": ``_contraction`` tells them apart)
_CONTRACTION = re.compile(r"^(\w+)['’](\w+)$")
_END = set(".!?;:,()[]\"“”„«»‹›\n—–|/")
#: marks that end a name but not a sentence
_INSIDE = set(",;()\"“”„«»‹›/")
#: quotation marks that open a quoted title, and the marks that may close each
_QUOTES = {"\"": "\"", "“": "”\"", "„": "“”\"", "«": "»", "»": "«", "‹": "›", "”": "”"}
#: the most words a quoted title has ("Gone with the Wind"; longer is a quotation)
TITLE_WORDS = 6
#: any quotation mark: a text without one holds no quoted title (``_quoted_titles`` is skipped)
_ANY_QUOTE = re.compile("[" + re.escape("".join(_QUOTES)) + "]")
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_ID = re.compile(r"^(?=.*\d)(?=.*[A-Z#])[#A-Z0-9][\w-]*$")

#: how much more likely (log) the default embedder's tokenizer finds a word capitalised than in
#: lowercase (``casing``), from which a single capitalised word that opens a sentence is taken
#: for a name
NAME_CASING = 3.0

#: below this (log), a capitalised word that opens a run of them is a common word the sentence
#: capitalised ("Took Mandarine", "Neue Stelle bei ..."), not the run's first name
OPENER_CASING = -2.5

#: how much likelier (log) the tokenizer may find a given name in lowercase before it is taken
#: for a common word that opens a sentence ("Will you", "Met Ana"; not "Marta", "Lena")
GIVEN_CASING = -1.5


#: the language model's probability of German at which a text whose function words do not
#: tell reads as German (``_reads_german``): chosen on one half of the entities development
#: set (0.5 lost a name there, 0.7 and 0.9 read it the same), the other half reported
GERMAN_READING = 0.7
_GERMAN_LETTERS = re.compile("[äöüßÄÖÜ]")
_KEY_SPLIT = re.compile(r"[\s.]+")
_KEY_DROP = re.compile(r"[^\w#]+")


@lru_cache(maxsize=1 << 16)
def key_of(name: str) -> str:
    """The key that makes two written names one entity: case, accents, punctuation and a
    leading title set aside ("Dr. Feld" and "feld"; "Andrés" and "Andres")."""
    words = [w for w in _KEY_SPLIT.split(name) if w]
    while len(words) > 1 and words[0].lower().rstrip(".") in TITLES:
        words = words[1:]
    text = " ".join(words)
    text = text.casefold()
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text)
                       if not unicodedata.combining(c))
    return _KEY_DROP.sub(" ", text).strip()


def without(text: str, names: Iterable[str]) -> str:
    """``text`` with each of ``names`` (as written in it, with a possessive: "Renee's",
    "Annas") left out, and the spaces it leaves closed up."""
    for name in sorted(set(names), key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?:['’]s?|s)?(?!\w)", " ", text)
    return " ".join(text.split())


def _is_cap(word: str) -> bool:
    return word[:1].isupper() or (word[:1] == "#" and len(word) > 1)


def _reads_german(text: str, lowered: list[str]) -> bool:
    """Whether a text reads as German: by its function words (``_is_german``), or, where some
    stand in it (or a letter of German's alphabet: ä, ö, ü, ß) but too few to tell, by a
    language model of the whole text (``core.language``), at ``GERMAN_READING`` or more."""
    hinted = not GERMAN.isdisjoint(lowered)
    if hinted and _is_german([t for t in lowered if t not in _END]):
        return True
    if not hinted and _GERMAN_LETTERS.search(text) is None:
        return False
    return language.probability(text, "de") >= GERMAN_READING


def _is_german(lowered: list[str]) -> bool:
    """Whether lowercased words read as German: its function words, often enough (a short
    note needs one that English and names do not share: "nach", not "am" or "der")."""
    hits = [w for w in lowered if w in GERMAN]
    return len(hits) >= max(2, len(lowered) // 12) or (
        len(lowered) <= 24 and any(w not in SHARED and w not in JOINERS for w in hits))


@lru_cache(maxsize=1 << 16)
def _kind(words: tuple[str, ...], titled: bool, before: str = "") -> str:
    if titled:
        return "person"
    if len(words) == 1 and _ID.match(words[0]):
        return "id"
    if len(words) == 1 and words[0].lower() in DATES:
        return "date"
    # a word after a joiner is a name's, not its kind's ("Pablo del Río" is a person)
    lowered = [w.lower().rstrip(".") for n, w in enumerate(words)
               if n == 0 or words[n - 1].lower() not in JOINERS]
    if any(w in EVENTS for w in lowered) and len(words) > 1:
        return "event"
    if any(w in ORGS for w in lowered) or (len(words[-1]) > 1 and words[-1].isupper()
                                             and len(words) > 1):
        return "organization"
    if any(w in PLACES for w in lowered) or \
            lowered[-1].rsplit("-", 1)[-1].endswith(PLACE_ENDINGS):
        return "place"
    if len(words) == 1 and words[0].isupper() and len(words[0]) > 1:
        return "thing"
    if "&" in words:  # "Halden & Rowe", "Brenner & Söhne": a firm
        return "organization"
    given = words[0] in given_names() or words[0] in function_word_names()
    if not given and key_of(" ".join(words)) in place_names():  # "Porto", "München"
        return "place"
    if before in PLACE_BEFORE:
        return "place"
    if before in PERSON_BEFORE and len(words) == 1:  # "with Skyline Air": a company
        return "person"
    if given and len(words) <= 4:  # "Marta", "Imogen Vale"
        return "person"
    return "name"  # a person, a place, a product: the words alone do not tell


def extract(text: str) -> list[Mention]:
    """The named things ``text`` mentions, each once (the first way it is written), in the
    order they appear."""
    tokens = _TOKEN.findall(text)
    caps = [n for n, t in enumerate(tokens) if t[0].isupper() or t[0] == "#"]
    if not caps:
        return []
    lowered = [t.lower() for t in tokens]
    german = _reads_german(text, lowered)
    out: dict[str, Mention] = {}
    titles = _quoted_titles(tokens) if _ANY_QUOTE.search(text) else {}
    done = 0  # tokens before this one belong to a name already read
    for i in caps:
        if i < done:
            continue
        if i in titles:  # «Mareas de sal»: a quoted title is one name, a work
            words = tokens[i:titles[i]]
            _keep(out, words, False, True, kind="work")
            done = titles[i]
            continue
        tok = tokens[i].rstrip(".")
        bare = _POSSESSIVE.sub("", tok) if tok[-1:] in "s'’" else tok
        never = bare.lower() in NEVER and not _is_id(bare)
        if not _is_cap(bare) or (never and bare not in _named_anyway()) or _contraction(bare):
            continue
        back = i - 1  # the sentence opens here when only brackets and quotes stand before
        while back >= 0 and tokens[back] in _INSIDE and tokens[back] not in ",;":
            back -= 1
        start_initial = back < 0 or (tokens[back] in _END and tokens[back] not in ",;") or \
            _ends_sentence(tokens[back])
        if never and start_initial:
            continue  # "Ella" opening a sentence is Spanish's "she"; "with Ella", a name
        span: list[str] = []
        titled = False
        genitive = False  # a German genitive ("Annas Geburtstag") ends the span
        j = i
        while j < len(tokens):
            t = tokens[j]
            if t in _END:
                break
            word = t
            low = lowered[j]
            # in German "von" is mostly a preposition ("Pate von Ella"); after a given name,
            # before a word that is none, it is the particle of a family name
            noble = bool(span) and german and low in NOBLE and span[0] in given_names()
            if span and low in JOINERS and (not german or low == "&" or noble) and \
                    not _is_id(span[-1]):
                k = j  # "van der Berg", "de la Rioja": joiners run on to a capital
                while k < len(tokens) and k - j < 3 and lowered[k] in JOINERS:
                    k += 1
                if k < len(tokens) and _is_cap(tokens[k]) and lowered[k] not in NEVER and \
                        not _is_id(tokens[k].rstrip(".")) and \
                        not (noble and _POSSESSIVE.sub("", tokens[k].rstrip("."))
                             in given_names()):
                    span.extend(tokens[j:k])
                    j = k
                    continue
            if not _is_cap(word) or (span and (low.rstrip(".") in NEVER or _contraction(word))) or \
                    (span and _is_id(word.rstrip(".")) != _is_id(span[-1])):
                break  # an identifier is a name of its own
            genitive = not span and german and _genitive(word, tokens[j + 1]
                                                         if j + 1 < len(tokens) else "")
            if not span and ((low != _POSSESSIVE.sub("", low) and
                              _POSSESSIVE.sub("", low) in BARE_TITLES) or
                             (genitive and low[:-1] in BARE_TITLES)):
                j += 1  # "Mum's", "Oma's", "Papas Auto": a kinship word, not a name
                break
            if low.rstrip(".") in TITLES and (word.endswith(".") or low in BARE_TITLES):
                if span and not titled:  # a title starts a name of its own
                    break
                titled = True
                span.append(word)
                j += 1
                continue
            possessive = genitive or (word[-1] in "s'’" and len(word) > 2 and
                                      bool(_POSSESSIVE.search(word)))
            clean = word[:-1] if genitive else _POSSESSIVE.sub("", word) if possessive else word
            # a full stop after a word ends the sentence, unless the word is a title
            stop = clean.endswith(".")
            clean = clean.rstrip(".")
            if clean:
                span.append(clean)
            j += 1
            if possessive or stop:
                break
        names = [w for w in span if w.lower().rstrip(".") not in TITLES or not titled]
        while names and names[-1].lower() in JOINERS:
            names.pop()
        if names:
            single = len(names) == 1
            # "Theo's", "Annas Geburtstag": a possessive mostly follows a person
            owned = genitive or _possessive_at(tokens, j)
            strong = titled or not single or _is_id(names[0]) or owned or \
                (not start_initial and not german) or \
                (german and i > 0 and lowered[i - 1] in NAME_BEFORE) or \
                (german and single and given_name(names[0])) or \
                (german and single and _street_or_lake(names[0])) or \
                (german and not start_initial and _shaped_like_a_name(names[0])) or \
                (start_initial and not german and (casing(names[0]) or 0.0) > NAME_CASING) or \
                (start_initial and single and given_name(names[0]))
            found = [(names, strong)]
            if start_initial and not titled and len(names) > 1 and \
                    not _is_id(names[0]) and names[1].lower() not in JOINERS:
                # "Met Marta Silva": the opening word may be a verb, so the rest is a
                # mention too (weak: "Brodie Mills" must not make "Mills" a name); when the
                # tokenizer finds the opening word likelier lowercase ("Took", "Neue"), the
                # whole run is weak and the rest is the name, read as inside a sentence
                # ("Took Mandarine to the vet"; in German "Neue Stelle" is no name); so too
                # when the opening word stands before a given name ("Sent Denise the form",
                # "Met Marta Silva": ``_before_a_given_name``) or the run calls someone by
                # name ("Bye Joanna!": ``_greets``)
                opener = casing(names[0])
                if (opener is not None and opener < OPENER_CASING and
                        not given_name(names[0])) or _before_a_given_name(names) or \
                        _greets(names, tokens[j] if j < len(tokens) else ""):
                    rest = names[1:]
                    found = [(names, False), (rest, len(rest) > 1 or not german or
                                              given_name(rest[0]) or _street_or_lake(rest[0]))]
                else:
                    found = [(names, strong), (names[1:], False)]
            before = lowered[i - 1] if i > 0 else ""
            for words, sure in found:
                _keep(out, words, titled or owned, sure, before if words is names else "")
        done = max(j, i + 1)
    return list(out.values())


def _greets(names: list[str], after: str) -> bool:
    """Whether a run of capitals that opens a sentence calls someone by name: a word, then a
    given name, then a comma or an exclamation mark (``after``), and nothing in its words
    that makes the two one name ("Hey Joanna!", "Thanks Mel,"; not "San Diego," a place,
    nor "Marta Silva,", nor "Imogen Vale called")."""
    return len(names) == 2 and after in {",", "!"} and _opener_of(names)


def _before_a_given_name(names: list[str]) -> bool:
    """Whether the first word of a run of capitals that opens a sentence stands before a name
    rather than in it: a common word (``casing.common_word``), in a run of two or three words
    that ``_opener_of`` reads ("Sent Denise the form", "Ask Priscilla about it", "Met Marta
    Silva"; not "Hoka Clifton" or "Haruto Blaise", whose first words are no common words). A
    verb or a greeting opens a sentence far more often than a name whose second word is a
    given name."""
    return 2 <= len(names) <= 3 and common_word(names[0]) and _opener_of(names)


def _opener_of(names: list[str]) -> bool:
    """Whether a run's first word may open it rather than belong to it: it is no given name,
    the second is a given name on its own evidence (``given_name``), and the run's words make
    it no place, firm or event (not "San Diego", "Marta Silva")."""
    return names[0] not in given_names() and given_name(names[1]) and \
        _kind(tuple(names), False) == "name"


def _genitive(word: str, after: str) -> bool:
    """Whether a capitalised word is a German genitive before the noun it owns, written
    without an apostrophe ("Annas Geburtstag", "Mias Schule", "Papas Kreditkarte"): a given
    name or a kinship word and an "s", itself no given name ("Jonas", "Niklas"), before a
    capitalised word."""
    stem = word[:-1]
    return word.endswith("s") and len(stem) > 1 and _is_cap(after) and after not in _END and \
        word not in given_names() and (stem in given_names() or stem.lower() in BARE_TITLES)


def _shaped_like_a_name(word: str) -> bool:
    """Whether a German word is written as no common noun is: in capitals ("beim TÜV", "die
    DAK") or with a capital after a lowercase letter ("MediaMarkt", "eBay"; not the compound
    "Outlook-Problem")."""
    letters = [c for c in word if c.isalpha()]
    return len(letters) > 1 and (all(c.isupper() for c in letters) or
                                 any(a.islower() and b.isupper() for a, b in pairwise(word)))


@lru_cache(maxsize=1)
def _named_anyway() -> frozenset[str]:
    """The function words that are names inside a sentence ("with Ella", "von Ella":
    Spanish's "ella"): common given names (``function_word_names``) the tokenizer does not
    find much likelier lowercase."""
    return frozenset(w for w in function_word_names()
                     if (score := casing(w)) is None or score > GIVEN_CASING)


def _contraction(word: str) -> bool:
    """Whether a capitalised word is a contraction, not a name: a function word, a single
    letter or a negation before an apostrophe and a lowercase ending ("I'm", "I've", "Don't",
    "We're", "J'ai"; not "O'Brien", "D'Angelo")."""
    m = _CONTRACTION.match(word)
    return m is not None and m[2].isalpha() and m[2].islower() and (
        m[1].lower() in NEVER or len(m[1]) == 1 or m[2] == "t")


def _is_id(word: str) -> bool:
    """Whether a word is an identifier: digits and capitals, or a "#" ("DSP-430", "#301")."""
    return not word.isalpha() and bool(_ID.match(word))


def _ends_sentence(word: str) -> bool:
    """Whether a word carries the full stop of its sentence ("room.", "7.", not "Dr.", "J."
    or "e.g.")."""
    if not word.endswith("."):
        return False
    bare = word.rstrip(".")
    last = bare.rsplit(".", 1)[-1]  # "e.g." is an abbreviation, "example.com." ends one
    return (len(last) > 1 or last.isdigit()) and bare.lower() not in TITLES


def _keep(out: dict[str, Mention], words: list[str], titled: bool, strong: bool,
          before: str = "", kind: str | None = None) -> None:
    """Add a mention (a weak one becomes strong when the text also holds it strongly);
    ``before``: the word before it, lowercased; ``kind``: when the text already says it."""
    name = " ".join(words)
    key = key_of(name)
    if len(words) == 1 and not titled and words[0].casefold() in DATES:
        return  # a month, a weekday, a language, a holiday: not a name ("April's" still is)
    if len(words) > 1 and _calendar_run(words):
        return  # "Monday June", "Thursday Dec": a date
    if key and key not in out:
        out[key] = Mention(name, key, kind or _kind(tuple(words), titled, before), strong)
    elif key and strong and not out[key].strong:
        out[key] = Mention(out[key].name, key, out[key].kind, True)


def _calendar_run(words: list[str]) -> bool:
    """Whether a run of capitals is a date: a calendar word (``DATES``), then calendar words or
    their short forms (the first three or four letters of one: "Thursday Dec", "Monday June",
    "Sábado Sept")."""
    return words[0].casefold() in DATES and all(
        w.casefold().rstrip(".") in DATES or w.casefold().rstrip(".") in _date_prefixes()
        for w in words[1:])


@lru_cache(maxsize=1)
def _date_prefixes() -> frozenset[str]:
    """The first three and four letters of each calendar word (``DATES``): the short forms
    of months and weekdays in the languages CLDR writes them."""
    return frozenset(w[:n] for w in DATES for n in (3, 4) if len(w) > n)


def _quoted_titles(tokens: list[str]) -> dict[int, int]:
    """Quoted titles (a book, a series, a podcast: "The Salt Orchard", «Mareas de sal»): for
    each, its first word's index -> the index of the closing mark. A title opens with a
    capital, inside a sentence (not after a colon: that quotes speech), and holds at most
    ``TITLE_WORDS`` words and no punctuation."""
    out: dict[int, int] = {}
    q = 0
    while q < len(tokens) - 2:
        closers = _QUOTES.get(tokens[q])
        if closers is None or not _is_cap(tokens[q + 1]) or \
                (q > 0 and tokens[q - 1] in (":", "\n")) or q == 0:
            q += 1
            continue
        c = q + 1
        while c < len(tokens) and c - q <= TITLE_WORDS + 1 and tokens[c] not in _END:
            c += 1
        if c < len(tokens) and tokens[c] in closers and c - q <= TITLE_WORDS + 1:
            out[q + 1] = c
            q = c
        q += 1
    return out


def _street_or_lake(word: str) -> bool:
    """Whether a German word names a street, a square or a lake by its ending ("in der
    Hauptstraße", "an den Bodensee"), where a capital after an article says nothing."""
    low = word.lower()
    return any(low.endswith(e) and len(low) > len(e) + 2 for e in NAMED_ENDINGS)


def given_name(word: str) -> bool:
    """Whether a capitalised word that opens a sentence is a given name on its own evidence:
    common as a given name somewhere, and not much likelier a common word in lowercase."""
    if word not in given_names():
        return False
    score = casing(word)
    return score is None or score > GIVEN_CASING


def _possessive_at(tokens: list[str], j: int) -> bool:
    """Whether the span that ended before ``tokens[j]`` ended on a possessive: not when a
    function word follows, where the "'s" is a verb ("Life's too short", "Painting's a fun
    way"; "Theo's bike" is a possessive)."""
    return j > 0 and bool(_POSSESSIVE.search(tokens[j - 1])) and len(tokens[j - 1]) > 2 and \
        not (j < len(tokens) and tokens[j].lower() in NEVER)
