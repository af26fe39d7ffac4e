#!/usr/bin/env bash
# make-dist.sh VERSION OUTDIR: writes OUTDIR/parley-VERSION.tar.gz, Parley's sources plus
# the sources of every Swift package it depends on, so that `make deb` (or `make release`)
# works on a machine with the Swift toolchain and Debian's build packages but no internet
# (docs/INSTALL.md, "Building without internet"). `make dist` runs it.
#
# The tarball holds:
#   - every file git tracks, as it is in the working tree (so: commit first to ship a
#     known state);
#   - vendor/<package>/: each package pinned in Package.resolved, at its pinned revision
#     (`git archive` of the checkout SwiftPM resolved: no .git, no history);
#   - vendor/Package.resolved: which version and revision of each package that is;
#   - a Package.swift whose dependencies are `.package(path: "vendor/<package>")`. A path
#     dependency of the root package wins over the same package required by URL anywhere
#     in the graph, so SwiftPM resolves the whole graph from vendor/ and fetches nothing.
#
# Tests/system/test_package.py unpacks it in an empty directory and resolves and builds
# with networking disabled (unshare -n) and no git URL rewriting.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: make-dist.sh VERSION OUTDIR}
out=${2:?usage: make-dist.sh VERSION OUTDIR}
[[ "$version" =~ ^[0-9A-Za-z.+~-]+$ ]] || { echo "make-dist: bad version '$version'" >&2; exit 2; }
name="parley-$version"
swift=${SWIFT:-swift}

command -v git >/dev/null || { echo "make-dist: needs git" >&2; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "make-dist: run it in Parley's git checkout" >&2; exit 1; }

# Resolve (fetches what is missing; a no-op when .build/checkouts is current).
"$swift" package resolve >&2

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/vendor"

# The project: tracked files that exist in the working tree.
git ls-files -z --cached | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$stage/$name"

# The dependencies, from Package.resolved (version 2 or 3: pins of identity, location, state).
pins=$(python3 - <<'PY'
import json, sys
d = json.load(open("Package.resolved"))
for p in d["pins"]:
    loc = p["location"].rstrip("/")
    base = loc.rsplit("/", 1)[-1]
    if base.endswith(".git"):
        base = base[:-4]
    print(p["identity"], base, p["state"]["revision"], p["state"].get("version") or p["state"].get("branch") or "-")
PY
)
[ -n "$pins" ] || { echo "make-dist: Package.resolved has no pins" >&2; exit 1; }
deps=""
while read -r identity dir revision pinned; do
  checkout=".build/checkouts/$dir"
  [ -d "$checkout" ] || { echo "make-dist: $identity: no checkout at $checkout (swift package resolve failed?)" >&2; exit 1; }
  head=$(git -C "$checkout" rev-parse HEAD)
  [ "$head" = "$revision" ] || { echo "make-dist: $checkout is at $head, Package.resolved pins $revision: run swift package resolve" >&2; exit 1; }
  git -C "$checkout" archive --format=tar --prefix="$dir/" "$revision" | tar -xf - -C "$stage/$name/vendor"
  deps+="        .package(path: \"vendor/$dir\"),  // $identity $pinned ($revision)"$'\n'
done <<< "$pins"
cp Package.resolved "$stage/$name/vendor/Package.resolved"

cat >> "$stage/$name/Package.swift" <<EOF

// ---- Added by scripts/make-dist.sh: this is the offline source tarball ----------------
// Every dependency's sources are in vendor/ (vendor/Package.resolved: the versions). A path
// dependency of the root package wins over the same package required by URL anywhere in
// the graph, so SwiftPM builds from vendor/ and never needs the network.
package.dependencies = [
$deps]
EOF

mkdir -p "$out"
# Reproducible: sorted, owned by root, every file dated at the last commit.
mtime=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$stage" -cf - "$name" \
  | gzip -n > "$out/$name.tar.gz.tmp"
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
echo "$out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1), $(wc -l <<< "$pins") Swift packages in vendor/)"
