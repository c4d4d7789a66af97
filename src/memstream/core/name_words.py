"""The words around names, for the extractor (``core.names``): joiners, titles, the words that
give a name its kind, the closed-class words that never start one, German's function words, and
the lists read from the package's data files (calendar words, given names, place names; each
written by a script in tools/)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

#: joiners that stay inside a name between two capitalised words
JOINERS = {"of", "de", "del", "della", "di", "da", "do", "dos", "das", "du", "des", "la", "le",
            "los", "las", "van", "von", "der", "den", "ten", "&", "al"}
#: the joiners that begin a family name in German text, after a given name ("Henrik von
#: Laufen", "Ursula von der Leyen"), where "von" is otherwise a preposition
NOBLE = {"von", "van", "de"}
#: titles: a person follows, and the title stays out of the key
TITLES = {"dr", "mr", "mrs", "ms", "miss", "prof", "sir", "dame", "frau", "herr", "fr", "hr",
           "sr", "sra", "srta", "dra", "don", "doña", "dña", "mme", "mlle", "m", "dott", "sig",
           "sen", "rep", "capt", "gen", "st", "grandma", "grandpa", "granny", "aunt", "uncle",
           "oma", "opa", "tante", "onkel", "familie", "family", "abuela", "abuelo", "tía", "tío",
           "familia", "captain", "doctor", "doctora", "professor", "profesor", "profesora", "mum",
           "mom", "dad", "mama", "papa", "mamá", "papá", "mutti", "vati"}
#: titles written without a full stop
BARE_TITLES = {"frau", "herr", "grandma", "grandpa", "granny", "aunt", "uncle", "oma", "opa",
                "tante", "onkel", "familie", "family", "abuela", "abuelo", "tía", "tío",
                "familia", "captain", "doctor", "doctora", "professor", "profesor",
                "profesora", "mum", "mom", "dad", "mama", "papa", "mamá", "papá", "mutti",
                "vati"}
ORGS = {"inc", "ltd", "llc", "gmbh", "ag", "sa", "s.a", "corp", "co", "university", "universität",
         "universidad", "universidade", "université", "college", "school", "hospital", "clinic",
         "klinik", "clínica", "bank", "verlag", "institute", "institut", "instituto", "group",
         "gruppe", "grupo", "law", "labs", "foundation", "stiftung", "fundación", "kita", "physio",
         "team", "club", "company", "agency", "ministry", "air", "airlines", "airways", "motors",
         "energy", "energie", "energía", "insurance", "versicherung", "seguros", "partners",
         "consulting", "solutions", "systems", "media", "pharmacy", "apotheke", "farmacia",
         "bakery", "bäckerei", "panadería", "elektro", "grundschule", "gymnasium", "escuela",
         "colegio", "école", "scuola"}
#: words that make a name an event (festivals, fairs, conferences, races)
EVENTS = {"festival", "fest", "marathon", "conference", "forum", "fair", "summit", "expo",
           "messe", "feria", "fiesta", "jornadas", "congreso", "kongress", "congrès",
           "convention", "race", "carrera", "lauf", "cup", "championship", "gala", "woche",
           "week", "semana", "tour", "triathlon", "festa", "salon", "salone"}
#: endings of one-word German place names ("Lindenstraße", "Marktplatz")
PLACE_ENDINGS = ("straße", "strasse", "platz", "allee", "gasse", "ufer", "damm", "ring", "see")
#: the endings among them that only names have
NAMED_ENDINGS = ("straße", "strasse", "platz", "allee", "gasse", "see")
PLACES = {"street", "st", "road", "rd", "avenue", "ave", "straße", "strasse", "str", "platz",
           "weg", "calle", "avenida", "plaza", "rue", "park", "city", "lake", "river", "fell",
           "mountain", "island", "bay", "beach", "airport", "station", "bahnhof", "estación",
           "harbor", "harbour", "hall", "pavilion", "building", "tower", "center", "centre",
           "lane", "drive", "square", "way", "hotel", "hostel", "café", "cafe", "restaurant",
           "bar", "pub", "bistro", "gallery", "galerie", "galería", "museum", "museo",
           "musée", "studio", "garden", "gardens", "lago", "see", "río", "valley", "tal",
           "bridge", "brücke", "puente", "market", "markt", "mercado", "ridge"}
#: closed-class words that open sentences and are never names (articles, pronouns,
#: determiners, conjunctions, prepositions, question words) in the languages of the dev suites
#: and their neighbours; measured in docs/entities.md
NEVER = set("""
a an the this that these those my your his her its our their i you he she it we they me him us
them and or but so if when while because as at by for from in into of on to with without
about after before over under between during since until what which who whom whose where why
how is are was were be been do does did has have had will would can could should may might
must not no yes all any some each every both either neither there here then also just only
yet still again once very too also let please ok okay hi hello dear thanks thank re fw fwd
der die das den dem des ein eine einer eines einem einen und oder aber wenn weil als am im
in an auf aus bei mit nach seit von vor zu zur zum über unter für gegen ohne um ich du er sie
es wir ihr ihre ihrer ihren ihrem ihres ihnen mein dein sein unser euer wer was wo wann warum
wie welche welcher welches ist
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
_GERMAN_WORDS = {"der", "die", "das", "und", "ist", "nicht", "mit", "für", "ein", "eine", "auf",
                 "den", "dem", "des", "sich", "ich", "wir", "sie", "bei", "nach", "vom", "zum",
                 "zur", "auch", "noch", "bis", "seit", "wird", "sind", "hat", "haben", "kein",
                 "keine", "am", "um", "im", "beim", "aus", "von", "wegen", "jetzt", "wurde", "ab",
                 "zurück", "kommt", "macht", "ruft", "läuft", "fahren", "einer", "einem", "einen",
                 "ins", "über", "wieder", "heute", "morgen", "gestern", "mein", "meine", "nichts",
                 "zu"}
