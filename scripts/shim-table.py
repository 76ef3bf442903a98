#!/usr/bin/env python3
"""Prints the README's list of the aoti_torch_* shims aotirt implements, from
the one table of them, include/aotirt/shim_table.h.

    python scripts/shim-table.py            # the list, as the README has it
    python scripts/shim-table.py --update   # rewrites that list in README.md

Reads the header as text: no build is needed. tests/shims/test_shim_table.py checks
that the README's list is this output, and that the table is what
libaotirt.so exports.
"""

import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "include", "aotirt", "shim_table.h")
README = os.path.join(REPO, "README.md")
BEGIN = "<!-- shim list: printed by scripts/shim-table.py from include/aotirt/shim_table.h -->"
END = "<!-- end of the shim list -->"
WIDTH = 100
ROW = re.compile(r'^AOTIRT_SHIM\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*"(\w+)"\s*\)\s*$')


def read_table(path=TABLE):
    """[(name, family, devices)] in the table's order."""
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        match = ROW.match(line.strip())
        if match:
            rows.append(match.groups())
        elif line.startswith("AOTIRT_SHIM("):
            sys.exit(f"{path}: cannot read the line {line.strip()!r}")
    return rows


def shim_list(rows):
    """The markdown list: one item per family and devices, in table order."""
    groups = {}
    for name, family, devices in rows:
        groups.setdefault((family, devices), []).append(name)
    lines = [BEGIN]
    for (family, devices), names in groups.items():
        where = {"any": "any device", "cpu": "CPU", "cuda": "CUDA"}[devices]
        line = f"- {family}, {where} ({len(names)}):"
        for i, name in enumerate(names):
            word = f" `{name}`" + ("," if i + 1 < len(names) else "")
            if len(line) + len(word) > WIDTH:
                lines.append(line)
                line = " "
            line += word
        lines.append(line)
    lines.append(END)
    return "\n".join(lines) + "\n"


def readme_list(path=README):
    """The list as README.md has it now, or None."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return None
    start = text.index(BEGIN)
    return text[start:text.index(END, start) + len(END)] + "\n"


def main(argv):
    listing = shim_list(read_table())
    if argv[1:] == ["--update"]:
        with open(README, encoding="utf-8") as f:
            text = f.read()
        current = readme_list()
        if current is None:
            sys.exit(f"{README} has no shim list (between {BEGIN!r} and {END!r})")
        with open(README, "w", encoding="utf-8") as f:
            f.write(text.replace(current, listing))
    elif argv[1:]:
        sys.exit(__doc__)
    else:
        sys.stdout.write(listing)


if __name__ == "__main__":
    main(sys.argv)
