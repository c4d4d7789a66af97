"""How likely a text is written in a given language, read by langid.py's model: a naive
Bayes classifier over byte n-grams of 97 languages (Lui and Baldwin, 2012), shipped inside the
``py3langid`` wheel (BSD), so nothing is downloaded. The entity extractor (``core.names``) asks
it only where its own reading of a language is in doubt: a short German note with too few of
German's function words to tell ("Abholung spätestens 16:30 Uhr"), where every noun is
capitalised and would otherwise read as a name.

The model is read at the first question (about half a second: it is stored compressed), once
per process; a reading costs about 60 µs for a note.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["probability"]

_lock = threading.Lock()
_model: list[Any] = []  # the identifier once read; [None] when the package is missing


def _identifier() -> Any:
    if not _model:
        with _lock:
            if not _model:
                try:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier
                except ImportError:  # an install without it: the extractor's own reading
                    _model.append(None)
                else:
                    _model.append(LanguageIdentifier.from_model_file(MODEL_FILE,
                                                                     norm_probs=True))
    return _model[0]


def probability(text: str, language: str) -> float:
    """The probability that ``text`` is written in ``language`` (an ISO 639-1 code: "de"),
    among the model's 97 languages; 0.0 when ``language`` is not the likeliest one or the
    model is not installed."""
    identifier = _identifier()
    if identifier is None or not text.strip():
        return 0.0
    best, p = identifier.classify(text)
    return float(p) if best == language else 0.0
