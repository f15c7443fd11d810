"""Text a student can influence (names, file names, exception messages, printed output), made safe to
write: ``one_line`` keeps it on one line with no control or invisible formatting characters, so it
cannot start a new CSV record, Markdown line or section, nor hide what it says.

Used by every file the grader writes (``gradebook.py``, ``canvas.py``, ``similarity.py``) and to tell
apart student names that only such characters separate (``submissions.py``).

Leaves out: Markdown and spreadsheet escaping (``gradebook._md``, ``canvas.guard``).
"""

from __future__ import annotations

import re
import unicodedata


def one_line(text) -> str:
    """``'a\\nb\\x1b[31m'`` -> ``'a ⏎ b[31m'``: one line, no control or invisible formatting characters."""
    text = re.sub(r"\r\n|[\r\n\u2028\u2029\x85\x0b\x0c]", " ⏎ ", str(text)).replace("\t", " ")
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn"))
