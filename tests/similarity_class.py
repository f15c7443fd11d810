"""A synthetic class for the similarity report (issue #37.5): 30 students answer a long exercise (BPE
training, eight steps) each in their own way, five of them copied a classmate's answer and disguised it
(every name changed, independent statements reordered, comments and blank lines added), and everyone
answers a short exercise (a softmax) in nearly the same three lines, as a real class does.

An honest answer picks, for each of the eight steps, one of three ways people write it, and names of
its own; so two honest answers share a step a third or a quarter of the time, as answers built from one lecture do.

``synthetic_class(seed)`` -> (``{student: long answer}``, ``{student: short answer}``, the copied pairs).
"""

from __future__ import annotations

import random
import re

STARTER = '''def bpe_train(words, n_merges):
    """Learn ``n_merges`` merges from a list of words (each split into characters plus '</w>')."""
    raise NotImplementedError("count the pairs, merge the most frequent, repeat")
'''
HEAD = 'def bpe_train(words, n_merges):\n    """Learn ``n_merges`` merges from a list of words (each split into characters plus \'</w>\')."""\n'
# each step: three ways to write it (names in CAPS are the student's own: renamed per student)
STEPS = [
    ["COUNTS = Counter(words)\n", "COUNTS = {W: words.count(W) for W in set(words)}\n",
     "COUNTS = {}\nfor W in words:\n    COUNTS[W] = COUNTS.get(W, 0) + 1\n",
     "COUNTS = defaultdict(int)\nfor W in words:\n    COUNTS[W] += 1\n"],
    ["SPLITS = {W: tuple(W) + ('</w>',) for W in COUNTS}\n",
     "SPLITS = {}\nfor W in COUNTS:\n    SPLITS[W] = list(W) + ['</w>']\n",
     "SPLITS = dict(zip(COUNTS, map(lambda W: [*W, '</w>'], COUNTS)))\n",
     "SPLITS = {}\nfor W in COUNTS:\n    S = [C for C in W]\n    S.append('</w>')\n    SPLITS[W] = S\n"],
    ["MERGES = []\n"],
    ["for _ in range(n_merges):\n", "while len(MERGES) < n_merges:\n",
     "STEP = 0\nwhile STEP < n_merges:\n    STEP += 1\n"],
    ["    PAIRS = Counter()\n    for W, S in SPLITS.items():\n        for A, B in zip(S, S[1:]):\n"
     "            PAIRS[A, B] += COUNTS[W]\n",
     "    PAIRS = {}\n    for W in SPLITS:\n        S = SPLITS[W]\n        for I in range(len(S) - 1):\n"
     "            KEY = (S[I], S[I + 1])\n            PAIRS[KEY] = PAIRS.get(KEY, 0) + COUNTS[W]\n",
     "    PAIRS = defaultdict(int)\n    for W, S in SPLITS.items():\n        for I, A in enumerate(S[:-1]):\n"
     "            PAIRS[(A, S[I + 1])] += COUNTS[W]\n",
     "    PAIRS = {}\n    for W, S in SPLITS.items():\n        I = 0\n        while I < len(S) - 1:\n"
     "            PAIRS[(S[I], S[I + 1])] = PAIRS.get((S[I], S[I + 1]), 0) + COUNTS[W]\n            I += 1\n"],
    ["    if not PAIRS:\n        break\n",
     "    if len(PAIRS) == 0:\n        return MERGES\n",
     "    if sum(PAIRS.values()) == 0:\n        break\n",
     "    if max(PAIRS.values(), default=0) <= 0:\n        break\n"],
    ["    BEST = max(PAIRS, key=PAIRS.get)\n",
     "    BEST = sorted(PAIRS.items(), key=lambda KV: (-KV[1], KV[0]))[0][0]\n",
     "    BEST, TOP = None, -1\n    for P, N in PAIRS.items():\n        if N > TOP:\n            BEST, TOP = P, N\n",
     "    TOP = max(PAIRS.values())\n    BEST = min(P for P in PAIRS if PAIRS[P] == TOP)\n"],
    ["    for W, S in SPLITS.items():\n        OUT, I = [], 0\n        while I < len(S):\n"
     "            if I + 1 < len(S) and (S[I], S[I + 1]) == BEST:\n                OUT.append(S[I] + S[I + 1])\n"
     "                I += 2\n            else:\n                OUT.append(S[I])\n                I += 1\n"
     "        SPLITS[W] = OUT\n",
     "    for W in list(SPLITS):\n        S, OUT, SKIP = SPLITS[W], [], False\n        for I in range(len(S)):\n"
     "            if SKIP:\n                SKIP = False\n                continue\n"
     "            if I < len(S) - 1 and S[I] == BEST[0] and S[I + 1] == BEST[1]:\n"
     "                OUT.append(BEST[0] + BEST[1])\n                SKIP = True\n            else:\n"
     "                OUT.append(S[I])\n        SPLITS[W] = OUT\n",
     "    JOINED = ''.join(BEST)\n    for W in SPLITS:\n        S = list(SPLITS[W])\n        I = len(S) - 2\n"
     "        while I >= 0:\n            if (S[I], S[I + 1]) == BEST:\n                S[I:I + 2] = [JOINED]\n"
     "            I -= 1\n        SPLITS[W] = S\n",
     "    NEW = {}\n    for W, S in SPLITS.items():\n        OUT = list(S[:1])\n        for P in S[1:]:\n"
     "            if (OUT[-1], P) == BEST:\n                OUT[-1] = OUT[-1] + P\n            else:\n"
     "                OUT.append(P)\n        NEW[W] = OUT\n    SPLITS = NEW\n"],
    ["    MERGES.append(BEST)\n", "    MERGES += [BEST]\n", "    MERGES.insert(len(MERGES), BEST)\n"],
]
TAIL = ["return MERGES\n", "return list(MERGES)\n", "return MERGES[:]\n"]
WORDS = ["counts", "freq", "tally", "splits", "symbols", "parts", "merges", "rules", "learned", "pairs", "stats",
         "bigrams", "best", "top", "winner", "word", "w", "token", "seq", "s", "a", "b", "left", "right", "i", "j",
         "pos", "out", "new", "skip", "jump", "key", "k", "n", "count", "p", "kv", "item", "joined", "glued", "step",
         "it", "x", "y", "cur", "res", "acc", "m", "ok", "done"]