#: German function words that are English words too
SHARED = {"am", "um", "in", "an", "so", "will", "die", "hat", "war", "also", "bin", "was",
           "man", "ab"}
#: German prepositions that stand before a name without an article ("nach Bamberg", "bei
#: Zalando", "mit Jonas", "über Airbnb"); not those that mostly govern a noun or a time
#: without one ("per Einschreiben", "ohne Nüsse", "zu Hause", "bis Ende", "seit Montag", "ab
#: Mai", "vor Ort", "gegen Abend"); "und" and "oder" join names ("mit Jonas und Mila")
GERMAN_BEFORE = {"nach", "bei", "von", "mit", "aus", "in", "an", "auf", "über", "für", "und",
                  "oder", "via"}
#: words before a German common noun (a name mostly stands without one)
ARTICLES = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einer", "einem", "einen",
             "eines", "beim", "im", "am", "zum", "zur", "vom", "ins", "kein", "keine", "mein",
             "meine", "meinen", "unser", "unsere", "dein", "deine", "sein", "seine", "ihr",
             "ihre", "jede", "jeden", "jeder", "diese", "diesen", "dieser"}
#: German's function words and determiners, by which a text reads as German (``names``)
GERMAN = frozenset(_GERMAN_WORDS | ARTICLES)
#: words before a name that say what it names, in the languages of the sets and their
#: neighbours: a place ("in Lisbon", "nach Bamberg", "en Cádiz") or a person ("with Jonah",
#: "mit Katrin", "con Bruno": one word; "with Skyline Air" is a company); only when its own
#: words say nothing (``names.kind``)
PLACE_BEFORE = frozenset({"in", "near", "nach", "en", "dans", "em", "nel", "nella"})
PERSON_BEFORE = frozenset({"with", "mit", "con", "avec", "com"})
#: words before a name in German text, where a capital alone does not make one
NAME_BEFORE = GERMAN_BEFORE | PLACE_BEFORE | PERSON_BEFORE

_HAND_DATES = set("""
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
fridays saturdays sundays januar februar märz mai juni juli oktober dezember montag dienstag
mittwoch donnerstag freitag samstag sonntag enero febrero marzo abril mayo junio julio agosto
septiembre octubre noviembre diciembre lunes martes miércoles jueves viernes sábado domingo
janvier février mars avril juin juillet août septembre octobre novembre décembre lundi mardi
mercredi jeudi vendredi samedi dimanche
""".split())


def _word_list(name: str) -> frozenset[str]:
    """The words of a list shipped with the package, a word a line ("#" opens a comment)."""
    text = resources.files("memstream").joinpath(name).read_text(encoding="utf-8")
    return frozenset(w for w in (line.strip() for line in text.splitlines())
                     if w and not w.startswith("#"))


#: months, weekdays and language names as the languages around the sets write them
#: capitalised (Unicode CLDR: tools/calendar_words.py), with the list above
DATES = _HAND_DATES | _word_list("calendar_words.txt")


@lru_cache(maxsize=1)
def given_names() -> frozenset[str]:
    """Given names common in some country (``first_names.txt``: tools/first_names.py)."""
    return frozenset(w for w in _word_list("first_names.txt") if w.lower() not in NEVER)


@lru_cache(maxsize=1)
def function_word_names() -> frozenset[str]:
    """Given names that are a function word in some language (``NEVER``: "Ella", "Elle"),
    of four letters or more: inside a sentence, where no function word is capitalised, they
    are names."""
    return frozenset(w for w in _word_list("first_names.txt")
                     if w.lower() in NEVER and len(w) >= 4)


@lru_cache(maxsize=1)
def place_names() -> frozenset[str]:
    """Countries, continents and cities of 100,000 or more, as the keys ``names.key_of`` makes
    (``place_names.txt``: tools/place_names.py)."""
    return _word_list("place_names.txt")
