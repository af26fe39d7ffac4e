#!/usr/bin/env bash
# Generates bash, zsh and fish completions for `parley` from the built binary
# (swift-argument-parser's --generate-completion-script) and installs them.
#   scripts/install-completions.sh PARLEY_BIN BASH_FILE ZSH_FILE FISH_FILE
# Fails with a clear message when the binary is missing or does not produce a
# completion script, rather than installing garbage.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 PARLEY_BIN BASH_FILE ZSH_FILE FISH_FILE" >&2; exit 2; }
bin=$1
declare -A target=([bash]=$2 [zsh]=$3 [fish]=$4)
# A line each shell's generated script must contain.
declare -A marker=([bash]='complete -' [zsh]='#compdef' [fish]='complete -c')

if [ ! -x "$bin" ]; then
  echo "install-completions: $bin is missing; run 'make release' first (or set PARLEY_BIN=...)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for shell in bash zsh fish; do
  if ! "$bin" --generate-completion-script "$shell" >"$tmp/$shell" 2>"$tmp/$shell.err"; then
    echo "install-completions: '$bin --generate-completion-script $shell' failed:" >&2
    cat "$tmp/$shell.err" >&2
    exit 1
  fi
  if ! grep -qF -- "${marker[$shell]}" "$tmp/$shell"; then
    echo "install-completions: '$bin --generate-completion-script $shell' did not print a $shell completion script" >&2
    echo "  (is parley built with swift-argument-parser?)" >&2
    exit 1
  fi
done
for shell in bash zsh fish; do
  install -d "$(dirname "${target[$shell]}")"
  install -m 0644 "$tmp/$shell" "${target[$shell]}"
done
