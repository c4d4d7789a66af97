"""Write ``src/memstream/calendar_words.txt``: the words that name a month, a weekday, a
language or a holiday in the languages the extractor reads (cased scripts), as each writes them
capitalised: months, weekdays and languages from the Unicode CLDR through Babel, holidays from
the ``holidays`` package's names in those languages. A single capitalised word on this list is
not a name (``core.names``).

    pip install babel holidays && python tools/calendar_words.py

Babel and holidays are needed only to regenerate the file; the package reads the file."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import holidays
from babel import Locale

#: the languages whose words are written: the ones of the development sets and the European
#: languages around them, in cased scripts (Latin, Greek, Cyrillic); not those whose month
#: names are common given names elsewhere ("Mei" in Indonesian, Malay and Swahili)
LOCALES = ("en", "de", "es", "fr", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl", "cs", "sk",
           "sl", "hr", "ro", "hu", "tr", "ca", "gl", "et", "lv", "lt", "el", "ru", "uk", "bg",
           "sr")
#: the languages whose names are listed, as each locale writes them
NAMED = ("en", "de", "es", "fr", "it", "pt", "nl", "sv", "da", "no", "fi", "pl", "cs", "ru",
         "uk", "el", "tr", "ar", "he", "hi", "zh", "ja", "ko", "vi", "th", "id", "ro", "hu",
         "bg", "hr", "sr", "sk", "sl", "ca", "eu", "gl", "ga", "cy", "la", "fa", "ur", "bn",
         "pa", "ta", "sw", "af", "is", "et", "lv", "lt")
OUT = Path(__file__).resolve().parents[1] / "src" / "memstream" / "calendar_words.txt"
NAMES = OUT.with_name("first_names.txt")
#: words a holiday's name keeps that are also everyday words or places elsewhere
NOT_HOLIDAYS = {"green", "holy", "santa", "reis", "gras", "natal", "tiradentes",
                "saint-étienne", "saint-maron"}


def words() -> set[str]:
    out: set[str] = set()
    for code in LOCALES:
        loc = Locale.parse(code)
        for table in (loc.months, loc.days):
            for context in ("format", "stand-alone"):
                for name in table[context]["wide"].values():
                    out.add(name)
        for lang in NAMED:
            name = loc.languages.get(lang)
            if name and " " not in name:
                out.add(name)
    # only the words a language writes capitalised: a lowercase one ("aprile", "mei") is
    # capitalised only where a sentence opens (the extractor's weak mentions) or as a name
    return {w.casefold() for w in out if w[:1].isupper()} | holiday_words(out)


def holiday_words(calendar: set[str]) -> set[str]:
    """The one-word names of holidays ("Weihnachten", "Noël", "Navidad"), and the word a
    holiday's name keeps once its weekdays are set aside ("Easter" from "Easter Monday" and
    "Easter Sunday", "Pâques" from "Lundi de Pâques"), when two names agree on it ("Good
    Friday" alone does not make "Good" a holiday); never a given name ("Gloria", "August")."""
    weekdays = {w.casefold() for w in calendar}
    given = {line.strip().casefold() for line in NAMES.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")}
    codes = set(LOCALES) | {"nb"}
    single: set[str] = set()
    kept: dict[str, set[str]] = defaultdict(set)  # word -> the holiday names that keep it
    for country, languages in holidays.list_localized_countries().items():
        if len(country) != 2:
            continue
        for language in languages:
            if language.split("_")[0] not in codes:
                continue
            try:
                days = holidays.country_holidays(country, years=range(2024, 2027),
                                                 language=language)
            except (NotImplementedError, KeyError, ValueError):
                continue
            for named in days.values():
                for name in named.split("; "):
                    words = re.sub(r"\s*\(.*?\)", "", name).split()
                    caps = [w for w in words if w[:1].isupper()]
                    rest = [w for w in caps if w.casefold() not in weekdays]
                    if len(words) == 1 and caps:
                        single.add(words[0])
                    elif len(rest) == 1 and len(rest) < len(caps):
                        kept[rest[0]].add(name)
    found = single | {w for w, names in kept.items() if len(names) > 1}
    return {w.casefold() for w in found if w.isalpha() or "-" in w} - given - NOT_HOLIDAYS


def main() -> None:
    found = sorted(words())
    OUT.write_text("# months, weekdays, language names and holidays in 29 languages (Unicode "
                   "CLDR via Babel, holidays: tools/calendar_words.py)\n" + "\n".join(found) + "\n",
                   encoding="utf-8")
    print(f"wrote {len(found)} words to {OUT}")


if __name__ == "__main__":
    main()
