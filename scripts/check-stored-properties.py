#!/usr/bin/env python3
"""Counts the stored instance properties of every type in the daemon's modules and fails
when one holds more than MAX_STORED (issue 32: "no daemon type holds more than ~15 stored
properties"; a type with more state than that does more than one thing, and nobody reads
it in one sitting). Run by Tests/system/test_code_shape.py, so CI fails on a type that grows
past the bound; `scripts/check-stored-properties.py --list` prints every count.

Swift is parsed just enough for this: comments and string literals are blanked, braces give
the scopes, and a scope is a type when its header's last declaration keyword is class,
struct, actor or enum. In a type's own body, every `let`/`var` that is not static is
counted, except a `var` whose braces hold a getter (computed); `didSet`/`willSet` observers
and `lazy` are stored. Protocols and extensions hold no stored instance properties.
"""
import os
import re
import sys

# The bound (issue 32). A type may exceed it only when listed in EXCEPTIONS with the reason.
MAX_STORED = 15

# The daemon-side modules: what runs inside parleyd.
MODULES = [
    "Sources/ParleyDaemon",
    "Sources/ParleyNodeCore",
    "Sources/ParleyStore",
    "Sources/ParleyDiscovery",
    "Sources/ParleyCore",
    "Sources/parleyd",
]

# "Module/TypeName" -> why it may hold more than MAX_STORED. Keep it short; an entry that no
# longer exceeds the bound fails the check, so the list cannot outlive its reason.
EXCEPTIONS: dict[str, str] = {
    # Rows: one field per column of a table, read and written whole; splitting the value
    # would split the row. The lean schema (issue 32, the store's part) is where they shrink.
    "ParleyStore/StoredMessage": "a row of the message table, one field per column",
    "ParleyStore/FileTransferRecord": "a row of the file_transfer table, one field per column",
    # swift-argument-parser: each command-line option is one property of the command.
    "parleyd/ParleydCommand": "one property per parleyd command-line option (swift-argument-parser)",
}

DECL_KEYWORDS = re.compile(
    r"\b(class|struct|actor|enum|extension|protocol|func|init|deinit|subscript|var|let|if|guard|while|for|switch|case|do|catch|else|repeat|defer|get|set|didSet|willSet|return|in)\b"
)
TYPE_HEADER = re.compile(r"\b(class|struct|actor|enum)\s+([A-Za-z_]\w*)")


def blank(src: str) -> str:
    """The source with comments and string literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"' or (c == "#" and re.match(r'#+"', src[i:])):
            hashes = re.match(r"#*", src[i:]).group(0)
            k = i + len(hashes)
            multi = src.startswith('"""', k)
            quote = '"""' if multi else '"'
            close = quote + hashes
            j = k + len(quote)
            while j < n:
                if not hashes and src[j] == "\\":
                    if src.startswith("\\(", j):  # interpolation: skip balanced parens
                        depth, j = 1, j + 2
                        while j < n and depth:
                            depth += {"(": 1, ")": -1}.get(src[j], 0)
                            j += 1
                        continue
                    j += 2
                    continue
                if src.startswith(close, j):
                    j += len(close)
                    break
                j += 1
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1 : j - 1]) + '"')
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Scope:
    def __init__(self, kind: str, name: str = "", header: str = ""):
        self.kind = kind  # "type", "var", "other"
        self.name = name
        self.header = header
        self.body = []  # text directly in this scope (not in nested scopes)
        self.stored: list[str] = []


def scope_for(header: str) -> Scope:
    keywords = DECL_KEYWORDS.findall(header)
    last = keywords[-1] if keywords else ""
    if last in ("class", "struct", "actor", "enum"):
        m = list(TYPE_HEADER.finditer(header))
        if m:
            return Scope("type" if last != "enum" else "enum", m[-1].group(2), header)
    if last == "var":
        return Scope("var", header=header)
    return Scope("other", header=header)


def stored_in(body: str) -> list[str]:
    """The stored properties declared directly in a type body (nested scopes removed: a
    computed property's or observer's braces appear as `{}`)."""
    names = []
    # Declarations end at a newline at paren depth 0; join continuation lines.
    for m in re.finditer(
        r"(?m)^[ \t]*((?:@\w+(?:\([^)]*\))?\s+|(?:public|private|fileprivate|internal|package|open|final|lazy|weak|unowned|nonisolated|override|required|dynamic|mutating|nonmutating)(?:\([^)]*\))?\s+)*)(let|var)\s+([A-Za-z_]\w*)([^\n]*)",
        body,
    ):
        modifiers, kind, name, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        if re.search(r"\b(static|class)\b", modifiers):
            continue
        if kind == "var" and "{}" in rest and "=" not in rest.split("{}")[0]:
            # braces with no initializer before them: computed, unless they are observers
            if "@@observers@@" not in rest:
                continue
        names.append(name)
    return names


def types_in(path: str) -> list[tuple[str, list[str]]]:
    return types_in_source(open(path, encoding="utf-8").read())


def types_in_source(text: str) -> list[tuple[str, list[str]]]:
    """Each type declared in `text` (nested ones too), with its stored properties."""
    src = blank(text)
    stack = [Scope("file")]
    header_start = 0
    found = []
    i = 0
    for i, c in enumerate(src):
        if c == "{":
            header = src[header_start:i]
            # the header is the text since the last brace, from its last declaration line on
            s = scope_for(header.split(";")[-1])
            stack[-1].body.append(header)
            stack.append(s)
            header_start = i + 1
        elif c == "}":
            s = stack.pop() if len(stack) > 1 else stack[-1]
            s.body.append(src[header_start:i])
            inner = "".join(s.body)
            parent = stack[-1]
            if s.kind == "var":
                # a var's braces: observers keep it stored; a getter makes it computed
                mark = "{@@observers@@}" if re.search(r"\b(didSet|willSet)\b", inner) else "{}"
            else:
                mark = "{}"
            parent.body.append(mark)
            if s.kind in ("type", "enum"):
                found.append((s.name, stored_in(inner)))
            header_start = i + 1
    return found


def count(root: str) -> list[tuple[str, str, int, list[str]]]:
    rows = []
    for module in MODULES:
        base = os.path.join(root, module)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith(".swift"):
                    continue
                path = os.path.join(dirpath, f)
                for name, props in types_in(path):
                    rows.append((module.split("/")[-1] + "/" + name, os.path.relpath(path, root), len(props), props))
    return rows


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = count(root)
    if "--list" in sys.argv:
        for key, path, n, props in sorted(rows, key=lambda r: -r[2]):
            print(f"{n:3d} {key} ({path}): {', '.join(props)}")
    over = [r for r in rows if r[2] > MAX_STORED and r[0] not in EXCEPTIONS]
    stale = [k for k in EXCEPTIONS if not any(r[0] == k and r[2] > MAX_STORED for r in rows)]
    for key, path, n, props in over:
        print(f"{path}: {key} holds {n} stored properties (at most {MAX_STORED}): {', '.join(props)}."
              " Move a concern and its state into a type of its own.", file=sys.stderr)
    for key in stale:
        print(f"EXCEPTIONS lists {key}, which no longer holds more than {MAX_STORED}: remove it.", file=sys.stderr)
    return 1 if over or stale else 0


if __name__ == "__main__":
    sys.exit(main())
