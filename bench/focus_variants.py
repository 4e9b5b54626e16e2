"""Variants of the focused crawler, replayed offline (bench/focus_sim.py) on several beds.

    python bench/focus_variants.py tune,heldout v0,v1,v1+w4=2,v1+lr=0.6 [replays]

``v0``: links by anchor and URL (what the real crawl does); ``v1``: plus the text around each
link (``relevance.extract_page`` contexts, learned words of their own). ``+wK=X`` sets the
K-th starting weight of ``prioritizer.PRIOR_WEIGHTS`` (2 host, 3 domain, 4 section harvest);
``+lr=X`` the learning rate; ``+prior=A/B`` the harvest smoothing. Prints, per variant and bed,
the mean harvest at 100, 300 and 1,000 fetches and each topic's at 300. Choose on the tuning
beds (tune, heldout); look at the second bed only to check what was chosen.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import docbed
import focus_sim

from politecrawl.focus import prioritizer, strategy

BASE = prioritizer.PRIOR_WEIGHTS


def variant(name: str) -> tuple[tuple[float, ...], dict[str, Any], bool]:
    weights, options = list(BASE), {}
    for part in name.split("+")[1:]:
        key, value = part.split("=")
        if key.startswith("w"):
            weights[int(key[1:])] = float(value)
        elif key == "prior":
            a, b = value.split("/")
            options["prior"] = (float(a), float(b))
        else:
            options[key] = float(value)
    return tuple(weights), options, not name.startswith("v0")


def main() -> int:
    beds = sys.argv[1].split(",")
    names = sys.argv[2].split(",")
    replays = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    loaded = {b: focus_sim.load(b) for b in beds}
    original = prioritizer.Prioritizer
    for name in names:
        weights, options, contexts = variant(name)
        prioritizer.PRIOR_WEIGHTS = weights
        strategy.Prioritizer = functools.partial(original, **options)  # type: ignore[misc]
        for b in beds:
            rows = []
            for t in docbed.topics_for(b):
                runs = [
                    focus_sim.crawl(loaded[b], t, "focused", 1000, seed, contexts)
                    for seed in range(replays)
                ]
                hits = [r.hits(t) for r in runs]
                at = [sum(sum(h[:n]) / n for h in hits) / len(hits) for n in (100, 300, 1000)]
                rows.append((t.name, at))
            mean = [sum(r[1][i] for r in rows) / len(rows) for i in range(3)]
            cells = " ".join(f"{n}:{v[1]:.3f}" for n, v in rows)
            print(f"{name:20} {b:8} {mean[0]:.3f} {mean[1]:.3f} {mean[2]:.3f} | {cells}",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
