"""Error fingerprints: raw tool output -> a grouping key that survives volatile noise.

Two outputs are "the same error" when their keys are equal. The recipe, measured in
``fingerprinting-notes.md``: recognise the error family from real tool output, extract its
anchors first (error codes, exception classes, test names, HTTP statuses) and keep them
verbatim, then mask the volatile rest of the message (timestamps, ids, numbers, paths,
addresses) so a changed line number, temp dir or pid does not split the group.

``fingerprint()`` lives in ``dispatch.py``: its ``_DETECTORS`` are the families in the order they
are tried, each in the module of its ecosystem (``compiled.py``, ``python.py``, ``javascript.py``,
``one_line.py``, ``last_resort.py``) or of its form (``located.py``: a compiler's or linter's findings
behind their location); ``core.py`` holds the key type and the masking they share: names (identifiers,
types, modules, options, file names) stay, values (numbers, ids, hashes, addresses, times, locations,
a path's directories) go.

``group(texts)`` turns a session's outputs into group labels: equal keys, then the token positions
the batch itself shows to be parameters among lines no family recognised (``grouping.py``); the loop
detector runs exactly it.

The package is pure and stdlib-only. It never raises on any ``str`` and its work is bounded:
only a head and a tail window of the input are looked at and every regex is linear-time.
May import nothing of the package but itself: the core (loops) and the engine build on it.
"""

from .core import FINGERPRINT_VERSION, Fingerprint
from .dispatch import fingerprint
from .grouping import group

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint", "group"]
