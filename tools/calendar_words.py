"""Write ``src/memstream/calendar_words.txt``: the words that name a month, a weekday or a
language in the languages the extractor reads (cased scripts), as each writes them
capitalised, from the Unicode CLDR through Babel. A single capitalised word on this list is not
a name (``_entities``).

    pip install babel && python tools/calendar_words.py

Babel is needed only to regenerate the file; the package reads the file."""

from __future__ import annotations

from pathlib import Path

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
    return {w.casefold() for w in out if w[:1].isupper()}


def main() -> None:
    found = sorted(words())
    OUT.write_text("# months, weekdays and language names in 29 languages (Unicode CLDR via "
                   "Babel: tools/calendar_words.py)\n" + "\n".join(found) + "\n",
                   encoding="utf-8")
    print(f"wrote {len(found)} words to {OUT}")


if __name__ == "__main__":
    main()