PLACEHOLDERS = ["COUNTS", "SPLITS", "MERGES", "PAIRS", "BEST", "TOP", "STEP", "JOINED", "OUT", "SKIP", "KEY",
                "KV", "NEW", "W", "S", "A", "B", "C", "I", "P", "N"]
# habits a person keeps through a whole answer (two honest answers share each one half of the time)
HABITS = [("I + 1", "1 + I"), ("COUNTS[W]", "COUNTS.get(W, 0)"), ("for W in COUNTS:", "for W in COUNTS.keys():"),
          ("PAIRS.items()", "list(PAIRS.items())"), ("SPLITS.items()", "tuple(SPLITS.items())")]
SHORT = [
    "def stable_softmax(x):\n    {z} = x - x.max(dim=-1, keepdim=True).values\n    {e} = {z}.exp()\n"
    "    return {e} / {e}.sum(dim=-1, keepdim=True)\n",
    "def stable_softmax(x):\n    {z} = x - x.amax(dim=-1, keepdim=True)\n    {e} = torch.exp({z})\n"
    "    return {e} / {e}.sum(-1, keepdim=True)\n",
]


def _names(rng: random.Random) -> dict[str, str]:
    picked = rng.sample(WORDS, len(PLACEHOLDERS))
    return {p: f"{w}_{rng.randrange(10)}" if rng.random() < 0.3 else w for p, w in zip(PLACEHOLDERS, picked)}


def _fill(text: str, names: dict[str, str]) -> str:
    return re.sub(r"\b(" + "|".join(PLACEHOLDERS) + r")\b", lambda m: names[m.group(1)], text)


def render(choices: list[int], names: dict[str, str], disguised: bool = False, rng=None) -> str:
    """The answer made of the chosen way of writing each step, in the student's habits; ``disguised``: the list of merges made first
    and each merge recorded before the words are merged (both independent of what they move past),
    with comments added."""
    steps = [STEPS[i][c] for i, c in enumerate(choices[: len(STEPS)])]
    if disguised:
        steps = [steps[2], steps[0], steps[1], *steps[3:7], steps[8], steps[7]]
    body = "".join(steps) + TAIL[choices[len(STEPS)]]
    for (plain, other), habit in zip(HABITS, choices[len(STEPS) + 1 :]):
        body = body.replace(plain, other) if habit else body
    lines = []
    for line in body.splitlines():
        if disguised and rng.random() < 0.25 and line.strip():
            indent = " " * (4 + len(line) - len(line.lstrip()))
            lines.append(indent + "# " + rng.choice(["next", "see the lecture", "ok"]))
        lines.append("    " + line if line else "")
    return _fill(HEAD + "\n".join(lines) + "\n", names)


def honest(rng: random.Random) -> tuple[list[int], dict[str, str]]:
    """An honest student's choices (a way for each step and the tail, and their habits) and names."""
    return [rng.randrange(len(ways)) for ways in [*STEPS, TAIL, *HABITS]], _names(rng)


def synthetic_class(seed: int = 0, students: int = 30, copied: int = 5):
    """(``{student: long answer}``, ``{student: short answer}``, [the copied pairs, as sorted tuples])."""
    rng = random.Random(seed)
    names = [f"s{i:02d}" for i in range(students)]
    made = {name: honest(rng) for name in names}
    long = {name: render(*made[name]) for name in names}
    pairs = []
    for k in range(copied):
        source, copier = names[k], names[students - 1 - k]
        long[copier] = render(made[source][0], _names(rng), disguised=True, rng=rng)
        pairs.append(tuple(sorted((source, copier))))
    short = {}
    for name in names:
        z, e = rng.sample(["z", "shifted", "s", "y", "centred", "t"], 2)
        short[name] = rng.choice(SHORT).format(z=z, e=e)
    return long, short, pairs
